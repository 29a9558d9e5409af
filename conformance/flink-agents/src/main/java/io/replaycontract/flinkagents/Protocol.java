package io.replaycontract.flinkagents;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintStream;
import java.util.Map;

/**
 * The suite's side of the line protocol (docs/protocol.md): one JSON object per line on
 * standard input and output. Calls made while a request is handled get exactly one answer;
 * an answer {@code {"crashed": true}} ends the step with a {@link Crash}.
 */
final class Protocol {

    static final ObjectMapper JSON = new ObjectMapper();

    private final BufferedReader in;
    private final PrintStream out;
    private boolean crashed;
    private boolean dieOnCrash;

    Protocol(BufferedReader in, PrintStream out) {
        this.in = in;
        this.out = out;
    }

    /** The suite answered a call with {@code crashed}: the step stops, in-memory state is lost. */
    static final class Crash extends RuntimeException {
        Crash() {
            super("the suite crashed the step here", null, false, false);
        }
    }

    void send(JsonNode message) {
        out.println(message.toString());
        out.flush();
    }

    /** The next line from the suite, or null when its standard input closed. */
    JsonNode read() throws IOException {
        String line = in.readLine();
        if (line == null) {
            return null;
        }
        return JSON.readTree(line);
    }

    /** Whether the current step has been crashed by the suite. */
    boolean crashed() {
        return crashed;
    }

    void beginStep() {
        crashed = false;
    }

    /**
     * Make a crash end this JVM at once, as a crashed TaskManager ends: the final line is
     * sent and nothing else of the step runs (a worker of the fresh-JVM mode does this).
     */
    void dieOnCrash() {
        dieOnCrash = true;
    }

    /** Send a call and return its answer; a {@code crashed} answer throws {@link Crash}. */
    JsonNode call(ObjectNode message) {
        if (crashed) {
            // A call after a crash is a breach of the protocol: stop the step instead.
            throw new Crash();
        }
        send(message);
        JsonNode answer;
        try {
            answer = read();
        } catch (IOException e) {
            throw new IllegalStateException("cannot read the suite's answer: " + e.getMessage(), e);
        }
        if (answer == null) {
            throw new IllegalStateException("the suite closed its end in the middle of a call");
        }
        if (answer.path("crashed").asBoolean(false)) {
            crashed = true;
            if (dieOnCrash) {
                send(JSON.createObjectNode().put("crashed", true));
                Runtime.getRuntime().halt(0);
            }
            throw new Crash();
        }
        return answer;
    }

    /** Report a trace event: a decision or a durable write that already happened. */
    void report(String event, Map<String, Object> fields) {
        ObjectNode body = JSON.createObjectNode();
        body.put("event", event);
        for (Map.Entry<String, Object> field : fields.entrySet()) {
            body.set(field.getKey(), JSON.valueToTree(field.getValue()));
        }
        ObjectNode message = JSON.createObjectNode();
        message.put("call", "report");
        message.set("event", body);
        call(message);
    }
}

package io.replaycontract.flinkagents;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The adapter's program: it speaks the suite's process protocol and runs each scenario
 * against the real Flink Agents operator.
 *
 * <pre>
 * java -cp ... io.replaycontract.flinkagents.Main --backend kafka|fluss --bootstrap HOST:PORT
 *      --work FOLDER [--restore same-jvm|fresh-jvm] [--label TEXT]
 * </pre>
 *
 * <p>With {@code --restore same-jvm} a restore builds a new harness in this JVM from the
 * last checkpoint. With {@code fresh-jvm} every incarnation of the operator is a JVM of its
 * own (a worker this program starts): a crash ends the worker, and a restore starts a new
 * one that reads the last checkpoint from a file, as after a TaskManager failover.
 */
public final class Main {

    private Main() {}

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = parse(argv);
        // Standard output carries protocol lines only: anything else printed goes to stderr.
        PrintStream protocolOut =
                new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Protocol protocol = new Protocol(in, protocolOut);
        String restore = args.getOrDefault("restore", "same-jvm");
        String backend = require(args, "backend");
        String label = args.getOrDefault("label", "Apache Flink Agents");
        // --bug skip-reuse: a deliberately broken adapter that does not report reuses (the
        // suite's own tests require it to fail).
        Session.bug = args.getOrDefault("bug", "");
        protocol.send(hello(label + " (" + backend + ", restore " + restore.replace('-', ' ') + ")"));
        if (args.containsKey("worker")) {
            protocol.dieOnCrash();
            new Incarnations(protocol, args).serve(true);
        } else if (restore.equals("fresh-jvm")) {
            new Front(protocol, argv, args).serve();
        } else if (restore.equals("same-jvm")) {
            new Incarnations(protocol, args).serve(false);
        } else {
            throw new IllegalArgumentException("--restore is same-jvm or fresh-jvm, not " + restore);
        }
    }

    static ObjectNode hello(String name) {
        ObjectNode hello = Protocol.JSON.createObjectNode();
        hello.put("protocol", "replay-contract/1");
        hello.put("name", name);
        ObjectNode caps = hello.putObject("capabilities");
        caps.putArray("contracts").add("seqnum").add("ordered");
        caps.put("crash_points", true);
        caps.put("non_replayable", true);
        caps.put("rescaling", false);
        return hello;
    }

    /** A scenario's folder and its topic or table: the run (the front's pid) and its number. */
    static String storeName(String run, int scenario) {
        return "rc_fa_" + run + "_" + scenario;
    }

    static Map<String, String> parse(String[] argv) {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i < argv.length; i++) {
            if (!argv[i].startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument " + argv[i]);
            }
            String name = argv[i].substring(2);
            if (name.equals("worker")) {
                args.put(name, "true");
            } else if (i + 1 < argv.length) {
                args.put(name, argv[++i]);
            } else {
                throw new IllegalArgumentException("--" + name + " needs a value");
            }
        }
        return args;
    }

    static String require(Map<String, String> args, String name) {
        String value = args.get(name);
        if (value == null) {
            throw new IllegalArgumentException("--" + name + " is required");
        }
        return value;
    }

    /** One line for the suite: the message, and the innermost cause when it says more. */
    static String oneLine(Throwable t) {
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String text = t.getClass().getSimpleName() + ": " + t.getMessage();
        if (root != t) {
            text += " (cause: " + root.getClass().getSimpleName() + ": " + root.getMessage() + ")";
        }
        return text.replace('\n', ' ');
    }

    /** Scenarios handled in this JVM: every request of the protocol. */
    static final class Incarnations {
        private final Protocol protocol;
        private final Map<String, String> args;
        private final Path work;
        private final String run;
        private int scenario;
        private Session session;

        Incarnations(Protocol protocol, Map<String, String> args) throws Exception {
            this.protocol = protocol;
            this.args = args;
            this.work = Path.of(require(args, "work"));
            this.run = args.getOrDefault("run", Long.toString(ProcessHandle.current().pid()));
            this.scenario = Integer.parseInt(args.getOrDefault("scenario", "0"));
            if (args.containsKey("resume")) {
                session = Session.resume(protocol, Path.of(args.get("resume")));
            }
        }

        void serve(boolean worker) throws Exception {
            JsonNode request;
            while ((request = protocol.read()) != null) {
                protocol.beginStep();
                String op = request.path("op").asText();
                try {
                    JsonNode done = handle(op, request);
                    ObjectNode line = Protocol.JSON.createObjectNode();
                    line.set("done", done);
                    protocol.send(line);
                } catch (Throwable t) {
                    if (protocol.crashed()) {
                        if (session != null) {
                            session.crash();
                        }
                        ObjectNode line = Protocol.JSON.createObjectNode();
                        line.put("crashed", true);
                        protocol.send(line);
                        if (worker) {
                            Runtime.getRuntime().halt(0);
                        }
                    } else {
                        t.printStackTrace();
                        ObjectNode line = Protocol.JSON.createObjectNode();
                        line.put("error", oneLine(t));
                        protocol.send(line);
                    }
                }
                if (worker && op.equals("close")) {
                    Runtime.getRuntime().halt(0);
                }
            }
        }

        private JsonNode handle(String op, JsonNode request) throws Exception {
            if (!op.equals("open") && session == null) {
                throw new IllegalStateException(op + " before open");
            }
            switch (op) {
                case "open":
                    if (session != null) {
                        session.close();
                    }
                    String name = storeName(run, scenario);
                    StoreConfig store =
                            new StoreConfig(require(args, "backend"), require(args, "bootstrap"), name);
                    session = Session.open(protocol, work.resolve(name), (ObjectNode) request, store);
                    scenario += 1;
                    return NullNode.getInstance();
                case "deliver":
                    session.deliver(request.path("record"));
                    return NullNode.getInstance();
                case "checkpoint":
                    ObjectNode cp = Protocol.JSON.createObjectNode();
                    cp.put("checkpoint", session.checkpoint());
                    return cp;
                case "crash":
                    session.crash();
                    return NullNode.getInstance();
                case "restore":
                    session.restore();
                    return NullNode.getInstance();
                case "end":
                    ObjectNode end = Protocol.JSON.createObjectNode();
                    end.set("memory", session.end());
                    return end;
                case "close":
                    session.close();
                    session = null;
                    return NullNode.getInstance();
                default:
                    throw new IllegalArgumentException("unknown request " + op);
            }
        }
    }

    /**
     * The program the suite talks to when every incarnation is a JVM of its own: it relays
     * each request to the current worker, and the worker's calls and final line back.
     */
    static final class Front {
        private final Protocol protocol;
        private final String[] argv;
        private final Path work;
        private final String run = Long.toString(ProcessHandle.current().pid());
        private int scenario;
        private Process worker;
        private BufferedReader fromWorker;
        private PrintStream toWorker;
        private Path folder;

        Front(Protocol protocol, String[] argv, Map<String, String> args) {
            this.protocol = protocol;
            this.argv = argv;
            this.work = Path.of(require(args, "work"));
        }

        void serve() throws Exception {
            JsonNode request;
            while ((request = protocol.read()) != null) {
                String op = request.path("op").asText();
                try {
                    switch (op) {
                        case "open":
                            stop();
                            folder = work.resolve(storeName(run, scenario));
                            start(List.of("--scenario", Integer.toString(scenario)));
                            scenario += 1;
                            relay(request);
                            break;
                        case "crash":
                            stop();
                            done();
                            break;
                        case "restore":
                            stop();
                            start(List.of("--resume", folder.toString()));
                            relay(request);
                            break;
                        case "close":
                            if (worker == null && folder != null && Files.exists(folder)) {
                                start(List.of("--resume", folder.toString()));
                            }
                            if (worker != null) {
                                relay(request);
                            } else {
                                done();
                            }
                            stop();
                            break;
                        default:
                            if (worker == null) {
                                throw new IllegalStateException(op + " with no running incarnation");
                            }
                            relay(request);
                    }
                } catch (Exception e) {
                    e.printStackTrace();
                    stop();
                    ObjectNode line = Protocol.JSON.createObjectNode();
                    line.put("error", oneLine(e));
                    protocol.send(line);
                }
            }
            stop();
        }

        private void done() {
            ObjectNode line = Protocol.JSON.createObjectNode();
            line.set("done", NullNode.getInstance());
            protocol.send(line);
        }

        private void start(List<String> extra) throws Exception {
            List<String> command = new ArrayList<>();
            command.add(ProcessHandle.current().info().command().orElse("java"));
            command.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
            command.add("-cp");
            command.add(System.getProperty("java.class.path"));
            command.add(Main.class.getName());
            command.addAll(List.of(argv));
            command.addAll(List.of("--worker", "--run", run));
            command.addAll(extra);
            worker = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            fromWorker =
                    new BufferedReader(
                            new InputStreamReader(worker.getInputStream(), StandardCharsets.UTF_8));
            toWorker = new PrintStream(worker.getOutputStream(), true, StandardCharsets.UTF_8);
            String hello = fromWorker.readLine();
            if (hello == null) {
                throw new IllegalStateException(
                        "the worker JVM exited before its first line (status " + worker.waitFor() + ")");
            }
        }

        /** Send one request to the worker and pass lines both ways until its final line. */
        private void relay(JsonNode request) throws Exception {
            toWorker.println(request.toString());
            toWorker.flush();
            while (true) {
                String line = fromWorker.readLine();
                if (line == null) {
                    int status = worker.waitFor();
                    worker = null;
                    throw new IllegalStateException("the worker JVM exited with status " + status);
                }
                JsonNode message = Protocol.JSON.readTree(line);
                protocol.send(message);
                if (!message.has("call")) {
                    if (message.path("crashed").asBoolean(false)) {
                        worker.waitFor();
                        worker = null;
                    }
                    return;
                }
                JsonNode answer = protocol.read();
                if (answer == null) {
                    stop();
                    return;
                }
                toWorker.println(answer.toString());
                toWorker.flush();
            }
        }

        private void stop() throws InterruptedException {
            if (worker != null) {
                worker.destroyForcibly();
                worker.waitFor();
                worker = null;
            }
        }
    }
}

package io.replaycontract.flinkagents;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.flink.agents.api.Event;
import org.apache.flink.agents.api.OutputEvent;
import org.apache.flink.agents.api.context.DurableCallable;
import org.apache.flink.agents.api.context.MemoryObject;
import org.apache.flink.agents.api.context.RunnerContext;
import org.apache.flink.agents.plan.AgentConfiguration;
import org.apache.flink.agents.plan.AgentPlan;
import org.apache.flink.agents.plan.actions.Action;
import org.apache.flink.agents.runtime.actionstate.ActionState;
import org.apache.flink.agents.runtime.actionstate.ActionStateUtil;
import org.apache.flink.agents.runtime.memory.MemoryObjectImpl;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.tasks.mailbox.Mail;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailbox;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.streaming.util.OperatorSnapshotUtil;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * One scenario against the real operator: the harness of the current incarnation, the
 * checkpoints taken so far, and what the adapter has observed (which completion each saved
 * state is, by the order of saves). The observations, the open request and the last
 * checkpoint are kept in the scenario's folder, so that a fresh JVM can take over after a
 * crash exactly where a restore in the same JVM would.
 */
final class Session {

    private static final String SEQUENCE_STATE = "messageSequenceNumber";
    private static final String SHORT_TERM_MEMORY = "shortTermMemory";
    private static final String CHECKPOINT_FILE = "checkpoint.bin";
    private static final String SESSION_FILE = "session.json";

    private final Protocol protocol;
    private final Path folder;
    private final ObjectNode opening;
    private final Map<String, JsonNode> actions = new LinkedHashMap<>();
    private final AgentPlan plan;
    private final StoreConfig store;

    /** Saved state key (upstream's key of a completed action state) to completion number. */
    private final Map<String, Integer> completions = new TreeMap<>();
    /** A key's text (as upstream writes it into a state key) to the key itself. */
    private final Map<String, Object> keys = new TreeMap<>();
    private int checkpoints;

    private KeyedOneInputStreamOperatorTestHarness<Object, Map<String, Object>, Object> harness;
    private ObservingStore observed;
    private OperatorSubtaskState lastCheckpoint;
    private List<Object> reads = List.of();
    /** A deliberately broken adapter, for the suite's own tests: {@code skip-reuse}. */
    static String bug = "";

    private Session(Protocol protocol, Path folder, ObjectNode opening, StoreConfig store)
            throws Exception {
        this.protocol = protocol;
        this.folder = folder;
        this.opening = opening;
        this.store = store;
        for (JsonNode action : opening.path("agent").path("actions")) {
            actions.put(action.path("name").asText(), action);
        }
        AgentConfiguration config = store.configuration();
        this.plan = ScenarioAgent.plan(opening.path("agent"), config);
        ScenarioAgent.session = this;
    }

    /** A new scenario: an empty operator, and its empty state taken as checkpoint 0. */
    static Session open(Protocol protocol, Path folder, ObjectNode opening, StoreConfig store)
            throws Exception {
        Files.createDirectories(folder);
        Session session = new Session(protocol, folder, opening, store);
        session.harness = session.incarnation(null);
        session.lastCheckpoint = session.harness.snapshot(0L, 0L);
        session.keep(true);
        return session;
    }

    /** The scenario a crashed JVM left behind, taken over by this JVM for its restore. */
    static Session resume(Protocol protocol, Path folder) throws Exception {
        ObjectNode kept = (ObjectNode) Protocol.JSON.readTree(folder.resolve(SESSION_FILE).toFile());
        StoreConfig store = StoreConfig.fromJson(kept.path("store"));
        Session session = new Session(protocol, folder, (ObjectNode) kept.path("open"), store);
        session.checkpoints = kept.path("checkpoints").asInt();
        kept.path("completions").fields().forEachRemaining(
                e -> session.completions.put(e.getKey(), e.getValue().asInt()));
        kept.path("keys").fields().forEachRemaining(
                e -> session.keys.put(e.getKey(), Records.value(e.getValue())));
        session.lastCheckpoint =
                OperatorSnapshotUtil.readStateHandle(folder.resolve(CHECKPOINT_FILE).toString());
        return session;
    }

    // --- requests ------------------------------------------------------------------------

    void deliver(JsonNode recordNode) throws Exception {
        Map<String, Object> record = Records.fromJson(recordNode);
        Object key = record.get("key");
        keys.put(String.valueOf(key), key);
        harness.processElement(new StreamRecord<>(record));
        Long position = keyed(key, backend -> sequence(backend).value());
        Map<String, Object> accept = new LinkedHashMap<>();
        accept.put("key", key);
        accept.put("position", position);
        accept.put("identity", record.get("id"));
        accept.put("digest", record.get("digest"));
        protocol.report("accept", accept);
        drain();
    }

    int checkpoint() throws Exception {
        checkpoints += 1;
        lastCheckpoint = harness.snapshot(checkpoints, checkpoints);
        harness.notifyOfCompletedCheckpoint(checkpoints);
        keep(true);
        return checkpoints;
    }

    /** Drop the incarnation without a snapshot, as a failed task is dropped. */
    void crash() {
        if (harness != null) {
            try {
                harness.close();
            } catch (Throwable ignored) {
                // A failed task's operator may not close cleanly; nothing of it is kept.
            }
            harness = null;
        }
    }

    void restore() throws Exception {
        crash();
        harness = incarnation(lastCheckpoint);
    }

    ArrayNode end() throws Exception {
        drain();
        ArrayNode memories = Protocol.JSON.createArrayNode();
        KeyedStateBackend<Object> backend = backend();
        List<Object> seen;
        try (Stream<Object> stream = backend.getKeys(SEQUENCE_STATE, VoidNamespace.INSTANCE)) {
            seen = stream.collect(Collectors.toList());
        }
        for (Object key : seen) {
            Map<String, Object> memory = keyed(key, this::memory);
            ObjectNode entry = Protocol.JSON.createObjectNode();
            entry.set("key", Protocol.JSON.valueToTree(key));
            entry.set("memory", Protocol.JSON.valueToTree(memory));
            memories.add(entry);
        }
        return memories;
    }

    void close() {
        crash();
        store.release();
    }

    // --- what the operator does, seen from inside ----------------------------------------

    /** One scenario action, run by the operator as user code. */
    void runAction(Event event, RunnerContext context) throws Exception {
        String name = String.valueOf(context.getActionConfig().get(ScenarioAgent.ACTION));
        JsonNode spec = actions.get(name);
        Map<String, Object> record = ScenarioAgent.record(event);
        List<String> path = ScenarioAgent.path(event, name);
        MemoryObject memory = context.getShortTermMemory();
        List<Object> values = new ArrayList<>();
        for (JsonNode field : spec.path("reads")) {
            String f = field.asText();
            values.add(memory.isExist(f) ? memory.get(f).getValue() : null);
        }
        reads = values;
        long position = observed.lastLookup();
        ArrayNode results = Protocol.JSON.createArrayNode();
        int index = 0;
        for (JsonNode toolNode : spec.path("tools")) {
            String tool = toolNode.asText();
            String result = context.durableExecute(
                    new ToolCall(tool + "#" + index++, () -> callTool(record, position, path, tool, values)));
            results.add(Protocol.JSON.createArrayNode().add(tool).add(result));
        }
        ObjectNode execute = Protocol.JSON.createObjectNode();
        execute.put("call", "execute");
        execute.put("action", name);
        execute.set("record", Protocol.JSON.valueToTree(record));
        execute.set("path", Protocol.JSON.valueToTree(path));
        execute.set("reads", Protocol.JSON.valueToTree(values));
        execute.set("tool_results", results);
        JsonNode done = protocol.call(execute);
        for (JsonNode write : done.path("writes")) {
            memory.set(write.get(0).asText(), Records.value(write.get(1)));
        }
        for (JsonNode value : done.path("outputs")) {
            Map<String, Object> output = new LinkedHashMap<>();
            output.put("key", record.get("key"));
            output.put("identity", record.get("id"));
            output.put("path", path);
            output.put("value", Records.value(value));
            context.sendEvent(new OutputEvent(output));
        }
        for (JsonNode emitted : spec.path("emits")) {
            context.sendEvent(ScenarioAgent.followUp(emitted.asText(), record, path));
        }
    }

    private String callTool(
            Map<String, Object> record, long position, List<String> path, String tool, List<Object> values) {
        ObjectNode call = Protocol.JSON.createObjectNode();
        call.put("call", "tool");
        call.set("key", Protocol.JSON.valueToTree(record.get("key")));
        call.put("position", position);
        call.set("record", Protocol.JSON.valueToTree(record));
        call.set("path", Protocol.JSON.valueToTree(path));
        call.put("tool", tool);
        call.set("reads", Protocol.JSON.valueToTree(values));
        return protocol.call(call).path("result").asText();
    }

    /** An output the operator emitted downstream. */
    @SuppressWarnings("unchecked")
    void emitted(Object value) {
        if (!(value instanceof Map)) {
            throw new IllegalStateException("the operator emitted an output the agent never made: " + value);
        }
        ObjectNode call = Protocol.JSON.createObjectNode();
        call.put("call", "output");
        ((Map<String, Object>) value).forEach((k, v) -> call.set(k, Protocol.JSON.valueToTree(v)));
        protocol.call(call);
    }

    /** The store wrote a completed action state durably. */
    void saved(Object key, long position, Action action, Event event) throws Exception {
        String stateKey = ActionStateUtil.generateKey(key, position, action, event);
        int number = completions.size();
        completions.put(stateKey, number);
        keep(false);
        Map<String, Object> save = completionEvent(key, position, action, event, number, reads);
        save.put("order", false);
        protocol.report("save", save);
    }

    /** A lookup served a completed action state: the action is not run. */
    void reused(Object key, long position, Action action, Event event) throws Exception {
        String stateKey = ActionStateUtil.generateKey(key, position, action, event);
        Integer number = completions.get(stateKey);
        if (number == null) {
            throw new IllegalStateException("the store served a completion it never saved: " + stateKey);
        }
        JsonNode spec = actions.get(action.getName());
        Map<String, Object> memory = keyed(key, this::memory);
        List<Object> now = new ArrayList<>();
        for (JsonNode field : spec.path("reads")) {
            now.add(memory.get(field.asText()));
        }
        if (!bug.equals("skip-reuse")) {
            protocol.report("reuse", completionEvent(key, position, action, event, number, now));
        }
    }

    /** A lookup dropped states from the store's view: report the saved ones, per key. */
    void dropped(long position, Map<String, ActionState> states) {
        Map<String, TreeSet<Integer>> byKey = new TreeMap<>();
        for (Map.Entry<String, ActionState> entry : states.entrySet()) {
            Integer number = completions.get(entry.getKey());
            if (number == null || !entry.getValue().isCompleted()) {
                continue;
            }
            String keyText = ActionStateUtil.parseKey(entry.getKey()).get(0);
            byKey.computeIfAbsent(keyText, k -> new TreeSet<>()).add(number);
        }
        for (Map.Entry<String, TreeSet<Integer>> entry : byKey.entrySet()) {
            Map<String, Object> invalidate = new LinkedHashMap<>();
            invalidate.put("key", keys.getOrDefault(entry.getKey(), entry.getKey()));
            invalidate.put("position", position);
            invalidate.put("completions", new ArrayList<>(entry.getValue()));
            invalidate.put("durable", false);
            protocol.report("invalidate", invalidate);
        }
    }

    private static Map<String, Object> completionEvent(
            Object key, long position, Action action, Event event, int number, List<Object> reads) {
        Map<String, Object> record = ScenarioAgent.record(event);
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("key", key);
        fields.put("position", position);
        fields.put("identity", record.get("id"));
        fields.put("digest", record.get("digest"));
        fields.put("path", ScenarioAgent.path(event, action.getName()));
        fields.put("completion", number);
        fields.put("reads", reads);
        return fields;
    }

    // --- the harness -----------------------------------------------------------------------

    private KeyedOneInputStreamOperatorTestHarness<Object, Map<String, Object>, Object> incarnation(
            OperatorSubtaskState state) throws Exception {
        AdapterFactory factory = new AdapterFactory(plan, this, store);
        KeyedOneInputStreamOperatorTestHarness<Object, Map<String, Object>, Object> h =
                new KeyedOneInputStreamOperatorTestHarness<>(
                        factory, record -> record.get("key"), TypeInformation.of(Object.class));
        if (state != null) {
            h.initializeState(state);
        }
        h.open();
        harness = h;
        drain();
        return h;
    }

    boolean crashed() {
        return protocol.crashed();
    }

    void observe(ObservingStore store) {
        this.observed = store;
    }

    /** Run every mail the operator queued, until it has nothing left to do. */
    private void drain() throws Exception {
        TaskMailbox mailbox = harness.getTaskMailbox();
        while (true) {
            Optional<Mail> mail = mailbox.tryTake(TaskMailbox.MIN_PRIORITY);
            if (mail.isEmpty()) {
                return;
            }
            mail.get().run();
        }
    }

    @SuppressWarnings("unchecked")
    private KeyedStateBackend<Object> backend() {
        AbstractStreamOperator<Object> operator = harness.getOperator();
        return (KeyedStateBackend<Object>) operator.getKeyedStateBackend();
    }

    private interface KeyedRead<T> {
        T read(KeyedStateBackend<Object> backend) throws Exception;
    }

    private <T> T keyed(Object key, KeyedRead<T> read) throws Exception {
        KeyedStateBackend<Object> backend = backend();
        Object previous = backend.getCurrentKey();
        backend.setCurrentKey(key);
        try {
            return read.read(backend);
        } finally {
            if (previous != null) {
                backend.setCurrentKey(previous);
            }
        }
    }

    private static ValueState<Long> sequence(KeyedStateBackend<Object> backend) throws Exception {
        return backend.getPartitionedState(
                VoidNamespace.INSTANCE,
                VoidNamespaceSerializer.INSTANCE,
                new ValueStateDescriptor<>(SEQUENCE_STATE, Long.class));
    }

    private Map<String, Object> memory(KeyedStateBackend<Object> backend) throws Exception {
        MapState<String, MemoryObjectImpl.MemoryItem> state =
                backend.getPartitionedState(
                        VoidNamespace.INSTANCE,
                        VoidNamespaceSerializer.INSTANCE,
                        new MapStateDescriptor<>(
                                SHORT_TERM_MEMORY,
                                TypeInformation.of(String.class),
                                TypeInformation.of(MemoryObjectImpl.MemoryItem.class)));
        Map<String, Object> memory = new TreeMap<>();
        Iterable<Map.Entry<String, MemoryObjectImpl.MemoryItem>> entries = state.entries();
        if (entries == null) {
            return memory;
        }
        Iterator<Map.Entry<String, MemoryObjectImpl.MemoryItem>> it = entries.iterator();
        while (it.hasNext()) {
            Map.Entry<String, MemoryObjectImpl.MemoryItem> entry = it.next();
            if (!MemoryObjectImpl.ROOT_KEY.equals(entry.getKey()) && entry.getValue().isValue()) {
                memory.put(entry.getKey(), entry.getValue().getValue());
            }
        }
        return memory;
    }

    /** Keep what a fresh JVM needs to take over: the observations and the last checkpoint. */
    private void keep(boolean withCheckpoint) throws IOException {
        ObjectNode kept = Protocol.JSON.createObjectNode();
        kept.set("open", opening);
        kept.set("store", store.toJson());
        kept.put("checkpoints", checkpoints);
        kept.set("completions", Protocol.JSON.valueToTree(completions));
        kept.set("keys", Protocol.JSON.valueToTree(keys));
        Path tmp = folder.resolve(SESSION_FILE + ".tmp");
        Protocol.JSON.writeValue(tmp.toFile(), kept);
        Files.move(tmp, folder.resolve(SESSION_FILE), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        if (withCheckpoint) {
            OperatorSnapshotUtil.writeStateHandle(
                    lastCheckpoint, folder.resolve(CHECKPOINT_FILE).toString());
        }
    }

    /** A tool call through upstream's durable-call API. */
    private static final class ToolCall implements DurableCallable<String> {
        private final String id;
        private final java.util.concurrent.Callable<String> call;

        ToolCall(String id, java.util.concurrent.Callable<String> call) {
            this.id = id;
            this.call = call;
        }

        @Override
        public String getId() {
            return id;
        }

        @Override
        public Class<String> getResultClass() {
            return String.class;
        }

        @Override
        public String call() throws Exception {
            return call.call();
        }
    }
}

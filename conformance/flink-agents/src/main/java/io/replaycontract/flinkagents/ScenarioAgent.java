package io.replaycontract.flinkagents;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.flink.agents.api.Event;
import org.apache.flink.agents.api.InputEvent;
import org.apache.flink.agents.api.context.RunnerContext;
import org.apache.flink.agents.plan.AgentConfiguration;
import org.apache.flink.agents.plan.AgentPlan;
import org.apache.flink.agents.plan.JavaFunction;
import org.apache.flink.agents.plan.actions.Action;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The scenario's agent as a Flink Agents plan: one Java action per scenario action, each
 * listening to the input event (trigger {@code input}) or to a follow-up event of its
 * trigger's name. Every action runs {@link #run}, which hands the work to the session.
 */
public final class ScenarioAgent {

    /** The action config entry that names the scenario action a plan action stands for. */
    static final String ACTION = "scenarioAction";

    /** The attribute of a follow-up event that carries the input record. */
    static final String RECORD = "record";

    /** The attribute of a follow-up event that carries the causal path of its emitter. */
    static final String PATH = "path";

    /** The session the actions of this JVM report to (one scenario at a time). */
    static volatile Session session;

    private ScenarioAgent() {}

    /** The entry point of every action of the plan. */
    public static void run(Event event, RunnerContext context) throws Exception {
        session.runAction(event, context);
    }

    static AgentPlan plan(JsonNode agent, AgentConfiguration config) throws Exception {
        Map<String, Action> actions = new LinkedHashMap<>();
        for (JsonNode spec : agent.path("actions")) {
            String name = spec.path("name").asText();
            String trigger = spec.path("trigger").asText("input");
            String eventType = "input".equals(trigger) ? InputEvent.EVENT_TYPE : trigger;
            Map<String, Object> actionConfig = new HashMap<>();
            actionConfig.put(ACTION, name);
            JavaFunction function =
                    new JavaFunction(
                            ScenarioAgent.class,
                            "run",
                            new Class<?>[] {Event.class, RunnerContext.class});
            actions.put(name, new Action(name, function, List.of(eventType), actionConfig));
        }
        return new AgentPlan(actions, new HashMap<>(), config);
    }

    /** The input record an event belongs to. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> record(Event event) {
        if (InputEvent.EVENT_TYPE.equals(event.getType())) {
            return (Map<String, Object>) event.getAttr("input");
        }
        return (Map<String, Object>) event.getAttr(RECORD);
    }

    /** The causal path of the action {@code name} triggered by {@code event}. */
    @SuppressWarnings("unchecked")
    static List<String> path(Event event, String name) {
        List<String> path = new ArrayList<>();
        if (!InputEvent.EVENT_TYPE.equals(event.getType())) {
            path.addAll((List<String>) event.getAttr(PATH));
            path.add(event.getType());
        }
        path.add(name);
        return path;
    }

    /** A follow-up event raised by the action at {@code path} for {@code record}. */
    static Event followUp(String type, Map<String, Object> record, List<String> path) {
        Map<String, Object> attributes = new HashMap<>();
        attributes.put(RECORD, record);
        attributes.put(PATH, new ArrayList<>(path));
        return new Event(type, attributes);
    }
}

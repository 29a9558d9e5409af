package io.replaycontract.flinkagents;

import org.apache.flink.agents.api.Event;
import org.apache.flink.agents.plan.actions.Action;
import org.apache.flink.agents.runtime.actionstate.ActionState;
import org.apache.flink.agents.runtime.actionstate.ActionStateStore;

import java.lang.reflect.Field;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The real upstream action state store (Kafka or Fluss), watched: every call goes to it
 * unchanged, and what it did is told to the session as it happens: a completed state
 * written (a save), a completed state served by a lookup (a reuse), saved states dropped
 * from the store's view by a lookup (an invalidation, which upstream keeps in memory only).
 *
 * <p>The store's view is its private map of states, read (never written) by reflection.
 */
final class ObservingStore implements ActionStateStore {

    private final ActionStateStore store;
    private final Session session;
    private final Field view;
    private long lastLookup = -1;

    ObservingStore(ActionStateStore store, Session session) {
        this.store = store;
        this.session = session;
        try {
            this.view = store.getClass().getDeclaredField("actionStates");
            this.view.setAccessible(true);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(
                    store.getClass().getName()
                            + " has no field actionStates: this adapter does not know its view",
                    e);
        }
    }

    /** The sequence number of the latest lookup: the position the current action runs at. */
    long lastLookup() {
        return lastLookup;
    }

    /**
     * After the suite crashed the step, the operator is dead: the exception that unwinds the
     * step in this JVM must not reach the store (upstream records a failed call's exception
     * durably, which a crashed process never would).
     */
    private void alive() {
        if (session.crashed()) {
            throw new Protocol.Crash();
        }
    }

    @Override
    public void put(Object key, long seqNum, Action action, Event event, ActionState state)
            throws Exception {
        alive();
        store.put(key, seqNum, action, event, state);
        if (state.isCompleted()) {
            session.saved(key, seqNum, action, event);
        }
    }

    @Override
    public ActionState get(Object key, long seqNum, Action action, Event event) throws Exception {
        alive();
        lastLookup = seqNum;
        Map<String, ActionState> before = view();
        ActionState state = store.get(key, seqNum, action, event);
        Map<String, ActionState> after = view();
        Map<String, ActionState> dropped = new HashMap<>(before);
        dropped.keySet().removeAll(after.keySet());
        session.dropped(seqNum, dropped);
        if (state != null && state.isCompleted()) {
            session.reused(key, seqNum, action, event);
        }
        return state;
    }

    @Override
    public void rebuildState(List<Object> recoveryMarkers) throws Exception {
        store.rebuildState(recoveryMarkers);
    }

    @Override
    public void pruneState(Object key, long seqNum) {
        store.pruneState(key, seqNum);
    }

    @Override
    public Object getRecoveryMarker() {
        return store.getRecoveryMarker();
    }

    @Override
    public void close() throws Exception {
        store.close();
    }

    @SuppressWarnings("unchecked")
    private Map<String, ActionState> view() {
        try {
            return new HashMap<>((Map<String, ActionState>) view.get(store));
        } catch (IllegalAccessException e) {
            throw new IllegalStateException("cannot read the store's view", e);
        }
    }
}

package io.replaycontract.flinkagents;

import org.apache.flink.agents.plan.AgentPlan;
import org.apache.flink.agents.runtime.operator.ActionExecutionOperator;
import org.apache.flink.agents.runtime.operator.ActionExecutionOperatorFactory;
import org.apache.flink.streaming.api.operators.Output;
import org.apache.flink.streaming.api.operators.StreamOperator;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.Map;

/**
 * Upstream's operator factory, with two things of the adapter's put around the operator it
 * makes: the real store, watched ({@link ObservingStore}), and the operator's output,
 * watched, so that each output is reported the moment the operator emits it.
 */
final class AdapterFactory extends ActionExecutionOperatorFactory<Map<String, Object>, Object> {

    private static final long serialVersionUID = 1L;

    private final transient AgentPlan plan;
    private final transient Session session;
    private final transient StoreConfig store;

    AdapterFactory(AgentPlan plan, Session session, StoreConfig store) {
        super(plan, true);
        this.plan = plan;
        this.session = session;
        this.store = store;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T extends StreamOperator<Object>> T createStreamOperator(
            StreamOperatorParameters<Object> parameters) {
        ObservingStore observed = new ObservingStore(store.create(), session);
        session.observe(observed);
        ActionExecutionOperator<Map<String, Object>, Object> operator =
                new ActionExecutionOperator<>(
                        plan,
                        true,
                        false,
                        parameters.getProcessingTimeService(),
                        parameters.getMailboxExecutor(),
                        observed);
        operator.setup(
                parameters.getContainingTask(),
                parameters.getStreamConfig(),
                watched(parameters.getOutput()));
        return (T) operator;
    }

    @SuppressWarnings("unchecked")
    private Output<StreamRecord<Object>> watched(Output<StreamRecord<Object>> output) {
        return (Output<StreamRecord<Object>>)
                Proxy.newProxyInstance(
                        Output.class.getClassLoader(),
                        new Class<?>[] {Output.class},
                        (proxy, method, args) -> {
                            if (method.getName().equals("collect")
                                    && args != null
                                    && args.length == 1
                                    && args[0] instanceof StreamRecord) {
                                session.emitted(((StreamRecord<Object>) args[0]).getValue());
                            }
                            try {
                                return method.invoke(output, args);
                            } catch (InvocationTargetException e) {
                                throw e.getCause();
                            }
                        });
    }
}

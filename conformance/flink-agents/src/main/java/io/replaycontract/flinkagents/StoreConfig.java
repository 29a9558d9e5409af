package io.replaycontract.flinkagents;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.flink.agents.api.configuration.AgentConfigOptions;
import org.apache.flink.agents.plan.AgentConfiguration;
import org.apache.flink.agents.runtime.actionstate.ActionStateStore;
import org.apache.flink.agents.runtime.actionstate.FlussActionStateStore;
import org.apache.flink.agents.runtime.actionstate.KafkaActionStateStore;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.AdminClientConfig;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Which upstream action state store a scenario uses: the backend, the server on loopback, and
 * the topic (Kafka) or table (Fluss) of this scenario alone, configured through upstream's own
 * options (AgentConfigOptions) exactly as a user configures a job.
 */
final class StoreConfig {

    static final String FLUSS_DATABASE = "replay_contract";

    final String backend;
    final String bootstrap;
    final String name;

    StoreConfig(String backend, String bootstrap, String name) {
        if (!backend.equals("kafka") && !backend.equals("fluss")) {
            throw new IllegalArgumentException("unknown backend " + backend + " (known: kafka, fluss)");
        }
        this.backend = backend;
        this.bootstrap = bootstrap;
        this.name = name;
    }

    AgentConfiguration configuration() {
        AgentConfiguration config = new AgentConfiguration();
        config.set(AgentConfigOptions.ACTION_STATE_STORE_BACKEND, backend);
        if (backend.equals("kafka")) {
            config.set(AgentConfigOptions.KAFKA_BOOTSTRAP_SERVERS, bootstrap);
            config.set(AgentConfigOptions.KAFKA_ACTION_STATE_TOPIC, name);
            config.set(AgentConfigOptions.KAFKA_ACTION_STATE_TOPIC_NUM_PARTITIONS, 1);
        } else {
            config.set(AgentConfigOptions.FLUSS_BOOTSTRAP_SERVERS, bootstrap);
            config.set(AgentConfigOptions.FLUSS_ACTION_STATE_DATABASE, FLUSS_DATABASE);
            config.set(AgentConfigOptions.FLUSS_ACTION_STATE_TABLE, name);
            config.set(AgentConfigOptions.FLUSS_ACTION_STATE_TABLE_BUCKETS, 1);
        }
        return config;
    }

    /** How often a store's construction is tried before the scenario fails. */
    static final int ATTEMPTS = 20;

    /**
     * A new instance of the real upstream store, as the operator would create it.
     *
     * <p>Upstream's Kafka store gives the broker 100 ms to list its topics when it is
     * constructed, which a cold client often misses on its first try (a finding of its own,
     * see the Flink Agents page of the docs); the adapter tries again, up to {@link #ATTEMPTS}
     * times, and logs each failed try on standard error.
     */
    ActionStateStore create() {
        AgentConfiguration config = configuration();
        RuntimeException last = null;
        for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
            try {
                return backend.equals("kafka")
                        ? new KafkaActionStateStore(config)
                        : new FlussActionStateStore(config);
            } catch (RuntimeException e) {
                last = e;
                System.err.println(
                        "replay-contract: " + backend + " store, try " + attempt + " failed: " + Main.oneLine(e));
                try {
                    Thread.sleep(100L * attempt);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        throw last;
    }

    /** Remove the scenario's topic or table; a failure is logged, not fatal. */
    void release() {
        try {
            if (backend.equals("kafka")) {
                try (AdminClient admin =
                        AdminClient.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
                    admin.deleteTopics(List.of(name)).all().get(10, TimeUnit.SECONDS);
                }
            } else {
                org.apache.fluss.config.Configuration conf = new org.apache.fluss.config.Configuration();
                conf.setString("bootstrap.servers", bootstrap);
                try (org.apache.fluss.client.Connection connection =
                                org.apache.fluss.client.ConnectionFactory.createConnection(conf);
                        org.apache.fluss.client.admin.Admin admin = connection.getAdmin()) {
                    admin.dropTable(org.apache.fluss.metadata.TablePath.of(FLUSS_DATABASE, name), true)
                            .get(10, TimeUnit.SECONDS);
                }
            }
        } catch (Exception e) {
            System.err.println("could not remove " + backend + " store " + name + ": " + e);
        }
    }

    ObjectNode toJson() {
        ObjectNode node = Protocol.JSON.createObjectNode();
        node.put("backend", backend);
        node.put("bootstrap", bootstrap);
        node.put("name", name);
        return node;
    }

    static StoreConfig fromJson(JsonNode node) {
        return new StoreConfig(
                node.path("backend").asText(), node.path("bootstrap").asText(), node.path("name").asText());
    }
}

package mockbroker;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterClientQuotasOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * What the Java client (org.apache.kafka:kafka-clients) does against the broker, driven by
 * tests/java/test_java_clients.py. Each mode prints one line of JSON the test asserts on.
 *
 * <pre>
 * produce-consume BOOTSTRAP TOPIC CODEC COUNT GROUP_PROTOCOL
 *     an idempotent acks=all producer sends COUNT keyed records compressed with CODEC, then a
 *     consumer in a new group (group.protocol=GROUP_PROTOCOL) reads them back and commits
 * quotas BOOTSTRAP
 *     the Admin client's alterClientQuotas and describeClientQuotas with its own
 *     ClientQuotaAlteration and ClientQuotaFilter: sets, filters, a refused value, a removal
 * transactions BOOTSTRAP TOPIC
 *     a transactional producer commits, aborts, and is fenced by a second producer with its
 *     transactional id; read_committed and read_uncommitted consumers read the topic
 * fetch-throttled BOOTSTRAP TOPIC COUNT
 *     a consumer (client id java-reader) reads COUNT records; prints its fetch-throttle-time
 *     metrics
 * admin BOOTSTRAP
 *     the Admin client over topics, configs (incremental and legacy), partitions, records,
 *     consumer groups and offsets, features, the quorum, log dirs and the cluster
 * read-process-write BOOTSTRAP IN OUT TRANSACTION_VERSION
 *     with transaction.version finalized at TRANSACTION_VERSION (updateFeatures), a
 *     transactional producer copies IN to OUT upper-cased, committing the consumer's
 *     offsets with sendOffsetsToTransaction; the first batch's transaction is aborted and
 *     redone; prints what a read_committed consumer reads and the group's offsets
 * telemetry BOOTSTRAP TOPIC
 *     a producer (client id java-telemetry) sends for two seconds and closes; prints its
 *     KIP-714 client instance id
 * throttled BOOTSTRAP TOPIC MILLIS
 *     a producer sends 100 kB records, one at a time, for MILLIS ms; prints its
 *     produce-throttle-time metrics
 * </pre>
 */
public final class JavaClients {
    private JavaClients() {}

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "produce-consume" -> produceConsume(args[1], args[2], args[3], Integer.parseInt(args[4]), args[5]);
            case "throttled" -> throttled(args[1], args[2], Long.parseLong(args[3]));
            case "quotas" -> quotas(args[1]);
            case "admin" -> admin(args[1]);
            case "transactions" -> transactions(args[1], args[2]);
            case "fetch-throttled" -> fetchThrottled(args[1], args[2], Integer.parseInt(args[3]));
            case "read-process-write" -> readProcessWrite(args[1], args[2], args[3], Short.parseShort(args[4]));
            case "telemetry" -> telemetry(args[1], args[2]);
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    private static Properties producerConfig(String bootstrap) {
        Properties config = new Properties();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return config;
    }

    private static void produceConsume(String bootstrap, String topic, String codec, int count, String groupProtocol)
            throws Exception {
        Properties config = producerConfig(bootstrap);
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        config.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        config.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        config.put(ProducerConfig.CLIENT_ID_CONFIG, "java-producer");
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(config)) {
            for (int i = 0; i < count; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, "key-" + i, "value-" + i)));
            }
            producer.flush();
        }
        Map<Integer, Long> lastOffsets = new TreeMap<>();
        for (Future<RecordMetadata> future : sent) {
            RecordMetadata metadata = future.get();
            lastOffsets.merge(metadata.partition(), metadata.offset(), Math::max);
        }

        Properties consumerConfig = new Properties();
        consumerConfig.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        consumerConfig.put(ConsumerConfig.GROUP_ID_CONFIG, "java-" + groupProtocol + "-" + topic);
        consumerConfig.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, groupProtocol);
        consumerConfig.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        consumerConfig.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        consumerConfig.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        consumerConfig.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        int consumed = 0;
        boolean matching = true;
        long deadline = System.currentTimeMillis() + 60_000;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerConfig)) {
            consumer.subscribe(List.of(topic));
            while (consumed < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    String index = record.key().substring("key-".length());
                    matching &= record.value().equals("value-" + index);
                    consumed++;
                }
            }
            consumer.commitSync();
        }
        System.out.printf(
                "{\"produced\": %d, \"consumed\": %d, \"matching\": %b, \"partitions\": %d, \"last_offsets\": %s}%n",
                sent.size(), consumed, matching, lastOffsets.size(), json(lastOffsets));
    }

    private static void throttled(String bootstrap, String topic, long millis) throws Exception {
        Properties config = producerConfig(bootstrap);
        config.put(ProducerConfig.CLIENT_ID_CONFIG, "java-loader");
        config.put(ProducerConfig.ACKS_CONFIG, "1");
        String value = "x".repeat(100_000);
        long sentBytes = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(config)) {
            long end = System.currentTimeMillis() + millis;
            while (System.currentTimeMillis() < end) {
                producer.send(new ProducerRecord<>(topic, value)).get();
                sentBytes += value.length();
            }
            double max = metric(producer.metrics(), "producer-metrics", "produce-throttle-time-max");
            double avg = metric(producer.metrics(), "producer-metrics", "produce-throttle-time-avg");
            System.out.printf("{\"sent_bytes\": %d, \"throttle_max\": %s, \"throttle_avg\": %s}%n", sentBytes, max, avg);
        }
    }

    private static void admin(String bootstrap) throws Exception {
        Properties config = new Properties();
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        Map<String, Object> out = new TreeMap<>();
        try (Admin admin = Admin.create(config)) {
            out.put("cluster_nodes", admin.describeCluster().nodes().get().size());
            admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic("admin-topic", 2, (short) 3)
                    .configs(Map.of("retention.ms", "3600000")))).all().get();
            String duplicate;
            try {
                admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic("admin-topic", 1, (short) 1))).all().get();
                duplicate = "created";
            } catch (ExecutionException e) {
                duplicate = e.getCause().getClass().getSimpleName();
            }
            out.put("duplicate_topic", duplicate);
            out.put("listed", admin.listTopics().names().get().contains("admin-topic"));
            admin.createPartitions(Map.of("admin-topic", org.apache.kafka.clients.admin.NewPartitions.increaseTo(4))).all().get();
            var description = admin.describeTopics(List.of("admin-topic")).allTopicNames().get().get("admin-topic");
            out.put("partitions", description.partitions().size());
            out.put("replicas", description.partitions().get(0).replicas().size());

            var topicResource = new org.apache.kafka.common.config.ConfigResource(
                    org.apache.kafka.common.config.ConfigResource.Type.TOPIC, "admin-topic");
            admin.incrementalAlterConfigs(Map.of(topicResource, List.of(new org.apache.kafka.clients.admin.AlterConfigOp(
                    new org.apache.kafka.clients.admin.ConfigEntry("cleanup.policy", "compact,delete"),
                    org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET)))).all().get();
            var configs = admin.describeConfigs(List.of(topicResource)).all().get().get(topicResource);
            out.put("retention_ms", configs.get("retention.ms").value());
            out.put("cleanup_policy", configs.get("cleanup.policy").value());
            out.put("cleanup_policy_source", configs.get("cleanup.policy").source().name());

            try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig(bootstrap))) {
                for (int i = 0; i < 10; i++) {
                    producer.send(new ProducerRecord<>("admin-topic", 0, "k" + i, "v" + i)).get();
                }
            }
            var partition0 = new org.apache.kafka.common.TopicPartition("admin-topic", 0);
            admin.deleteRecords(Map.of(partition0, org.apache.kafka.clients.admin.RecordsToDelete.beforeOffset(4))).all().get();
            out.put("earliest_after_delete", admin.listOffsets(Map.of(partition0,
                    org.apache.kafka.clients.admin.OffsetSpec.earliest())).all().get().get(partition0).offset());
            out.put("latest", admin.listOffsets(Map.of(partition0,
                    org.apache.kafka.clients.admin.OffsetSpec.latest())).all().get().get(partition0).offset());

            admin.alterConsumerGroupOffsets("admin-group", Map.of(partition0,
                    new org.apache.kafka.clients.consumer.OffsetAndMetadata(7))).all().get();
            out.put("group_offset", admin.listConsumerGroupOffsets("admin-group").partitionsToOffsetAndMetadata().get()
                    .get(partition0).offset());
            admin.deleteConsumerGroups(List.of("admin-group")).all().get();
            out.put("group_offsets_after_delete", admin.listConsumerGroupOffsets("admin-group")
                    .partitionsToOffsetAndMetadata().get().size());

            var features = admin.describeFeatures().featureMetadata().get();
            out.put("transaction_version", features.finalizedFeatures().get("transaction.version").maxVersionLevel());
            var quorum = admin.describeMetadataQuorum().quorumInfo().get();
            out.put("quorum_voters", quorum.voters().size());
            var logDirs = admin.describeLogDirs(List.of(0)).allDescriptions().get().get(0);
            out.put("log_dirs", logDirs.size());

            admin.deleteTopics(List.of("admin-topic")).all().get();
            out.put("listed_after_delete", admin.listTopics().names().get().contains("admin-topic"));
        }
        StringBuilder json = new StringBuilder("{");
        out.forEach((key, value) -> {
            if (json.length() > 1) json.append(", ");
            json.append('"').append(key).append("\": ");
            json.append(value instanceof String ? "\"" + value + "\"" : String.valueOf(value));
        });
        System.out.println(json.append('}'));
    }

    private static KafkaProducer<String, String> transactional(String bootstrap, String id) {
        Properties config = producerConfig(bootstrap);
        config.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
        KafkaProducer<String, String> producer = new KafkaProducer<>(config);
        producer.initTransactions();
        return producer;
    }

    private static void sendAll(KafkaProducer<String, String> producer, String topic, String prefix, int count) {
        for (int i = 0; i < count; i++) {
            producer.send(new ProducerRecord<>(topic, prefix + "-" + i));
        }
        producer.flush();
    }

    /** Every value in the topic as a consumer with this isolation level sees it, in offset order per partition. */
    private static List<String> readAll(String bootstrap, String topic, String isolation) {
        Properties config = new Properties();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config)) {
            List<org.apache.kafka.common.TopicPartition> partitions = new ArrayList<>();
            consumer.partitionsFor(topic).forEach(p -> partitions.add(new org.apache.kafka.common.TopicPartition(topic, p.partition())));
            consumer.assign(partitions);
            Map<org.apache.kafka.common.TopicPartition, Long> end = consumer.endOffsets(partitions);
            long deadline = System.currentTimeMillis() + 30_000;
            while (System.currentTimeMillis() < deadline
                    && partitions.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    values.add(record.value());
                }
            }
        }
        return values;
    }

    private static void transactions(String bootstrap, String topic) throws Exception {
        String fenced;
        try (KafkaProducer<String, String> first = transactional(bootstrap, "java-tx")) {
            first.beginTransaction();
            sendAll(first, topic, "committed", 10);
            first.commitTransaction();
            first.beginTransaction();
            sendAll(first, topic, "aborted", 5);
            first.abortTransaction();
            first.beginTransaction();
            sendAll(first, topic, "open", 3);
            try (KafkaProducer<String, String> second = transactional(bootstrap, "java-tx")) {
                try {
                    first.commitTransaction();
                    fenced = "committed";
                } catch (org.apache.kafka.common.KafkaException e) {
                    fenced = e.getClass().getSimpleName();
                }
                second.beginTransaction();
                sendAll(second, topic, "second", 2);
                second.commitTransaction();
            }
        }
        List<String> committed = readAll(bootstrap, topic, "read_committed");
        List<String> uncommitted = readAll(bootstrap, topic, "read_uncommitted");
        System.out.printf("{\"fenced\": \"%s\", \"read_committed\": %s, \"read_uncommitted\": %d}%n",
                fenced, quoted(committed), uncommitted.size());
    }

    private static String quoted(List<String> values) {
        StringBuilder out = new StringBuilder("[");
        for (String value : values) {
            if (out.length() > 1) out.append(", ");
            out.append('"').append(value).append('"');
        }
        return out.append(']').toString();
    }

    private static ClientQuotaEntity entity(String user, String clientId) {
        Map<String, String> parts = new HashMap<>();
        if (user != null) parts.put(ClientQuotaEntity.USER, user.equals("<default>") ? null : user);
        if (clientId != null) parts.put(ClientQuotaEntity.CLIENT_ID, clientId.equals("<default>") ? null : clientId);
        return new ClientQuotaEntity(parts);
    }

    private static ClientQuotaAlteration set(ClientQuotaEntity entity, String key, Double value) {
        return new ClientQuotaAlteration(entity, List.of(new ClientQuotaAlteration.Op(key, value)));
    }

    /** The entities a filter matches, as sorted "user=..,client-id=.. -> {key=value}" strings. */
    private static String describe(Admin admin, ClientQuotaFilter filter) throws Exception {
        Map<ClientQuotaEntity, Map<String, Double>> found = admin.describeClientQuotas(filter).entities().get();
        Map<String, String> shown = new TreeMap<>();
        found.forEach((entity, values) -> shown.put(new TreeMap<>(entity.entries()).toString(), new TreeMap<>(values).toString()));
        StringBuilder out = new StringBuilder("[");
        shown.forEach((entity, values) -> {
            if (out.length() > 1) out.append(", ");
            out.append('"').append(entity).append(" -> ").append(values).append('"');
        });
        return out.append(']').toString();
    }

    private static void quotas(String bootstrap) throws Exception {
        Properties config = new Properties();
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(config)) {
            admin.alterClientQuotas(List.of(
                    new ClientQuotaAlteration(entity("alice", null), List.of(
                            new ClientQuotaAlteration.Op("producer_byte_rate", 1048576.0),
                            new ClientQuotaAlteration.Op("consumer_byte_rate", 2000000.0))),
                    set(entity(null, "<default>"), "request_percentage", 25.5),
                    set(entity("alice", "app"), "controller_mutation_rate", 10.0))).all().get();
            String all = describe(admin, ClientQuotaFilter.all());
            String alice = describe(admin, ClientQuotaFilter.contains(
                    List.of(ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.USER, "alice"))));
            String aliceOnly = describe(admin, ClientQuotaFilter.containsOnly(
                    List.of(ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.USER, "alice"))));
            String defaultClient = describe(admin, ClientQuotaFilter.contains(
                    List.of(ClientQuotaFilterComponent.ofDefaultEntity(ClientQuotaEntity.CLIENT_ID))));
            String refused;
            try {
                admin.alterClientQuotas(List.of(set(entity("bob", null), "producer_byte_rate", -1.0))).all().get();
                refused = "accepted";
            } catch (ExecutionException e) {
                refused = e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
            }
            admin.alterClientQuotas(List.of(set(entity("carol", null), "producer_byte_rate", 5000.0)),
                    new AlterClientQuotasOptions().validateOnly(true)).all().get();
            admin.alterClientQuotas(List.of(set(entity("alice", null), "consumer_byte_rate", null))).all().get();
            String afterRemoval = describe(admin, ClientQuotaFilter.all());
            System.out.printf("{\"all\": %s, \"alice\": %s, \"alice_only\": %s, \"default_client\": %s, "
                    + "\"refused\": \"%s\", \"after_removal\": %s}%n",
                    all, alice, aliceOnly, defaultClient, refused.replace("\"", "'"), afterRemoval);
        }
    }

    private static void fetchThrottled(String bootstrap, String topic, int count) {
        Properties config = new Properties();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ConsumerConfig.CLIENT_ID_CONFIG, "java-reader");
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        int read = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config)) {
            consumer.assign(List.of(new org.apache.kafka.common.TopicPartition(topic, 0)));
            long deadline = System.currentTimeMillis() + 120_000;
            while (read < count && System.currentTimeMillis() < deadline) {
                read += consumer.poll(Duration.ofMillis(200)).count();
            }
            double max = metric(consumer.metrics(), "consumer-fetch-manager-metrics", "fetch-throttle-time-max");
            double avg = metric(consumer.metrics(), "consumer-fetch-manager-metrics", "fetch-throttle-time-avg");
            System.out.printf("{\"read\": %d, \"throttle_max\": %s, \"throttle_avg\": %s}%n", read, max, avg);
        }
    }

    private static void readProcessWrite(String bootstrap, String in, String out, short transactionVersion)
            throws Exception {
        Properties adminConfig = new Properties();
        adminConfig.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminConfig)) {
            admin.updateFeatures(Map.of("transaction.version", new org.apache.kafka.clients.admin.FeatureUpdate(
                    transactionVersion, org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType.SAFE_DOWNGRADE)),
                    new org.apache.kafka.clients.admin.UpdateFeaturesOptions()).all().get();
        }
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig(bootstrap))) {
            for (int i = 0; i < 20; i++) producer.send(new ProducerRecord<>(in, i % 2, "k" + i, "value-" + i));
        }
        Properties config = new Properties();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ConsumerConfig.GROUP_ID_CONFIG, "copier");
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5");
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        int copied = 0;
        boolean abortedOnce = false;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config);
             KafkaProducer<String, String> producer = transactional(bootstrap, "copier-tx")) {
            consumer.subscribe(List.of(in));
            long deadline = System.currentTimeMillis() + 60_000;
            while (copied < 20 && System.currentTimeMillis() < deadline) {
                var records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) continue;
                producer.beginTransaction();
                Map<org.apache.kafka.common.TopicPartition, org.apache.kafka.clients.consumer.OffsetAndMetadata> next =
                        new HashMap<>();
                for (ConsumerRecord<String, String> record : records) {
                    producer.send(new ProducerRecord<>(out, record.partition(), record.key(), record.value().toUpperCase()));
                    next.put(new org.apache.kafka.common.TopicPartition(record.topic(), record.partition()),
                            new org.apache.kafka.clients.consumer.OffsetAndMetadata(record.offset() + 1));
                }
                producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                if (!abortedOnce) {
                    // The first batch is aborted: its output is never read, and its offsets
                    // were not committed, so the consumer goes back and copies it again.
                    abortedOnce = true;
                    producer.flush();  // written, then aborted (unsent records would just be dropped)
                    producer.abortTransaction();
                    for (var partition : next.keySet()) {
                        var committed = consumer.committed(java.util.Set.of(partition)).get(partition);
                        consumer.seek(partition, committed == null ? 0 : committed.offset());
                    }
                    continue;
                }
                producer.commitTransaction();
                copied += records.count();
            }
        }
        List<String> read = readAll(bootstrap, out, "read_committed");
        Properties adminAgain = new Properties();
        adminAgain.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        Map<Integer, Long> offsets = new TreeMap<>();
        try (Admin admin = Admin.create(adminAgain)) {
            admin.listConsumerGroupOffsets("copier").partitionsToOffsetAndMetadata().get()
                    .forEach((partition, offset) -> offsets.put(partition.partition(), offset.offset()));
        }
        java.util.Collections.sort(read);
        System.out.printf("{\"read_committed\": %s, \"read_uncommitted\": %d, \"group_offsets\": %s}%n",
                quoted(read), readAll(bootstrap, out, "read_uncommitted").size(), json(offsets));
    }

    private static void telemetry(String bootstrap, String topic) throws Exception {
        Properties config = producerConfig(bootstrap);
        config.put(ProducerConfig.CLIENT_ID_CONFIG, "java-telemetry");
        String instance;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(config)) {
            long end = System.currentTimeMillis() + 2_000;
            while (System.currentTimeMillis() < end) {
                producer.send(new ProducerRecord<>(topic, "x")).get();
                Thread.sleep(50);
            }
            instance = producer.clientInstanceId(Duration.ofSeconds(10)).toString();
        }  // close() sends the terminating push
        System.out.printf("{\"client_instance_id\": \"%s\"}%n", instance);
    }

    private static double metric(Map<MetricName, ? extends Metric> metrics, String group, String name) {
        for (Map.Entry<MetricName, ? extends Metric> entry : metrics.entrySet()) {
            if (entry.getKey().name().equals(name) && entry.getKey().group().equals(group)) {
                return ((Number) entry.getValue().metricValue()).doubleValue();
            }
        }
        throw new IllegalStateException("no metric " + name);
    }

    private static String json(Map<Integer, Long> offsets) {
        StringBuilder out = new StringBuilder("{");
        offsets.forEach((partition, offset) -> {
            if (out.length() > 1) out.append(", ");
            out.append('"').append(partition).append("\": ").append(offset);
        });
        return out.append('}').toString();
    }
}

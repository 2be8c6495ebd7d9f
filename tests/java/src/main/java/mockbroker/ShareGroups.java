package mockbroker;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Java's share consumer (KafkaShareConsumer, KIP-932) against the broker, driven by
 * tests/java/test_java_share_groups.py. Each mode prints one line of JSON.
 *
 * <pre>
 * consume BOOTSTRAP TOPIC GROUP MEMBERS COUNT
 *     MEMBERS share consumers (implicit acknowledgement) in GROUP, set to start at the
 *     earliest offset, read COUNT records a producer writes; prints how many each member
 *     read, how many distinct records, and the group as Admin.describeShareGroups sees it
 * release BOOTSTRAP TOPIC GROUP
 *     one consumer (explicit acknowledgement) releases every record it gets until its
 *     delivery count is 3, then accepts; prints the delivery counts it saw per record
 * reject BOOTSTRAP TOPIC GROUP
 *     one consumer rejects the first record and accepts the rest; prints what it got
 *     again over the next seconds (nothing: a rejected record is archived)
 * poison BOOTSTRAP TOPIC GROUP
 *     one consumer releases every record it gets; prints the delivery counts it saw
 *     (the broker archives a record at its delivery count limit)
 * lock-expiry BOOTSTRAP TOPIC GROUP
 *     consumer A acquires the records and goes quiet; after the acquisition lock expired
 *     consumer B gets them again with delivery count 2
 * offsets BOOTSTRAP TOPIC GROUP
 *     the Admin client's share-group offsets: a consumer accepts offsets 0-5 of 10 and
 *     releases the rest; while it is in the group, altering and deleting its offsets
 *     fail; once it closed, listShareGroupOffsets shows where the group is, alter moves
 *     it back to 2 (a new consumer starts there), delete leaves none
 * </pre>
 */
public final class ShareGroups {
    private ShareGroups() {}

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "consume" -> consume(args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]));
            case "release" -> release(args[1], args[2], args[3]);
            case "reject" -> reject(args[1], args[2], args[3]);
            case "poison" -> poison(args[1], args[2], args[3]);
            case "lock-expiry" -> lockExpiry(args[1], args[2], args[3]);
            case "offsets" -> offsets(args[1], args[2], args[3]);
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static KafkaShareConsumer<String, String> consumer(String bootstrap, String group, String mode, String clientId) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        props.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, mode);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaShareConsumer<>(props);
    }

    static Admin admin(String bootstrap) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(props);
    }

    /** share.auto.offset.reset=earliest for the group, as a user sets it with the Admin client. */
    static void startAtEarliest(String bootstrap, String group) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            AlterConfigOp op = new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(op))).all().get();
        }
    }

    static void produce(String bootstrap, String topic, int count) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i));
            }
            producer.flush();
        }
    }

    static void consume(String bootstrap, String topic, String group, int members, int count) throws Exception {
        startAtEarliest(bootstrap, group);
        Map<String, Integer> seen = new ConcurrentHashMap<>();
        AtomicBoolean done = new AtomicBoolean(false);
        ExecutorService pool = Executors.newFixedThreadPool(members, task -> {
            Thread thread = new Thread(task);
            thread.setDaemon(true);  // the process ends with main, whatever a member is doing
            return thread;
        });
        List<Future<Integer>> reads = new ArrayList<>();
        List<Map<String, Object>> described = new ArrayList<>();
        for (int m = 0; m < members; m++) {
            String clientId = "share-" + m;
            reads.add(pool.submit(() -> {
                int read = 0;
                try (KafkaShareConsumer<String, String> consumer = consumer(bootstrap, group, "implicit", clientId)) {
                    consumer.subscribe(List.of(topic));
                    long deadline = System.currentTimeMillis() + 120_000;
                    while (!done.get() && System.currentTimeMillis() < deadline) {
                        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                            seen.merge(record.value(), 1, Integer::sum);
                            read++;
                        }
                        if (seen.size() >= count) {
                            done.set(true);
                        }
                    }
                    consumer.commitSync();
                }
                return read;
            }));
        }
        // every member has joined before the records are written, so all of them share the work
        try (Admin admin = admin(bootstrap)) {
            long deadline = System.currentTimeMillis() + 60_000;
            ShareGroupDescription group_ = null;
            while (System.currentTimeMillis() < deadline) {
                try {
                    group_ = admin.describeShareGroups(List.of(group)).all().get().get(group);
                } catch (ExecutionException notYet) {  // GROUP_ID_NOT_FOUND until the first member joins
                    Thread.sleep(200);
                    continue;
                }
                if (group_.members().size() == members
                        && group_.members().stream().allMatch(member -> !member.assignment().topicPartitions().isEmpty())) {
                    break;
                }
                Thread.sleep(200);
            }
            produce(bootstrap, topic, count);
            Map<String, Object> view = new TreeMap<>();
            view.put("state", group_.groupState().toString());
            view.put("members", group_.members().size());
            view.put("epochs_match", group_.groupEpoch() == group_.targetAssignmentEpoch());
            described.add(view);
        }
        List<Integer> perMember = new ArrayList<>();
        for (Future<Integer> read : reads) {
            perMember.add(read.get());
        }
        pool.shutdown();
        int duplicates = 0;
        for (int times : seen.values()) {
            duplicates += times - 1;
        }
        Map<String, Object> out = new TreeMap<>();
        out.put("distinct", seen.size());
        out.put("duplicates", duplicates);
        out.put("per_member", perMember);
        out.put("described", described.get(0));
        try (Admin admin = admin(bootstrap)) {
            ShareGroupDescription after = admin.describeShareGroups(List.of(group)).all().get().get(group);
            out.put("state_after_close", after.groupState().toString());
        }
        System.out.println(Json.of(out));
    }

    /** Delivery counts seen per record value, in order. */
    static Map<String, List<Integer>> counts(Map<String, List<Integer>> into, ConsumerRecords<String, String> records) {
        for (ConsumerRecord<String, String> record : records) {
            into.computeIfAbsent(record.value(), k -> new ArrayList<>()).add((int) record.deliveryCount().orElse((short) -1));
        }
        return into;
    }

    static void release(String bootstrap, String topic, String group) throws Exception {
        startAtEarliest(bootstrap, group);
        produce(bootstrap, topic, 5);
        Map<String, List<Integer>> seen = new TreeMap<>();
        try (KafkaShareConsumer<String, String> consumer = consumer(bootstrap, group, "explicit", "share-release")) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            int accepted = 0;
            while (accepted < 5 && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                counts(seen, records);
                for (ConsumerRecord<String, String> record : records) {
                    if (record.deliveryCount().orElse((short) 0) < 3) {
                        consumer.acknowledge(record, AcknowledgeType.RELEASE);
                    } else {
                        consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                        accepted++;
                    }
                }
                consumer.commitSync();
            }
            // nothing comes back once accepted
            long quiet = System.currentTimeMillis() + 1_500;
            while (System.currentTimeMillis() < quiet) {
                counts(seen, consumer.poll(Duration.ofMillis(200)));
            }
        }
        System.out.println(Json.of(Map.of("delivery_counts", seen)));
    }

    static void reject(String bootstrap, String topic, String group) throws Exception {
        startAtEarliest(bootstrap, group);
        produce(bootstrap, topic, 3);
        Map<String, List<Integer>> seen = new TreeMap<>();
        try (KafkaShareConsumer<String, String> consumer = consumer(bootstrap, group, "explicit", "share-reject")) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (seen.size() < 3 && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                counts(seen, records);
                for (ConsumerRecord<String, String> record : records) {
                    consumer.acknowledge(record, record.value().equals("v0") ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT);
                }
                consumer.commitSync();
            }
            long quiet = System.currentTimeMillis() + 1_500;
            while (System.currentTimeMillis() < quiet) {
                counts(seen, consumer.poll(Duration.ofMillis(200)));
            }
        }
        System.out.println(Json.of(Map.of("delivery_counts", seen)));
    }

    static void poison(String bootstrap, String topic, String group) throws Exception {
        startAtEarliest(bootstrap, group);
        produce(bootstrap, topic, 1);
        Map<String, List<Integer>> seen = new TreeMap<>();
        try (KafkaShareConsumer<String, String> consumer = consumer(bootstrap, group, "explicit", "share-poison")) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 8_000;
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                counts(seen, records);
                for (ConsumerRecord<String, String> record : records) {
                    consumer.acknowledge(record, AcknowledgeType.RELEASE);
                }
                consumer.commitSync();
            }
        }
        System.out.println(Json.of(Map.of("delivery_counts", seen)));
    }

    static void lockExpiry(String bootstrap, String topic, String group) throws Exception {
        startAtEarliest(bootstrap, group);
        produce(bootstrap, topic, 3);
        Map<String, List<Integer>> first = new TreeMap<>();
        Map<String, List<Integer>> second = new TreeMap<>();
        try (KafkaShareConsumer<String, String> a = consumer(bootstrap, group, "explicit", "share-a")) {
            a.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (first.size() < 3 && System.currentTimeMillis() < deadline) {
                counts(first, a.poll(Duration.ofMillis(200)));
            }
            // A holds the records and stops polling; B joins and waits for the locks to expire
            try (KafkaShareConsumer<String, String> b = consumer(bootstrap, group, "implicit", "share-b")) {
                b.subscribe(List.of(topic));
                long until = System.currentTimeMillis() + 60_000;
                while (second.size() < 3 && System.currentTimeMillis() < until) {
                    counts(second, b.poll(Duration.ofMillis(200)));
                }
                b.commitSync();
            }
        }
        System.out.println(Json.of(Map.of("first", first, "second", second)));
    }

    /** The group's share-group offsets as listShareGroupOffsets shows them (all topics). */
    static Map<String, Object> listed(Admin admin, String group) throws Exception {
        Map<TopicPartition, SharePartitionOffsetInfo> offsets = admin
            .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
            .partitionsToOffsetInfo(group).get();
        Map<String, Object> out = new TreeMap<>();
        offsets.forEach((tp, info) -> {
            Map<String, Object> view = new TreeMap<>();
            if (info != null) {
                view.put("start", info.startOffset());
                view.put("lag", info.lag().orElse(-1L));
                view.put("leader_epoch", info.leaderEpoch().orElse(-1));
            }
            out.put(tp.toString(), view);
        });
        return out;
    }

    /** What a failed Admin call threw: its cause's class and message. */
    static Map<String, Object> failure(KafkaFutureCall call) {
        Map<String, Object> out = new TreeMap<>();
        try {
            call.run();
            out.put("error", "none");
        } catch (ExecutionException e) {
            out.put("error", e.getCause().getClass().getSimpleName());
            out.put("message", String.valueOf(e.getCause().getMessage()));
        } catch (Exception e) {
            out.put("error", e.getClass().getSimpleName());
        }
        return out;
    }

    interface KafkaFutureCall {
        void run() throws Exception;
    }

    static void offsets(String bootstrap, String topic, String group) throws Exception {
        startAtEarliest(bootstrap, group);
        produce(bootstrap, topic, 10);
        TopicPartition tp = new TopicPartition(topic, 0);
        Map<String, Object> out = new TreeMap<>();
        try (Admin admin = admin(bootstrap)) {
            try (KafkaShareConsumer<String, String> consumer = consumer(bootstrap, group, "explicit", "share-offsets")) {
                consumer.subscribe(List.of(topic));
                Set<Long> accepted = new java.util.TreeSet<>();
                long deadline = System.currentTimeMillis() + 60_000;
                while (accepted.size() < 6 && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                        if (record.offset() < 6) {
                            consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                            accepted.add(record.offset());
                        } else {
                            consumer.acknowledge(record, AcknowledgeType.RELEASE);
                        }
                    }
                    consumer.commitSync();
                }
                out.put("accepted", accepted);
                out.put("alter_active", failure(() -> admin.alterShareGroupOffsets(group, Map.of(tp, 0L)).all().get()));
                out.put("delete_active", failure(() -> admin.deleteShareGroupOffsets(group, Set.of(topic)).all().get()));
            }
            out.put("after_close", listed(admin, group));
            admin.alterShareGroupOffsets(group, Map.of(tp, 2L)).all().get();
            out.put("after_alter", listed(admin, group));
        }
        List<Long> offsets = new ArrayList<>();
        try (KafkaShareConsumer<String, String> consumer = consumer(bootstrap, group, "implicit", "share-offsets-2")) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (offsets.size() < 8 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    offsets.add(record.offset());
                }
            }
            consumer.commitSync();
        }
        java.util.Collections.sort(offsets);
        out.put("consumed_after_alter", offsets);
        try (Admin admin = admin(bootstrap)) {
            out.put("after_consume", listed(admin, group));
            admin.deleteShareGroupOffsets(group, Set.of(topic)).all().get();
            out.put("after_delete", listed(admin, group));
        }
        System.out.println(Json.of(out));
    }
}

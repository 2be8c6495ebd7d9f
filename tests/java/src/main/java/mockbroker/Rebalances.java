package mockbroker;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Consumers of one group (group.protocol classic or consumer) as members come and go and a
 * broker stops under them, driven by tests/java/test_java_rebalances.py over stdin/stdout:
 *
 * <pre>
 * rebalance BOOTSTRAP TOPIC GROUP_PROTOCOL
 *     three consumers join one by one, then the second leaves; after each change it prints
 *     {"phase": "...", "assignment": [sizes]} once the group has settled. Then it prints
 *     {"phase": "stop-broker"} and waits for a line on stdin (the test stops a broker),
 *     produces more, prints {"phase": "start-broker"}, waits again (the test starts it),
 *     produces more, and prints the final JSON: what was produced and consumed.
 * </pre>
 *
 * Each consumer commits what it processed after every poll, in its own thread.
 */
public final class Rebalances {
    private static final int PARTITIONS = 6;

    private Rebalances() {}

    /** One group member polling in its own thread. */
    private static final class Member implements Runnable {
        private final KafkaConsumer<String, String> consumer;
        private final Map<String, Integer> consumed;
        private final AtomicBoolean running = new AtomicBoolean(true);
        private volatile Set<TopicPartition> assignment = Set.of();
        private final Thread thread;
        private volatile Throwable failure;
        private final Map<String, Integer> commitFailures;

        Member(String bootstrap, String topic, String group, String protocol, Map<String, Integer> consumed,
               Map<String, Integer> commitFailures) {
            Properties config = new Properties();
            config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            config.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
            config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            if (protocol.equals("classic")) {
                config.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
                config.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
            }
            this.consumer = new KafkaConsumer<>(config);
            this.consumed = consumed;
            this.commitFailures = commitFailures;
            consumer.subscribe(List.of(topic));
            this.thread = new Thread(this);
            thread.start();
        }

        @Override
        public void run() {
            try {
                while (running.get()) {
                    var records = consumer.poll(Duration.ofMillis(100));
                    for (ConsumerRecord<String, String> record : records) {
                        consumed.merge(record.value(), 1, Integer::sum);
                    }
                    if (!records.isEmpty()) {
                        try {
                            consumer.commitSync();
                        } catch (org.apache.kafka.common.KafkaException e) {
                            // A commit racing a rebalance or a coordinator move: what was
                            // processed is read again by the partition's next owner.
                            commitFailures.merge(e.getClass().getSimpleName(), 1, Integer::sum);
                        }
                    }
                    assignment = Set.copyOf(consumer.assignment());
                }
            } catch (Throwable e) {
                failure = e;
            } finally {
                consumer.close();
            }
        }

        void close() throws InterruptedException {
            running.set(false);
            thread.join();
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[1], topic = args[2], protocol = args[3];
        String group = "rebalancing-" + protocol;
        Map<String, Integer> consumed = new ConcurrentHashMap<>();
        Map<String, Integer> commitFailures = new ConcurrentHashMap<>();
        List<String> produced = new ArrayList<>();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Map<String, Object> out = new TreeMap<>();

        Properties config = new Properties();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(config)) {
            List<Member> members = new ArrayList<>();
            produce(producer, topic, "first", produced);
            for (String phase : List.of("one-member", "two-members", "three-members")) {
                members.add(new Member(bootstrap, topic, group, protocol, consumed, commitFailures));
                out.put(phase, settle(members, consumed, produced));
            }
            members.remove(1).close();
            out.put("second-left", settle(members, consumed, produced));

            phase("stop-broker", stdin);
            produce(producer, topic, "broker-stopped", produced);
            out.put("broker-stopped", settle(members, consumed, produced));
            phase("start-broker", stdin);
            produce(producer, topic, "broker-back", produced);
            out.put("broker-back", settle(members, consumed, produced));
            for (Member member : members) {
                member.close();
                if (member.failure != null) throw new IllegalStateException(member.failure);
            }
        }
        out.put("produced", produced.size());
        out.put("consumed_distinct", consumed.size());
        out.put("read_twice", consumed.values().stream().filter(n -> n > 1).count());
        out.put("commit_failures", new TreeMap<>(commitFailures));
        out.put("missing", produced.stream().filter(value -> !consumed.containsKey(value)).count());
        System.out.println(Json.of(out));
    }

    private static void produce(KafkaProducer<String, String> producer, String topic, String prefix,
                                List<String> produced) throws Exception {
        for (int i = 0; i < 60; i++) {
            String value = prefix + "-" + i;
            producer.send(new ProducerRecord<>(topic, i % PARTITIONS, null, value)).get();
            produced.add(value);
        }
    }

    private static void phase(String name, BufferedReader stdin) throws Exception {
        System.out.println("{\"phase\": \"" + name + "\"}");
        System.out.flush();
        if (stdin.readLine() == null) throw new IllegalStateException("stdin closed at " + name);
    }

    /**
     * Waits until every member has a share as balanced as it can be, the shares cover every
     * partition, and everything produced so far was consumed; returns the sorted share sizes.
     */
    private static List<Integer> settle(List<Member> members, Map<String, Integer> consumed, List<String> produced)
            throws InterruptedException {
        long deadline = System.currentTimeMillis() + 90_000;
        List<Integer> sizes = List.of();
        while (System.currentTimeMillis() < deadline) {
            sizes = members.stream().map(m -> m.assignment.size()).sorted().toList();
            boolean balanced = sizes.get(0) == PARTITIONS / members.size()
                    && sizes.stream().mapToInt(Integer::intValue).sum() == PARTITIONS;
            if (balanced && produced.stream().allMatch(consumed::containsKey)) return sizes;
            Thread.sleep(100);
        }
        return sizes;  // unsettled: the test sees the sizes and what is missing
    }
}

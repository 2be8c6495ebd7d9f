package mockbroker;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * A Kafka Streams application (org.apache.kafka:kafka-streams) with exactly_once_v2 against
 * the broker, driven by tests/java/test_kafka_streams.py.
 *
 * <pre>
 * run BOOTSTRAP APPLICATION_ID INPUT WINDOWED TOTALS STATE_DIR PACE_MS
 * </pre>
 *
 * INPUT holds records keyed by a transaction id whose value is "user:amount", with the
 * event time as the record timestamp. The application keys them by user (the by-user
 * repartition topic) and keeps, per user, the count and sum of the amounts
 * <ul>
 * <li>per 10 s tumbling window with a 10 minute grace period (the window-totals store):
 *     every update goes to WINDOWED as "user@windowStart" -> "count:sum";</li>
 * <li>over all time (the user-totals store, a compacted changelog): every update goes to
 *     TOTALS as "user" -> "count:sum".</li>
 * </ul>
 * Caching is off, so every record processed is one update. Each input record takes PACE_MS
 * more to process (transactions are open most of the time, for a test that kills it). It prints "RUNNING" once the
 * instance is running, runs until its standard input closes, then closes and prints one
 * line of JSON: whether it closed in time, the states it went through and the uncaught
 * exceptions of its threads.
 */
public final class StreamsApp {
    private StreamsApp() {}

    public static void main(String[] args) throws Exception {
        if (!args[0].equals("run")) {
            throw new IllegalArgumentException("unknown mode " + args[0]);
        }
        run(args[1], args[2], args[3], args[4], args[5], args[6], Long.parseLong(args[7]),
                args.length > 8 ? args[8] : "classic");
    }

    private static String strings(List<String> values) {
        List<String> quoted = new ArrayList<>();
        synchronized (values) {
            for (String value : values) {
                quoted.add('"' + value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n") + '"');
            }
        }
        return "[" + String.join(", ", quoted) + "]";
    }

    private static void pace(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static String add(String aggregate, long amount) {
        int colon = aggregate.indexOf(':');
        long count = Long.parseLong(aggregate.substring(0, colon));
        long sum = Long.parseLong(aggregate.substring(colon + 1));
        return (count + 1) + ":" + (sum + amount);
    }

    private static void run(String bootstrap, String applicationId, String input, String windowed, String totals,
            String stateDir, long paceMs, String groupProtocol) throws Exception {
        StreamsBuilder builder = new StreamsBuilder();
        KGroupedStream<String, Long> byUser = builder
                .stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .peek((txn, value) -> pace(paceMs))
                .map((txn, value) -> {
                    int colon = value.indexOf(':');
                    return KeyValue.pair(value.substring(0, colon), Long.parseLong(value.substring(colon + 1)));
                })
                .groupByKey(Grouped.with("by-user", Serdes.String(), Serdes.Long()));
        byUser.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofMinutes(10)))
                .aggregate(() -> "0:0", (user, amount, aggregate) -> add(aggregate, amount),
                        Materialized.<String, String, WindowStore<Bytes, byte[]>>as("window-totals")
                                .withKeySerde(Serdes.String())
                                .withValueSerde(Serdes.String()))
                .toStream()
                .map((window, aggregate) -> KeyValue.pair(window.key() + "@" + window.window().start(), aggregate))
                .to(windowed, Produced.with(Serdes.String(), Serdes.String()));
        byUser.aggregate(() -> "0:0", (user, amount, aggregate) -> add(aggregate, amount),
                        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("user-totals")
                                .withKeySerde(Serdes.String())
                                .withValueSerde(Serdes.String()))
                .toStream()
                .to(totals, Produced.with(Serdes.String(), Serdes.String()));

        Properties config = new Properties();
        config.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        config.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        config.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
        config.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        config.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        config.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        config.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 200);
        config.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
        // "classic" (the consumer's rebalance protocol) or "streams" (KIP-1071: the broker
        // creates the internal topics and assigns the tasks)
        config.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, groupProtocol);
        // Internal topics roll and become cleanable soon: the broker compacts the changelogs
        // while the application runs.
        config.put(StreamsConfig.topicPrefix(TopicConfig.SEGMENT_MS_CONFIG), 100);
        config.put(StreamsConfig.topicPrefix(TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG), 0.01);
        if (groupProtocol.equals("classic")) {
            // the streams protocol takes these from the broker (group.streams.*)
            config.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6_000);
            config.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1_000);
        }
        config.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 10_000);

        List<String> states = Collections.synchronizedList(new ArrayList<>());
        List<String> uncaught = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch running = new CountDownLatch(1);
        boolean closed;
        try (KafkaStreams streams = new KafkaStreams(builder.build(), config)) {
            streams.setStateListener((now, before) -> {
                states.add(now.name());
                if (now == KafkaStreams.State.RUNNING) {
                    running.countDown();
                }
            });
            streams.setUncaughtExceptionHandler(exception -> {
                uncaught.add(exception.toString());
                return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
            });
            streams.start();
            if (running.await(120, TimeUnit.SECONDS)) {
                System.out.println("RUNNING");
                System.out.flush();
            }
            // Runs until the test closes standard input.
            BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            while (stdin.readLine() != null) {
                // nothing to read: the test only closes it
            }
            closed = streams.close(Duration.ofSeconds(60));
        }
        System.out.println("{\"closed\": " + closed + ", \"states\": " + strings(states) + ", \"uncaught\": " + strings(uncaught) + "}");
    }
}

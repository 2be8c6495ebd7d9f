package example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.errors.NotLeaderOrFollowerException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class QuotaAndFaultTest {
    // --8<-- [start:extension]
    @RegisterExtension
    static final KafkaMockBroker broker = new KafkaMockBroker();
    // --8<-- [end:extension]

    private static KafkaProducer<byte[], byte[]> producer(String clientId, int retries) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        props.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        props.put(ProducerConfig.RETRIES_CONFIG, retries);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        return new KafkaProducer<>(props);
    }

    private static double metric(KafkaProducer<?, ?> producer, String name) {
        for (Map.Entry<MetricName, ? extends Metric> entry : producer.metrics().entrySet()) {
            if (entry.getKey().group().equals("producer-metrics") && entry.getKey().name().equals(name)) {
                return (double) entry.getValue().metricValue();
            }
        }
        throw new AssertionError("no producer metric " + name);
    }

    // --8<-- [start:quota]
    @Test
    void producerOverItsQuotaIsThrottled() throws Exception {
        broker.post("/v1/quotas", """
                {"entity": {"client-id": "loader"}, "set": {"producer_byte_rate": 10240}}""");
        try (KafkaProducer<byte[], byte[]> producer = producer("loader", Integer.MAX_VALUE)) {
            byte[] value = new byte[64 * 1024];
            // 64 KB at a time against 10 KB/s: a few sends and the broker throttles.
            for (int sent = 0; sent < 20 && !(metric(producer, "produce-throttle-time-max") > 0); sent++) {
                producer.send(new ProducerRecord<>("orders", value)).get();
            }
            assertTrue(metric(producer, "produce-throttle-time-max") > 0, "the producer was never throttled");
            producer.close(Duration.ofSeconds(30));
        }
    }
    // --8<-- [end:quota]

    // --8<-- [start:faults]
    @Test
    void faultIsRetriedByTheProducer() throws Exception {
        // The next Produce request of this client gets NOT_LEADER_OR_FOLLOWER (error 6).
        broker.post("/v1/faults", """
                {"api_key": 0, "error_code": 6, "count": 1, "client_id": "retrying"}""");
        try (KafkaProducer<byte[], byte[]> producer = producer("retrying", Integer.MAX_VALUE)) {
            producer.send(new ProducerRecord<>("payments", "x".getBytes())).get();
            assertEquals(1.0, metric(producer, "record-retry-total"));
        }
        assertEquals("[]", broker.get("/v1/faults")); // the fault was spent
    }

    @Test
    void faultReachesAProducerWithoutRetries() throws Exception {
        broker.post("/v1/faults", """
                {"api_key": 0, "error_code": 6, "count": 1, "client_id": "no-retries"}""");
        try (KafkaProducer<byte[], byte[]> producer = producer("no-retries", 0)) {
            ExecutionException failed = assertThrows(
                    ExecutionException.class,
                    () -> producer.send(new ProducerRecord<>("payments", "y".getBytes())).get());
            assertInstanceOf(NotLeaderOrFollowerException.class, failed.getCause());
        }
    }
    // --8<-- [end:faults]
}

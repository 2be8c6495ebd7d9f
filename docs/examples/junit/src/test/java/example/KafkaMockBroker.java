package example;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A JUnit 5 extension that runs kafka-mock-broker as a subprocess for a test class:
 * {@code @RegisterExtension static final KafkaMockBroker broker = new KafkaMockBroker();}
 *
 * <p>The command is the system property {@code kafka.mock.broker}, else the environment
 * variable {@code KAFKA_MOCK_BROKER}, else {@code kafka-mock-broker} on the PATH.
 */
public final class KafkaMockBroker implements BeforeAllCallback, AfterAllCallback {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(30);

    private final List<String> extraArgs;
    private final HttpClient http = HttpClient.newHttpClient();
    private Process process;
    private Path log;
    private String bootstrapServers;
    private String adminUrl;

    /** {@code extraArgs} go to the command line, e.g. "--brokers", "3". */
    public KafkaMockBroker(String... extraArgs) {
        this.extraArgs = List.of(extraArgs);
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        start();
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        stop();
    }

    public String bootstrapServers() {
        return bootstrapServers;
    }

    public String adminUrl() {
        return adminUrl;
    }

    // --8<-- [start:start]
    public void start() throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("kafka-mock-broker");
        Path readyFile = dir.resolve("ready.json");
        log = dir.resolve("broker.log");
        String command = System.getProperty(
                "kafka.mock.broker", System.getenv().getOrDefault("KAFKA_MOCK_BROKER", "kafka-mock-broker"));
        List<String> args = new ArrayList<>(List.of(
                command, "--port", "0", "--admin-port", "0", "--ready-file", readyFile.toString()));
        args.addAll(extraArgs);
        process = new ProcessBuilder(args)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        // The broker writes the ready file (by a rename: whole or absent) once its
        // listeners and its control plane serve.
        Instant deadline = Instant.now().plus(START_TIMEOUT);
        while (!Files.exists(readyFile)) {
            if (!process.isAlive()) {
                throw new IllegalStateException(
                        "kafka-mock-broker exited with " + process.exitValue() + ":\n" + Files.readString(log));
            }
            if (Instant.now().isAfter(deadline)) {
                process.destroyForcibly();
                throw new IllegalStateException("kafka-mock-broker not ready in time:\n" + Files.readString(log));
            }
            Thread.sleep(20);
        }
        String ready = Files.readString(readyFile);
        bootstrapServers = jsonString(ready, "bootstrap_servers");
        adminUrl = jsonString(ready, "admin_url");
    }

    public void stop() throws IOException, InterruptedException {
        if (process == null) {
            return;
        }
        process.destroy(); // SIGTERM: in-flight requests are answered, then exit status 0
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor();
        }
        int status = process.exitValue();
        process = null;
        if (status != 0) {
            throw new IllegalStateException("kafka-mock-broker exited with " + status + ":\n" + Files.readString(log));
        }
    }
    // --8<-- [end:start]

    // --8<-- [start:http]
    /** POSTs a JSON body to the control plane; its answer, or an exception for a non-2xx. */
    public String post(String path, String json) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(adminUrl + path))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)));
    }

    public String get(String path) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(adminUrl + path)).GET());
    }

    private String send(HttpRequest.Builder request) throws IOException, InterruptedException {
        HttpResponse<String> response = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() / 100 != 2) {
            throw new IllegalStateException(
                    response.request().method() + " " + response.request().uri() + " answered "
                            + response.statusCode() + ": " + response.body());
        }
        return response.body();
    }
    // --8<-- [end:http]

    /** A string field of the ready file's flat JSON object (no JSON library needed). */
    private static String jsonString(String json, String field) {
        Matcher found = Pattern.compile("\"" + field + "\"\\s*:\\s*\"([^\"]*)\"").matcher(json);
        if (!found.find()) {
            throw new IllegalStateException("no " + field + " in the ready file: " + json);
        }
        return found.group(1);
    }
}

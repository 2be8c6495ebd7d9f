package mockbroker;

import java.util.Collection;
import java.util.Map;

/** The one line of JSON each mode prints: maps, collections, strings, numbers, booleans, null. */
final class Json {
    private Json() {}

    static String of(Object value) {
        if (value == null) return "null";
        if (value instanceof Map<?, ?> map) {
            StringBuilder out = new StringBuilder("{");
            map.forEach((key, item) -> {
                if (out.length() > 1) out.append(", ");
                out.append(string(String.valueOf(key))).append(": ").append(of(item));
            });
            return out.append('}').toString();
        }
        if (value instanceof Collection<?> items) {
            StringBuilder out = new StringBuilder("[");
            for (Object item : items) {
                if (out.length() > 1) out.append(", ");
                out.append(of(item));
            }
            return out.append(']').toString();
        }
        if (value instanceof Number || value instanceof Boolean) return String.valueOf(value);
        return string(String.valueOf(value));
    }

    private static String string(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                default -> {
                    if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
                    else out.append(c);
                }
            }
        }
        return out.append('"').toString();
    }

    /** The simple class name of what an admin future failed with, or "ok". */
    static String outcome(org.apache.kafka.common.KafkaFuture<?> future) {
        try {
            future.get();
            return "ok";
        } catch (java.util.concurrent.ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "InterruptedException";
        }
    }
}

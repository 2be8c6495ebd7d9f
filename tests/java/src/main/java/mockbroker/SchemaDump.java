package mockbroker;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.types.BoundField;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.TaggedFields;
import org.apache.kafka.common.protocol.types.Type;

/**
 * The wire schemas kafka-clients itself encodes and decodes, per API key and version, as
 * lines of "name : [nullable ]TYPE" (nested fields indented), for
 * tests/java/test_bundled_schemas.py to compare with messages/schemas/.
 *
 * <pre>
 * SchemaDump API_KEY...
 * </pre>
 */
public final class SchemaDump {
    private SchemaDump() {}

    public static void main(String[] args) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        for (String arg : args) {
            ApiKeys key = ApiKeys.forId(Integer.parseInt(arg));
            Map<String, Object> versions = new TreeMap<>();
            for (short v = key.oldestVersion(); v <= key.latestVersion(true); v++) {
                versions.put("request v" + v, lines(key.messageType.requestSchemas()[v]));
                versions.put("response v" + v, lines(key.messageType.responseSchemas()[v]));
            }
            out.put(arg, versions);
        }
        System.out.println(Json.of(out));
    }

    static List<String> lines(Schema schema) throws Exception {
        List<String> out = new ArrayList<>();
        dump(schema, "", out);
        return out;
    }

    static void dump(Schema schema, String indent, List<String> out) throws Exception {
        for (BoundField field : schema.fields()) {
            Type type = field.def.type;
            if (type instanceof TaggedFields tagged) {
                out.add(indent + "_tagged_fields");
                Field fields = TaggedFields.class.getDeclaredField("fields");
                fields.setAccessible(true);
                @SuppressWarnings("unchecked")
                Map<Integer, org.apache.kafka.common.protocol.types.Field> byTag =
                    (Map<Integer, org.apache.kafka.common.protocol.types.Field>) fields.get(tagged);
                for (var entry : byTag.entrySet()) {
                    out.add(indent + "  tag " + entry.getKey() + " " + entry.getValue().name);
                    nested(entry.getValue().type, indent + "    ", out);
                }
                continue;
            }
            out.add(indent + field.def.name + " : " + (type.isNullable() ? "nullable " : "") + name(type));
            nested(type, indent + "  ", out);
        }
    }

    static void nested(Type type, String indent, List<String> out) throws Exception {
        if (type instanceof Schema schema) {
            dump(schema, indent, out);
        } else if (type.arrayElementType().isPresent() && type.arrayElementType().get() instanceof Schema schema) {
            dump(schema, indent, out);
        }
    }

    static String name(Type type) {
        if (type instanceof Schema) return "STRUCT";
        if (type.arrayElementType().isPresent()) {
            Type element = type.arrayElementType().get();
            return element instanceof Schema ? "ARRAY" : "ARRAY<" + element + ">";
        }
        return type.toString();
    }
}

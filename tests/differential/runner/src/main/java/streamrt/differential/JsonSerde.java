package streamrt.differential;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/** Values are JSON scalars (strings, integers) as streamrt's "json" serde writes them; a null
 *  value is a tombstone. Integers are read back as Long so the built-ins see one number type. */
public final class JsonSerde implements Serde<Object> {
    static final ObjectMapper MAPPER = new ObjectMapper();

    @Override
    public Serializer<Object> serializer() {
        return (topic, value) -> {
            if (value == null) {
                return null;
            }
            try {
                return MAPPER.writeValueAsBytes(value);
            } catch (IOException e) {
                throw new SerializationException(e);
            }
        };
    }

    @Override
    public Deserializer<Object> deserializer() {
        return (topic, data) -> {
            if (data == null) {
                return null;
            }
            try {
                Object v = MAPPER.readValue(data, Object.class);
                return v instanceof Integer ? Long.valueOf((Integer) v) : v;
            } catch (IOException e) {
                throw new SerializationException(e);
            }
        };
    }
}

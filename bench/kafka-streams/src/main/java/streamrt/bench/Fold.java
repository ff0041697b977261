package streamrt.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The per-record work of every workload, the same as bench/_peers_workloads.py and
 * streamrt/deploy/session_profiles.py, so the Python harness verifies this app's output with
 * the same checks as every other contender (it compares parsed JSON, not bytes).
 */
final class Fold {
    static final int RECENT_PAGES = 50;
    static final String ATTRIBUTES = "x".repeat(2048);
    static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private Fold() {}

    static JsonNode parse(byte[] raw) {
        try {
            return JSON.readTree(raw);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static byte[] write(JsonNode node) {
        try {
            return JSON.writeValueAsBytes(node);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** session_profiles.new_profile(), keys in the same order. */
    static ObjectNode newProfile() {
        ObjectNode p = NODES.objectNode();
        p.put("clicks", 0);
        p.set("pages", NODES.objectNode());
        p.set("recent", NODES.arrayNode());
        p.set("first_ts", NullNode.getInstance());
        p.set("last_ts", NullNode.getInstance());
        p.put("attributes", ATTRIBUTES);
        return p;
    }

    /** session_profiles.add_click(user, click, profile). */
    static ObjectNode addClick(JsonNode click, ObjectNode profile) {
        JsonNode pageNode = click.get("page");
        String page = pageNode == null ? "?" : pythonStr(pageNode);
        JsonNode ts = click.has("ts") ? click.get("ts") : NullNode.getInstance();
        profile.put("clicks", profile.get("clicks").asLong() + 1);
        ObjectNode pages = (ObjectNode) profile.get("pages");
        JsonNode seen = pages.get(page);
        pages.put(page, seen == null ? 1 : seen.asLong() + 1);
        ArrayNode recent = NODES.arrayNode();
        recent.add(page);
        for (JsonNode old : profile.get("recent")) {
            if (recent.size() >= RECENT_PAGES) {
                break;
            }
            recent.add(old);
        }
        profile.set("recent", recent);
        if (profile.get("first_ts").isNull()) {
            profile.set("first_ts", ts);
        }
        profile.set("last_ts", ts);
        return profile;
    }

    /** Python's str() of a JSON scalar (what add_click does to the page). */
    static String pythonStr(JsonNode node) {
        if (node.isTextual()) {
            return node.asText();
        }
        if (node.isNull()) {
            return "None";
        }
        if (node.isBoolean()) {
            return node.asBoolean() ? "True" : "False";
        }
        if (node.isIntegralNumber()) {
            return node.bigIntegerValue().toString();
        }
        return node.toString(); // floats, lists and objects: not produced by the benchmarks
    }

    /** _peers_workloads.stateless_keep. */
    static boolean statelessKeep(JsonNode value) {
        return !"d".equals(value.get("kind").asText());
    }

    /** _peers_workloads.stateless_map. */
    static JsonNode statelessMap(JsonNode value) {
        ObjectNode out = NODES.objectNode();
        out.set("id", value.get("id"));
        out.set("user", value.get("user"));
        out.put("cents", value.get("amount").asLong() * 100);
        out.put("kind", value.get("kind").asText().toUpperCase(Locale.ROOT));
        return out;
    }

    /** _peers_workloads.words: str.lower().split(). */
    static List<String> words(String line) {
        List<String> out = new ArrayList<>();
        for (String w : line.toLowerCase(Locale.ROOT).trim().split("\\s+")) {
            if (!w.isEmpty()) {
                out.add(w);
            }
        }
        return out;
    }
}

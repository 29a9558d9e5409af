package io.replaycontract.flinkagents;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Protocol values as plain Java values: objects as maps, whole numbers as {@code Long}. */
final class Records {

    private Records() {}

    @SuppressWarnings("unchecked")
    static Map<String, Object> fromJson(JsonNode node) {
        if (!node.isObject()) {
            throw new IllegalArgumentException("a record must be a JSON object, got " + node);
        }
        return (Map<String, Object>) value(node);
    }

    static Object value(JsonNode node) {
        if (node == null || node.isNull()) {
            return null;
        }
        if (node.isIntegralNumber()) {
            return node.asLong();
        }
        if (node.isNumber()) {
            return node.asDouble();
        }
        if (node.isBoolean()) {
            return node.asBoolean();
        }
        if (node.isTextual()) {
            return node.asText();
        }
        if (node.isArray()) {
            List<Object> list = new ArrayList<>();
            node.forEach(item -> list.add(value(item)));
            return list;
        }
        Map<String, Object> map = new LinkedHashMap<>();
        Iterator<Map.Entry<String, JsonNode>> fields = node.fields();
        while (fields.hasNext()) {
            Map.Entry<String, JsonNode> field = fields.next();
            map.put(field.getKey(), value(field.getValue()));
        }
        return map;
    }
}

package dev.snowdrift.conformance;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Just enough JSON for the protocol's requests: objects, arrays, strings, numbers (as
 * {@code Double}: request numbers are counts and settings), booleans and {@link #NULL}.
 */
final class MiniJson {
    static final Object NULL = new Object() {
        @Override
        public String toString() {
            return "null";
        }
    };

    static final class Malformed extends Exception {
        private static final long serialVersionUID = 1L;

        Malformed(String message) {
            super(message);
        }
    }

    private final String s;
    private int at;

    private MiniJson(String s) {
        this.s = s;
    }

    static Object parse(String text) throws Malformed {
        MiniJson p = new MiniJson(text);
        Object v = p.value();
        p.space();
        if (p.at != text.length()) {
            throw new Malformed("the request is not one JSON value: more text at byte " + p.at);
        }
        return v;
    }

    /** {@code v} (a String, Number, Boolean or null) as JSON. */
    static String write(Object v) {
        if (v == null || v == NULL) {
            return "null";
        }
        if (v instanceof Double d && d == Math.rint(d) && Math.abs(d) < 1e15) {
            return Long.toString(d.longValue());
        }
        if (v instanceof Number || v instanceof Boolean) {
            return v.toString();
        }
        String str = v.toString();
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < str.length(); i++) {
            char c = str.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    private Malformed error(String why) {
        return new Malformed("the request is not JSON at byte " + at + ": " + why);
    }

    private void space() {
        while (at < s.length() && Character.isWhitespace(s.charAt(at))) {
            at++;
        }
    }

    private Object value() throws Malformed {
        space();
        if (at >= s.length()) {
            throw error("it ends early");
        }
        char c = s.charAt(at);
        if (c == '{') {
            at++;
            Map<String, Object> m = new LinkedHashMap<>();
            space();
            if (peek('}')) {
                return m;
            }
            do {
                space();
                if (!(value() instanceof String key)) {
                    throw error("a key must be a string");
                }
                space();
                if (!peek(':')) {
                    throw error("expected ':'");
                }
                m.put(key, value());
                space();
            } while (peek(','));
            if (!peek('}')) {
                throw error("expected '}'");
            }
            return m;
        }
        if (c == '[') {
            at++;
            List<Object> l = new ArrayList<>();
            space();
            if (peek(']')) {
                return l;
            }
            do {
                l.add(value());
                space();
            } while (peek(','));
            if (!peek(']')) {
                throw error("expected ']'");
            }
            return l;
        }
        if (c == '"') {
            at++;
            StringBuilder b = new StringBuilder();
            while (at < s.length() && s.charAt(at) != '"') {
                char ch = s.charAt(at++);
                if (ch == '\\' && at < s.length()) {
                    char e = s.charAt(at++);
                    switch (e) {
                        case 'n' -> b.append('\n');
                        case 't' -> b.append('\t');
                        case 'r' -> b.append('\r');
                        case 'b' -> b.append('\b');
                        case 'f' -> b.append('\f');
                        case 'u' -> {
                            if (at + 4 > s.length()) {
                                throw error("a \\u escape is cut short");
                            }
                            b.append((char) Integer.parseInt(s.substring(at, at + 4), 16));
                            at += 4;
                        }
                        default -> b.append(e);
                    }
                } else {
                    b.append(ch);
                }
            }
            if (!peek('"')) {
                throw error("a string is not closed");
            }
            return b.toString();
        }
        for (String[] w : new String[][] {{"true"}, {"false"}, {"null"}}) {
            if (s.startsWith(w[0], at)) {
                at += w[0].length();
                return w[0].equals("null") ? NULL : Boolean.valueOf(w[0]);
            }
        }
        int start = at;
        while (at < s.length() && "+-0123456789.eE".indexOf(s.charAt(at)) >= 0) {
            at++;
        }
        try {
            return Double.valueOf(s.substring(start, at));
        } catch (NumberFormatException e) {
            throw error("unexpected character '" + c + "'");
        }
    }

    private boolean peek(char c) {
        if (at < s.length() && s.charAt(at) == c) {
            at++;
            return true;
        }
        return false;
    }
}

package dev.snowdrift.client;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON reader (RFC 8259) for the servers' answers, so the client needs nothing beyond
 * the JDK. Objects come back as {@code Map<String, Object>}, arrays as {@code List<Object>},
 * strings as {@code String}, numbers as {@link Num} (the text, so 64-bit values lose nothing),
 * {@code true}/{@code false} as {@code Boolean}, {@code null} as {@link #NULL}. Anything else,
 * including trailing bytes or a body cut short, is a {@link Malformed}.
 */
final class Json {
    /** JSON's {@code null}, so that an absent key and a null one differ. */
    static final Object NULL = new Object() {
        @Override
        public String toString() {
            return "null";
        }
    };

    /** Nesting bound: an answer nested deeper is refused rather than exhaust the stack. */
    private static final int MAX_DEPTH = 64;

    /** A JSON number as written. */
    record Num(String text) {
        /**
         * The number as a whole number, or null when it has a fraction or an exponent.
         */
        BigInteger integer() {
            for (int i = 0; i < text.length(); i++) {
                char c = text.charAt(i);
                if (c == '.' || c == 'e' || c == 'E') {
                    return null;
                }
            }
            return new BigInteger(text);
        }
    }

    /** Text that is not JSON, with where and why. */
    static final class Malformed extends Exception {
        private static final long serialVersionUID = 1L;

        Malformed(String message) {
            super(message);
        }
    }

    private final String s;
    private int at;

    private Json(String s) {
        this.s = s;
    }

    /** The value {@code text} holds, which must be the whole of it. */
    static Object parse(String text) throws Malformed {
        Json p = new Json(text);
        p.space();
        Object v = p.value(0);
        p.space();
        if (p.at != text.length()) {
            throw p.error("more text after the JSON value");
        }
        return v;
    }

    private Malformed error(String why) {
        if (at >= s.length()) {
            return new Malformed("not JSON: the text ends early (" + why + ")");
        }
        return new Malformed("not JSON at byte " + at + ": " + why);
    }

    private void space() {
        while (at < s.length()) {
            char c = s.charAt(at);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            at++;
        }
    }

    private Object value(int depth) throws Malformed {
        if (depth > MAX_DEPTH) {
            throw error("nested deeper than " + MAX_DEPTH);
        }
        if (at >= s.length()) {
            throw error("a value was expected");
        }
        char c = s.charAt(at);
        switch (c) {
            case '{':
                return object(depth);
            case '[':
                return array(depth);
            case '"':
                return string();
            case 't':
                word("true");
                return Boolean.TRUE;
            case 'f':
                word("false");
                return Boolean.FALSE;
            case 'n':
                word("null");
                return NULL;
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw error("unexpected character '" + c + "'");
        }
    }

    private void word(String w) throws Malformed {
        if (!s.startsWith(w, at)) {
            throw error("expected " + w);
        }
        at += w.length();
    }

    private Map<String, Object> object(int depth) throws Malformed {
        at++;
        Map<String, Object> m = new LinkedHashMap<>();
        space();
        if (at < s.length() && s.charAt(at) == '}') {
            at++;
            return m;
        }
        while (true) {
            space();
            if (at >= s.length() || s.charAt(at) != '"') {
                throw error("expected a key in quotes");
            }
            String key = string();
            space();
            expect(':');
            space();
            Object v = value(depth + 1);
            if (m.put(key, v) != null) {
                throw error("key \"" + key + "\" given twice");
            }
            space();
            if (at < s.length() && s.charAt(at) == ',') {
                at++;
                continue;
            }
            expect('}');
            return m;
        }
    }

    private List<Object> array(int depth) throws Malformed {
        at++;
        List<Object> l = new ArrayList<>();
        space();
        if (at < s.length() && s.charAt(at) == ']') {
            at++;
            return l;
        }
        while (true) {
            space();
            l.add(value(depth + 1));
            space();
            if (at < s.length() && s.charAt(at) == ',') {
                at++;
                continue;
            }
            expect(']');
            return l;
        }
    }

    private void expect(char c) throws Malformed {
        if (at >= s.length() || s.charAt(at) != c) {
            throw error("expected '" + c + "'");
        }
        at++;
    }

    private String string() throws Malformed {
        at++;
        StringBuilder b = new StringBuilder();
        while (true) {
            if (at >= s.length()) {
                throw error("a string is not closed");
            }
            char c = s.charAt(at++);
            if (c == '"') {
                return b.toString();
            }
            if (c < 0x20) {
                throw error("a control character inside a string");
            }
            if (c != '\\') {
                b.append(c);
                continue;
            }
            if (at >= s.length()) {
                throw error("a string is not closed");
            }
            char e = s.charAt(at++);
            switch (e) {
                case '"': b.append('"'); break;
                case '\\': b.append('\\'); break;
                case '/': b.append('/'); break;
                case 'b': b.append('\b'); break;
                case 'f': b.append('\f'); break;
                case 'n': b.append('\n'); break;
                case 'r': b.append('\r'); break;
                case 't': b.append('\t'); break;
                case 'u':
                    if (at + 4 > s.length()) {
                        throw error("a \\u escape is cut short");
                    }
                    int code = 0;
                    for (int k = 0; k < 4; k++) {
                        int d = Character.digit(s.charAt(at++), 16);
                        if (d < 0) {
                            throw error("a \\u escape with a non-hex digit");
                        }
                        code = code * 16 + d;
                    }
                    b.append((char) code);
                    break;
                default:
                    throw error("unknown escape \\" + e);
            }
        }
    }

    private Num number() throws Malformed {
        int start = at;
        if (s.charAt(at) == '-') {
            at++;
        }
        if (at >= s.length() || !digit(s.charAt(at))) {
            throw error("a number needs a digit");
        }
        if (s.charAt(at) == '0') {
            at++;
        } else {
            while (at < s.length() && digit(s.charAt(at))) {
                at++;
            }
        }
        if (at < s.length() && s.charAt(at) == '.') {
            at++;
            if (at >= s.length() || !digit(s.charAt(at))) {
                throw error("a fraction needs a digit");
            }
            while (at < s.length() && digit(s.charAt(at))) {
                at++;
            }
        }
        if (at < s.length() && (s.charAt(at) == 'e' || s.charAt(at) == 'E')) {
            at++;
            if (at < s.length() && (s.charAt(at) == '+' || s.charAt(at) == '-')) {
                at++;
            }
            if (at >= s.length() || !digit(s.charAt(at))) {
                throw error("an exponent needs a digit");
            }
            while (at < s.length() && digit(s.charAt(at))) {
                at++;
            }
        }
        return new Num(s.substring(start, at));
    }

    private static boolean digit(char c) {
        return c >= '0' && c <= '9';
    }
}

package dev.snowdrift.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** README's Java block, compiled and run as a user would, against a real server. */
class ReadmeTest {
    @TempDir
    Path dir;

    static String block() throws Exception {
        String readme = Files.readString(Path.of("../../README.md"));
        int start = readme.indexOf("<!-- java-client.java -->");
        int end = readme.indexOf("<!-- /java-client.java -->");
        assertTrue(start >= 0 && end > start, "README.md has the java-client.java block");
        String block = readme.substring(start, end);
        return block.substring(block.indexOf("```java\n") + 8, block.lastIndexOf("```"));
    }

    @Test
    void readmeExampleRuns() throws Exception {
        Path src = dir.resolve("Example.java");
        Files.writeString(src, block());
        String classpath = System.getProperty("java.class.path");
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        int compiled = javac.run(null, null, null, "-Xlint:all", "-Werror", "-cp", classpath,
                "-d", dir.toString(), src.toString());
        assertEquals(0, compiled, "README's Java block compiles");

        Path home = Files.createDirectory(dir.resolve("server"));
        try (Server s = Server.start(home, Server.config(home, Server.GENERATORS))) {
            s.createTag("order", 1000);
            ProcessBuilder pb = new ProcessBuilder(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp", dir + java.io.File.pathSeparator + classpath, "Example")
                    .redirectErrorStream(true);
            pb.environment().put("SNOWDRIFT_ENDPOINTS", s.url);
            pb.environment().put("SNOWDRIFT_TOKEN", Server.TOKEN);
            Process p = pb.start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            assertEquals(0, p.waitFor(), out);
            List<String> words = List.of(out.split(" "));
            assertEquals(4, words.size(), out);
            assertTrue(Long.parseLong(words.get(0)) > 0, out);
            assertEquals("500", words.get(1), out);
            assertEquals(36, words.get(2).length(), out);
            // uuid5(dns, "python.org")
            assertEquals("886313e1-3b8a-5372-9b90-0c9aee199e5d", words.get(3), out);
        }
    }
}

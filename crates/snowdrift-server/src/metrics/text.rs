//! Prometheus' text format, written straight into the response: for the series that exist
//! once per segment tag or generator, which would cost far more as registered metrics.

use std::fmt::{self, Display, Write};

use axum::body::Bytes;

/// About how large each piece of [`Out`] grows before the next one starts.
const CHUNK: usize = 64 * 1024;

/// The response text in pieces of about 64 KiB. With 10,000 tags the text is megabytes; one
/// buffer that size (and the doubling copies that grow it) is what allocators keep as RSS
/// long after a scrape, where pieces this size are reused by the next one.
#[derive(Debug, Default)]
pub struct Out {
    done: Vec<Bytes>,
    current: String,
}

impl Out {
    /// Appends `text`, starting a new piece first when this one is full.
    pub fn push_str(&mut self, text: &str) {
        if self.current.len() + text.len() > CHUNK && !self.current.is_empty() {
            let full = std::mem::replace(&mut self.current, String::with_capacity(CHUNK));
            self.done.push(Bytes::from(full));
        }
        if self.current.capacity() == 0 {
            self.current.reserve(CHUNK);
        }
        self.current.push_str(text);
    }

    /// The pieces, in order.
    pub fn into_chunks(mut self) -> Vec<Bytes> {
        if !self.current.is_empty() {
            self.done.push(Bytes::from(self.current));
        }
        self.done
    }
}

impl Write for Out {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        self.push_str(text);
        Ok(())
    }
}

/// The `# HELP` and `# TYPE` lines that start metric family `name`.
pub fn family(out: &mut Out, name: &str, kind: &str, help: &str) {
    // Writing to an Out cannot fail.
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// One sample: `name{label="value",...} value`, label values escaped as the format wants.
pub fn sample(out: &mut Out, name: &str, labels: &[(&str, &str)], value: impl Display) {
    out.push_str(name);
    if !labels.is_empty() {
        out.push_str("{");
        for (i, (label, text)) in labels.iter().enumerate() {
            if i > 0 {
                out.push_str(",");
            }
            out.push_str(label);
            out.push_str("=\"");
            escape(out, text);
            out.push_str("\"");
        }
        out.push_str("}");
    }
    let _ = writeln!(out, " {value}");
}

/// Writes `text` as a label value: backslash, quote and newline escaped.
fn escape(out: &mut Out, text: &str) {
    let mut rest = text;
    while let Some(at) = rest.find(['\\', '"', '\n']) {
        out.push_str(&rest[..at]);
        out.push_str(match rest.as_bytes()[at] {
            b'\\' => "\\\\",
            b'"' => "\\\"",
            _ => "\\n",
        });
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// The pieces joined: what the client receives.
    pub fn joined(out: Out) -> String {
        let bytes: Vec<u8> = out.into_chunks().concat();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn samples_escape_their_label_values() {
        let mut out = Out::default();
        family(&mut out, "m_total", "counter", "What m counts.");
        sample(
            &mut out,
            "m_total",
            &[("tag", "a\"b\\c\nd"), ("kind", "segment")],
            7,
        );
        sample(&mut out, "m", &[], 1.5);
        assert_eq!(
            joined(out),
            "# HELP m_total What m counts.\n# TYPE m_total counter\n\
             m_total{tag=\"a\\\"b\\\\c\\nd\",kind=\"segment\"} 7\nm 1.5\n"
        );
    }

    #[test]
    fn long_text_comes_in_pieces_of_about_a_chunk() {
        let mut out = Out::default();
        let line = format!("{}\n", "x".repeat(99));
        for _ in 0..3_000 {
            out.push_str(&line);
        }
        let chunks = out.into_chunks();
        assert_eq!(chunks.len(), (3_000 * 100usize).div_ceil(CHUNK / 100 * 100));
        assert!(
            chunks
                .iter()
                .all(|c| c.len() <= CHUNK && c.len() % 100 == 0)
        );
        assert_eq!(chunks.concat(), line.repeat(3_000).into_bytes());
    }
}

//! Prometheus' text format, written straight into the response: for the series that exist
//! once per segment tag or generator, which would cost far more as registered metrics.

use std::fmt::{Display, Write};

/// The `# HELP` and `# TYPE` lines that start metric family `name`.
pub fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    // Writing to a String cannot fail.
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// One sample: `name{label="value",...} value`, label values escaped as the format wants.
pub fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: impl Display) {
    out.push_str(name);
    if !labels.is_empty() {
        out.push('{');
        for (i, (label, text)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(label);
            out.push_str("=\"");
            escape(out, text);
            out.push('"');
        }
        out.push('}');
    }
    let _ = writeln!(out, " {value}");
}

fn escape(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_escape_their_label_values() {
        let mut out = String::new();
        family(&mut out, "m_total", "counter", "What m counts.");
        sample(
            &mut out,
            "m_total",
            &[("tag", "a\"b\\c\nd"), ("kind", "segment")],
            7,
        );
        sample(&mut out, "m", &[], 1.5);
        assert_eq!(
            out,
            "# HELP m_total What m counts.\n# TYPE m_total counter\n\
             m_total{tag=\"a\\\"b\\\\c\\nd\",kind=\"segment\"} 7\nm 1.5\n"
        );
    }
}

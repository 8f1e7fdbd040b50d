//! Reading and writing histories as JSON lines.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead, Write};

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

use super::{History, HistoryError};

/// One line of the file.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    client: Cow<'a, str>,
    invoke: u64,
    complete: u64,
    ids: Ids,
}

/// The `ids` array: decimal strings or numbers.
struct Ids(Vec<u64>);

/// One ID: a decimal string or a non-negative integer.
struct Id(u64);

impl<'de> Deserialize<'de> for Ids {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ids;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of IDs")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Ids, A::Error> {
                let mut ids = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(Id(id)) = seq.next_element()? {
                    ids.push(id);
                }
                Ok(Ids(ids))
            }
        }
        d.deserialize_seq(V)
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an ID: a decimal string or a non-negative integer below 2^64")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
                Ok(Id(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
                u64::try_from(v)
                    .map(Id)
                    .map_err(|_| E::custom(format!("ID {v} is negative")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
                v.parse().map(Id).map_err(|_| {
                    E::custom(format!(
                        "ID {v:?} is not a decimal number below 2^64 (no sign, no spaces)"
                    ))
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl History {
    /// Reads a history of JSON lines (see the [module](super) for the format). Stops at
    /// the first malformed line, naming it.
    pub fn from_reader(reader: impl BufRead) -> Result<Self, HistoryError> {
        let mut history = History::new();
        history.read(reader, "")?;
        Ok(history)
    }

    /// Adds the operations of another history file (one per client or per process, all
    /// recorded on the same clock) to this one; reports name them by `file` and line.
    pub fn read(&mut self, mut reader: impl BufRead, file: &str) -> Result<(), HistoryError> {
        let file = match self.files.iter().position(|f| f == file) {
            Some(i) => i,
            None => {
                self.files.push(file.to_string());
                self.files.len() - 1
            }
        };
        let mut text = String::new();
        let mut line = 0u64;
        loop {
            text.clear();
            line += 1;
            match reader.read_line(&mut text) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                    return Err(HistoryError::Malformed {
                        line,
                        reason: "not UTF-8 text".to_string(),
                    });
                }
                Err(e) => return Err(e.into()),
            }
            let trimmed = text.trim();
            if trimmed.is_empty() {
                continue;
            }
            let op: Line<'_> =
                serde_json::from_str(trimmed).map_err(|e| HistoryError::Malformed {
                    line,
                    reason: describe(&e),
                })?;
            self.push_at(file, line, &op.client, op.invoke, op.complete, op.ids.0)?;
        }
    }

    /// Writes the history as JSON lines, IDs as decimal strings; [`History::from_reader`]
    /// reads it back.
    pub fn write_jsonl(&self, mut out: impl Write) -> io::Result<()> {
        for op in &self.ops {
            let client = serde_json::to_string(&self.clients[op.client])?;
            write!(
                out,
                r#"{{"client":{client},"invoke":{},"complete":{},"ids":["#,
                op.invoke, op.complete
            )?;
            for (i, id) in self.ids_of(op).iter().enumerate() {
                let sep = if i == 0 { "" } else { "," };
                write!(out, r#"{sep}"{id}""#)?;
            }
            out.write_all(b"]}\n")?;
        }
        Ok(())
    }
}

/// serde_json's message with its position given as a column only: the line is always 1
/// to it, and the caller names the file's line.
fn describe(e: &serde_json::Error) -> String {
    let message = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    match message.strip_suffix(&suffix) {
        Some(m) => format!(
            "{m} (column {}); expected {{\"client\": \"...\", \"invoke\": <ns>, \"complete\": <ns>, \"ids\": [\"...\", ...]}}",
            e.column()
        ),
        None => message,
    }
}

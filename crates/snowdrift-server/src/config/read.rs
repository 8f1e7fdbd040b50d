//! The serde deserializer of the [`Config`](super::Config) over the tree: it types every
//! value by what its key takes, without coercion: a whole number for an integer key (not
//! `1.9`, not `"500"`, not `true`), `true` or `false` for a switch, text in quotes for a text
//! key. A variable's text is read the same way, as its key asks: `5` for an integer key is
//! 5, for a text key the text `5`, and `yes` for a switch is refused. Each error is placed at
//! the key it is about, with where that key was set.

use std::fmt;

use serde::de::{self, DeserializeSeed, Expected, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use toml::de::DeValue;

use super::origin::Origin;
use super::tree::{File, Node, Scalar, Value, node_of};

/// An error while reading the tree, placed at the key it is about by the innermost table or
/// list that read that key.
#[derive(Debug)]
pub(super) struct ReadError {
    pub(super) message: String,
    /// The key's path and where it was set.
    pub(super) at: Option<(String, Option<Origin>)>,
    /// The key does not exist in its table.
    pub(super) unknown_key: bool,
}

impl ReadError {
    fn place(mut self, path: &str, origin: Option<&Origin>) -> Self {
        if self.at.is_none() {
            self.at = Some((path.to_string(), origin.cloned()));
        }
        self
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ReadError {}

impl de::Error for ReadError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        ReadError {
            message: message.to_string(),
            at: None,
            unknown_key: false,
        }
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        let close = expected
            .iter()
            .filter(|k| strsim::damerau_levenshtein(field, k) <= 2 || k.contains(field))
            .min_by_key(|k| strsim::damerau_levenshtein(field, k));
        let hint = close.map_or_else(String::new, |k| format!(" (did you mean {k}?)"));
        ReadError {
            message: format!(
                "no such key{hint}; the keys here are {}",
                expected.join(", ")
            ),
            at: None,
            unknown_key: true,
        }
    }
}

/// The serde deserializer over one node, with its path for messages.
pub(super) struct Reader {
    node: Node,
    path: String,
}

impl Reader {
    pub(super) fn new(root: Node) -> Self {
        Reader {
            node: root,
            path: String::new(),
        }
    }

    /// What this node is, for a message saying it is not what the key takes.
    fn found(&self) -> String {
        match &self.node.value {
            Value::Scalar(Scalar::Bool(b)) => format!("{b} is true or false (a switch)"),
            Value::Scalar(Scalar::Int(n)) => format!("{n} is a whole number"),
            Value::Scalar(Scalar::Float(x)) => format!("{x} is a number with a fraction"),
            Value::Scalar(Scalar::Str(s)) => format!("{s:?} is text (in quotes)"),
            Value::Scalar(Scalar::Date(d)) => format!("{d} is a TOML date"),
            Value::Scalar(Scalar::Huge(n)) => format!("{n} is a number beyond every range"),
            Value::Text(t) => format!("{t:?} is given"),
            Value::Table(_) => "a table is given".into(),
            Value::List(_) => "a list is given".into(),
            Value::Gap => "nothing is given".into(),
        }
    }

    /// The error of a value that is not what its key takes (`takes`: "a whole number ...").
    fn wrong(&self, takes: &str) -> ReadError {
        let takes = article(takes);
        let mut message = match &self.node.value {
            Value::Text(t) => format!("{t:?} is not {takes}"),
            _ => format!("{}; this key takes {takes}", self.found()),
        };
        // Say how to write what was meant, when that is clear.
        let text_like = !takes.starts_with("a whole number")
            && !takes.starts_with("a number")
            && !takes.starts_with("true or false")
            && !takes.starts_with("a list")
            && !takes.starts_with("a table");
        match &self.node.value {
            Value::Scalar(Scalar::Str(s)) if !text_like && bare(s, &takes) => {
                message.push_str(&format!(": write {s} without quotes"));
            }
            Value::Scalar(
                Scalar::Int(_) | Scalar::Float(_) | Scalar::Bool(_) | Scalar::Huge(_),
            ) if text_like => {
                message.push_str(": write it in quotes");
            }
            Value::Text(_) if takes.starts_with("a list") => {
                if let Some(Origin::Env(name)) = &self.node.origin {
                    message.push_str(&format!(
                        ", written as in TOML ([\"a\", \"b\"]), or set its entries one by one \
                         as {name}__0, {name}__1, ..."
                    ));
                }
            }
            Value::Text(_) if takes.starts_with("a table") => {
                if let Some(Origin::Env(name)) = &self.node.origin {
                    message = format!(
                        "{} names a table, not a value: set its keys one by one as \
                         {name}__<KEY>",
                        self.path
                    );
                }
            }
            _ => {}
        }
        de::Error::custom(message)
    }

    /// A whole number within `min..=max`, or the error saying what the key takes.
    fn whole(&self, min: i128, max: i128, takes: &str) -> Result<i128, ReadError> {
        let n = match &self.node.value {
            Value::Scalar(Scalar::Int(n)) => *n,
            Value::Text(t) => t.trim().parse::<i128>().map_err(|_| self.wrong(takes))?,
            _ => return Err(self.wrong(takes)),
        };
        if n < min || n > max {
            return Err(de::Error::custom(format!(
                "{n} is out of range; this key takes {takes}"
            )));
        }
        Ok(n)
    }

    fn text<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        match self.node.value {
            Value::Scalar(Scalar::Str(s)) | Value::Text(s) => visitor.visit_string(s),
            // A TOML date (`epoch = 2024-01-01`) is the text it was written as.
            Value::Scalar(Scalar::Date(d)) => visitor.visit_string(d),
            _ => Err(self.wrong(&expecting(&visitor))),
        }
    }
}

/// `takes` with an article, so that "socket address" reads "a socket address".
fn article(takes: &str) -> String {
    let plain = ["a ", "an ", "one of ", "true or false", "text"];
    if plain.iter().any(|p| takes.starts_with(p)) {
        takes.to_string()
    } else {
        format!("a {takes}")
    }
}

/// Whether a quoted value would be what its key `takes`, written without the quotes.
fn bare(s: &str, takes: &str) -> bool {
    if takes.starts_with("true or false") {
        s == "true" || s == "false"
    } else if takes.starts_with("a whole number") {
        s.parse::<i128>().is_ok()
    } else {
        s.parse::<f64>().is_ok_and(f64::is_finite)
    }
}

/// What a visitor says it expects, in the messages' words.
fn expecting(visitor: &dyn Expected) -> String {
    match visitor.to_string().as_str() {
        "a string" | "string" => "text in quotes".into(),
        "path string" => "a path in quotes".into(),
        other => other.into(),
    }
}

macro_rules! whole {
    ($method:ident, $visit:ident, $ty:ty, $takes:expr) => {
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
            let n = self.whole(<$ty>::MIN as i128, <$ty>::MAX as i128, $takes)?;
            // In range, as `whole` checked.
            visitor.$visit(n as $ty)
        }
    };
}

impl<'de> de::Deserializer<'de> for Reader {
    type Error = ReadError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        match self.node.value {
            Value::Scalar(Scalar::Bool(b)) => visitor.visit_bool(b),
            Value::Scalar(Scalar::Int(n)) => match i64::try_from(n) {
                Ok(n) => visitor.visit_i64(n),
                Err(_) => visitor.visit_i128(n),
            },
            Value::Scalar(Scalar::Float(x)) => visitor.visit_f64(x),
            Value::Scalar(Scalar::Str(s) | Scalar::Date(s) | Scalar::Huge(s)) | Value::Text(s) => {
                visitor.visit_string(s)
            }
            Value::Table(_) => self.deserialize_map(visitor),
            Value::List(_) => self.deserialize_seq(visitor),
            Value::Gap => Err(self.wrong("a value")),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        match &self.node.value {
            Value::Scalar(Scalar::Bool(b)) => visitor.visit_bool(*b),
            Value::Text(t) if t == "true" => visitor.visit_bool(true),
            Value::Text(t) if t == "false" => visitor.visit_bool(false),
            _ => Err(self.wrong("true or false")),
        }
    }

    whole!(deserialize_u8, visit_u8, u8, "a whole number from 0 to 255");
    whole!(
        deserialize_u16,
        visit_u16,
        u16,
        "a whole number from 0 to 65535"
    );
    whole!(
        deserialize_u32,
        visit_u32,
        u32,
        "a whole number from 0 to 4294967295"
    );
    whole!(
        deserialize_u64,
        visit_u64,
        u64,
        "a whole number (0 or more)"
    );
    whole!(
        deserialize_i8,
        visit_i8,
        i8,
        "a whole number from -128 to 127"
    );
    whole!(
        deserialize_i16,
        visit_i16,
        i16,
        "a whole number from -32768 to 32767"
    );
    whole!(deserialize_i32, visit_i32, i32, "a whole number");
    whole!(deserialize_i64, visit_i64, i64, "a whole number");

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        match &self.node.value {
            // A whole number is a number: `prefetch_at = 1`.
            Value::Scalar(Scalar::Int(n)) => visitor.visit_f64(*n as f64),
            Value::Scalar(Scalar::Float(x)) => visitor.visit_f64(*x),
            Value::Text(t) => match t.trim().parse::<f64>() {
                Ok(x) => visitor.visit_f64(x),
                Err(_) => Err(self.wrong("a number")),
            },
            _ => Err(self.wrong("a number")),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        self.text(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        self.text(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        self.text(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        self.text(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        self.text(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        // TOML has no null: a key that is there has a value.
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, ReadError> {
        Err(self.wrong("nothing"))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        let items = match self.node.value {
            Value::List(items) => items,
            // A variable's list, written as in TOML: `["a", "b"]`.
            Value::Text(ref text) => match (DeValue::parse(text), &self.node.origin) {
                (Ok(parsed), Some(origin)) if matches!(parsed.get_ref(), DeValue::Array(_)) => {
                    let file = File {
                        path: "".into(),
                        text,
                    };
                    match node_of(parsed.get_ref(), 0, &file, Some(origin)).value {
                        Value::List(items) => items,
                        _ => return Err(self.wrong("a list")),
                    }
                }
                _ => return Err(self.wrong("a list")),
            },
            _ => return Err(self.wrong("a list")),
        };
        visitor.visit_seq(Items {
            items: items.into_iter().enumerate(),
            path: self.path,
        })
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        let Value::Table(keys) = self.node.value else {
            return Err(self.wrong("a table of keys"));
        };
        visitor.visit_map(Keys {
            keys: keys.into_iter(),
            next: None,
            path: self.path,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        match self.node.value {
            Value::Scalar(Scalar::Str(s)) | Value::Text(s) => {
                visitor.visit_enum(IntoDeserializer::<ReadError>::into_deserializer(s))
            }
            _ => Err(self.wrong(&expecting(&visitor))),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        self.text(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        visitor.visit_unit()
    }
}

/// A table's keys, for serde.
struct Keys {
    keys: std::collections::btree_map::IntoIter<String, (Option<Origin>, Node)>,
    next: Option<(String, Node)>,
    path: String,
}

impl<'de> MapAccess<'de> for Keys {
    type Error = ReadError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ReadError> {
        let Some((key, (key_origin, node))) = self.keys.next() else {
            return Ok(None);
        };
        let path = if self.path.is_empty() {
            key.clone()
        } else {
            format!("{}.{key}", self.path)
        };
        let value = seed
            .deserialize(IntoDeserializer::<ReadError>::into_deserializer(
                key.as_str(),
            ))
            .map_err(|e| e.place(&path, key_origin.as_ref()))?;
        self.next = Some((path, node));
        Ok(Some(value))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, ReadError> {
        let Some((path, node)) = self.next.take() else {
            return Err(de::Error::custom("a value was read before its key"));
        };
        let origin = node.origin.clone();
        seed.deserialize(Reader {
            node,
            path: path.clone(),
        })
        .map_err(|e| e.place(&path, origin.as_ref()))
    }
}

/// A list's entries, for serde.
struct Items {
    items: std::iter::Enumerate<std::vec::IntoIter<Node>>,
    path: String,
}

impl<'de> SeqAccess<'de> for Items {
    type Error = ReadError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, ReadError> {
        let Some((i, node)) = self.items.next() else {
            return Ok(None);
        };
        let path = format!("{}[{i}]", self.path);
        let origin = node.origin.clone();
        seed.deserialize(Reader {
            node,
            path: path.clone(),
        })
        .map(Some)
        .map_err(|e| e.place(&path, origin.as_ref()))
    }
}

//! The config as read, before serde: the file's tables and values with where each was
//! written, and the environment's and the flags' values over them as text, which `read`
//! then types by what each key takes.

use std::collections::BTreeMap;

use toml::de::{DeTable, DeValue};

use super::env::{Shown, Step};
use super::origin::{Origin, Origins};

/// A value of the file.
#[derive(Debug, Clone)]
pub(super) enum Scalar {
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    /// A TOML date or time, as written.
    Date(String),
    /// A number no key can hold (beyond 128 bits), as written.
    Huge(String),
}

#[derive(Debug, Clone)]
pub(super) enum Value {
    /// Keys, each with where the key itself was written.
    Table(BTreeMap<String, (Option<Origin>, Node)>),
    List(Vec<Node>),
    Scalar(Scalar),
    /// An environment variable's or a flag's text, typed by the key it sets.
    Text(String),
    /// An entry of a list that only later entries were given for.
    Gap,
}

/// A value and where it was set (`None`: a table made only to hold what a variable set).
#[derive(Debug, Clone)]
pub(super) struct Node {
    pub(super) value: Value,
    pub(super) origin: Option<Origin>,
}

impl Node {
    /// An empty root: no file.
    pub(super) fn root() -> Self {
        Node {
            value: Value::Table(BTreeMap::new()),
            origin: None,
        }
    }

    /// The tree of a parsed file named `path` whose text is `text`.
    pub(super) fn from_file(table: &DeTable<'_>, file: &File<'_>) -> Self {
        Node {
            value: Value::Table(table_of(table, file, None)),
            origin: None,
        }
    }

    /// Puts `value` at `path` (a variable's or a flag's), over what the file set there,
    /// making the tables and list entries on the way.
    pub(super) fn set(&mut self, path: &[Step], value: Node) -> Result<(), String> {
        set_in(self, path, 0, value)
    }

    /// Refuses a list with an entry missing (`SNOWDRIFT_GENERATOR__2__...` set, the file and
    /// environment giving no `generator[1]`).
    pub(super) fn check_gaps(&self, path: &mut Vec<Step>) -> Result<(), (String, Option<Origin>)> {
        match &self.value {
            Value::Table(keys) => {
                for (key, (_, node)) in keys {
                    path.push(Step::Key(key.clone()));
                    node.check_gaps(path)?;
                    path.pop();
                }
            }
            Value::List(items) => {
                for (i, node) in items.iter().enumerate() {
                    path.push(Step::Index(i));
                    if let Value::Gap = node.value {
                        let later = items[i..].iter().find_map(|n| n.origin.clone());
                        return Err((
                            format!(
                                "{} is not given, but a later entry of the list is; the \
                                 entries are numbered from 0 without gaps",
                                Shown(path),
                            ),
                            later,
                        ));
                    }
                    node.check_gaps(path)?;
                    path.pop();
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Records where every value and table was set.
    pub(super) fn record(&self, path: &mut Vec<Step>, origins: &mut Origins) {
        if let Some(origin) = &self.origin
            && !path.is_empty()
        {
            let is_value = match &self.value {
                Value::Table(_) => false,
                Value::List(items) => !items.iter().any(|n| matches!(n.value, Value::Table(_))),
                _ => true,
            };
            origins.insert(Shown(path).to_string(), origin.clone(), is_value);
        }
        match &self.value {
            Value::Table(keys) => {
                for (key, (_, node)) in keys {
                    path.push(Step::Key(key.clone()));
                    node.record(path, origins);
                    path.pop();
                }
            }
            Value::List(items) => {
                for (i, node) in items.iter().enumerate() {
                    path.push(Step::Index(i));
                    node.record(path, origins);
                    path.pop();
                }
            }
            _ => {}
        }
    }
}

fn set_in(node: &mut Node, path: &[Step], depth: usize, value: Node) -> Result<(), String> {
    let Some(step) = path.get(depth) else {
        *node = value;
        return Ok(());
    };
    let here = || Shown(&path[..depth]).to_string();
    match step {
        Step::Key(key) => {
            if let Value::Gap = node.value {
                node.value = Value::Table(BTreeMap::new());
            }
            let Value::Table(keys) = &mut node.value else {
                return Err(format!("{} is not a table, so it has no key {key}", here()));
            };
            let (_, child) = keys.entry(key.clone()).or_insert_with(|| {
                (
                    value.origin.clone(),
                    Node {
                        value: Value::Gap,
                        origin: None,
                    },
                )
            });
            set_in(child, path, depth + 1, value)
        }
        Step::Index(index) => {
            if let Value::Gap = node.value {
                node.value = Value::List(Vec::new());
            }
            let Value::List(items) = &mut node.value else {
                return Err(format!(
                    "{} is not a list, so it has no entry {index}",
                    here()
                ));
            };
            while items.len() <= *index {
                items.push(Node {
                    value: Value::Gap,
                    origin: None,
                });
            }
            set_in(&mut items[*index], path, depth + 1, value)
        }
    }
}

/// A config file's name and text, to turn byte offsets into line numbers.
pub(super) struct File<'a> {
    pub(super) path: std::sync::Arc<str>,
    pub(super) text: &'a str,
}

impl File<'_> {
    pub(super) fn at(&self, offset: usize) -> Origin {
        let before = self.text.get(..offset).unwrap_or(self.text);
        Origin::File {
            path: self.path.clone(),
            line: before.matches('\n').count() + 1,
        }
    }
}

fn table_of(
    table: &DeTable<'_>,
    file: &File<'_>,
    whole: Option<&Origin>,
) -> BTreeMap<String, (Option<Origin>, Node)> {
    table
        .iter()
        .map(|(key, value)| {
            let key_origin = match whole {
                // Keys of a list given as one value (a variable's `["a", "b"]`).
                Some(origin) => origin.clone(),
                None => file.at(key.span().start),
            };
            let node = node_of(value.get_ref(), value.span().start, file, whole);
            (key.get_ref().to_string(), (Some(key_origin), node))
        })
        .collect()
}

/// The node of a file's value at byte `offset`; with `whole`, every part of it is said to
/// come from there instead (a variable's value parsed as TOML).
pub(super) fn node_of(
    value: &DeValue<'_>,
    offset: usize,
    file: &File<'_>,
    whole: Option<&Origin>,
) -> Node {
    let value = match value {
        DeValue::String(s) => Value::Scalar(Scalar::Str(s.to_string())),
        DeValue::Integer(i) => match i128::from_str_radix(i.as_str(), i.radix()) {
            Ok(n) => Value::Scalar(Scalar::Int(n)),
            // Beyond i128 is beyond every key's range: keep it as written, refused as such.
            Err(_) => Value::Scalar(Scalar::Huge(i.to_string())),
        },
        DeValue::Float(x) => match x.as_str().parse::<f64>() {
            Ok(x) => Value::Scalar(Scalar::Float(x)),
            Err(_) => Value::Scalar(Scalar::Huge(x.to_string())),
        },
        DeValue::Boolean(b) => Value::Scalar(Scalar::Bool(*b)),
        DeValue::Datetime(d) => Value::Scalar(Scalar::Date(d.to_string())),
        DeValue::Array(items) => Value::List(
            items
                .iter()
                .map(|item| node_of(item.get_ref(), item.span().start, file, whole))
                .collect(),
        ),
        DeValue::Table(table) => Value::Table(table_of(table, file, whole)),
    };
    Node {
        value,
        origin: Some(whole.cloned().unwrap_or_else(|| file.at(offset))),
    }
}

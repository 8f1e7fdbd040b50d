//! Query strings read by hand, so every mistake gets the contract's JSON error naming the
//! parameter and what is allowed (axum's own rejections are plain text), on the fast path
//! and the router alike; and the bounds of a count, which gRPC's fields share.

use std::collections::HashMap;

use snowdrift_core::codec::IdFormat;

use crate::error::Error;

/// How `GET /v1/ids/{name}` writes its IDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `{"name", "ids": ["...", ...]}`.
    Ids,
    /// `{"name", "kind", "runs": [{"first": "...", "count", "stride"}]}`.
    Runs,
}

/// The parameters of a query string; unknown ones are refused.
pub struct Params(HashMap<String, String>);

impl Params {
    /// Parses `raw`, allowing only `allowed` names, each at most once.
    pub fn parse(raw: Option<&str>, allowed: &[&str]) -> Result<Self, Error> {
        utf8_values(raw.unwrap_or_default())?;
        let mut map = HashMap::new();
        for (key, value) in form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
            if !allowed.contains(&key.as_ref()) {
                return Err(Error::invalid(format!(
                    "unknown query parameter {key:?}; allowed: {}",
                    allowed.join(", ")
                )));
            }
            if map.insert(key.to_string(), value.into_owned()).is_some() {
                return Err(Error::invalid(format!(
                    "query parameter {key:?} is given twice"
                )));
            }
        }
        Ok(Self(map))
    }

    /// `count`: 1 (default) to `max`.
    pub fn count(&self, max: u64) -> Result<u64, Error> {
        let Some(text) = self.0.get("count") else {
            return Ok(1);
        };
        match text.parse::<u64>() {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(out_of_bounds("count", max, &crate::error::quoted(text))),
        }
    }

    /// `form`: `ids` (the default: one string per ID) or `runs` (64-bit IDs as runs).
    pub fn form(&self) -> Result<Form, Error> {
        match self.0.get("form").map(String::as_str) {
            None | Some("ids") => Ok(Form::Ids),
            Some("runs") => Ok(Form::Runs),
            Some(other) => Err(Error::invalid(format!(
                "form must be ids (one string per ID, the default) or runs (64-bit IDs as \
                 runs of first, count and stride), got {other:?}"
            ))),
        }
    }

    /// Parameter `name`, as sent (UTF-8), if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// `input`: the name a uuid3 or uuid5 generator makes the UUID of, as sent (UTF-8).
    pub fn input(&self) -> Option<&str> {
        self.get("input")
    }

    /// `format`: one of the 64-bit formats, plain or obfuscated, if given.
    pub fn format(&self) -> Result<Option<IdFormat>, Error> {
        crate::format::parse_optional(self.0.get("format").map(String::as_str))
    }
}

/// `value` of field `field` when it is 1 to `max`, else the error a query's `count` gets
/// for the same mistake (gRPC's `count` and `batch`).
pub(crate) fn bounded(field: &str, value: u64, max: u64) -> Result<u64, Error> {
    if (1..=max).contains(&value) {
        Ok(value)
    } else {
        Err(out_of_bounds(field, max, &value.to_string()))
    }
}

/// A count outside 1 to `max`; `got` is what was sent, as the message shows it.
fn out_of_bounds(field: &str, max: u64, got: &str) -> Error {
    Error::invalid(format!(
        "{field} must be a whole number from 1 to {max}, got {got}"
    ))
}

/// Refuses a value whose percent-decoded bytes are not UTF-8: `form_urlencoded` would put
/// U+FFFD in their place, and the request would be answered for text it did not send.
fn utf8_values(raw: &str) -> Result<(), Error> {
    for pair in raw.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = value.replace('+', " ");
        if percent_encoding::percent_decode_str(&value)
            .decode_utf8()
            .is_err()
        {
            return Err(Error::invalid(format!(
                "query parameter {} is not UTF-8 once percent-decoded; send text as UTF-8",
                crate::error::quoted(key)
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_bounds_and_unknown_names() {
        let p = Params::parse(Some("count=5&format=hex"), &["count", "format"]).unwrap();
        assert_eq!(p.count(10).unwrap(), 5);
        assert_eq!(p.format().unwrap(), Some("hex".parse().unwrap()));
        let p = Params::parse(Some("format=obfuscated-base62"), &["format"]).unwrap();
        assert_eq!(
            p.format().unwrap().map(|f| f.name()),
            Some("obfuscated-base62")
        );
        let p = Params::parse(Some("format=base64"), &["format"]).unwrap();
        let e = p.format().unwrap_err();
        assert!(e.message().contains("obfuscated-sqids"), "{e}");
        for bad in ["count=0", "count=11", "count=-1", "count=abc", "count="] {
            let p = Params::parse(Some(bad), &["count"]).unwrap();
            assert!(p.count(10).is_err(), "{bad}");
        }
        assert!(Params::parse(Some("cnt=1"), &["count"]).is_err());
        assert!(Params::parse(Some("count=1&count=2"), &["count"]).is_err());
        let p = Params::parse(Some("count=%31"), &["count"]).unwrap();
        assert_eq!(p.count(10).unwrap(), 1);
    }

    #[test]
    fn a_field_out_of_bounds_is_refused_as_a_query_s_count_is() {
        assert_eq!(bounded("batch", 10, 10).unwrap(), 10);
        let e = bounded("batch", 0, 10).unwrap_err();
        assert_eq!(
            e.message(),
            "batch must be a whole number from 1 to 10, got 0"
        );
        let p = Params::parse(Some("count=11"), &["count"]).unwrap();
        assert_eq!(
            p.count(10).unwrap_err().message(),
            "count must be a whole number from 1 to 10, got \"11\""
        );
    }

    #[test]
    fn input_is_the_text_sent_or_refused() {
        let p = Params::parse(Some("input=a+b%2Fc%C3%A9"), &["input"]).unwrap();
        assert_eq!(p.input(), Some("a b/cé"));
        let p = Params::parse(Some("input="), &["input"]).unwrap();
        assert_eq!(p.input(), Some(""));
        let e = Params::parse(Some("input=%FF"), &["input"]).err().unwrap();
        assert!(e.message().contains("UTF-8"), "{e}");
        assert!(Params::parse(None, &["input"]).unwrap().input().is_none());
    }
}

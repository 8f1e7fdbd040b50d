//! Didi Tinyid's answers, as its server writes them and its client reads them, so that
//! `TinyId.nextId(bizType)` of an unchanged `tinyid-client` works against snowdrift.
//!
//! Tinyid answers every request with HTTP 200. Its JSON routes send a `Response<T>`
//! ([`Answer`]): `{"data":…,"code":200,"message":""}` on success, `{"data":null,"code":5,
//! "message":"token is error"}` for a missing or wrong token, and code 6 with the reason for
//! anything else. Its `*Simple` routes send bare text, and an empty body for every error.
//!
//! Its client asks `nextSegmentIdSimple` for a segment, `currentId,loadingId,maxId,delta,
//! remainder` ([`Segment::to_simple`], [`Segment::parse_simple`]), issues the IDs of
//! [`Segment::client_ids`] from it, and fetches the next segment in the background once an
//! ID it issues reaches `loadingId`.

use serde::{Deserialize, Serialize};

/// `code` of an answer that carries data.
pub const OK: i32 = 200;
/// `code` of a request whose token is missing, unknown or not allowed its `bizType`
/// (Tinyid's `TOKEN_ERR`).
pub const TOKEN_ERROR: i32 = 5;
/// `code` of every other failure, with the reason as `message` (Tinyid's `SYS_ERR`).
pub const SYSTEM_ERROR: i32 = 6;
/// `message` of a [`TOKEN_ERROR`], as Tinyid words it.
pub const TOKEN_ERROR_MESSAGE: &str = "token is error";

/// The body of Tinyid's JSON routes (its `Response<T>`), fields in the order Jackson writes
/// them: `data` (null on an error), `code`, `message` (empty on success).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer<T> {
    /// The IDs or the segment; `None` (JSON `null`) on an error.
    pub data: Option<T>,
    /// [`OK`], [`TOKEN_ERROR`] or [`SYSTEM_ERROR`].
    pub code: i32,
    /// Empty on success; the reason on an error.
    pub message: String,
}

impl<T> Answer<T> {
    /// A success carrying `data`.
    pub fn ok(data: T) -> Self {
        Self {
            data: Some(data),
            code: OK,
            message: String::new(),
        }
    }

    /// A failure with `code` and `message`.
    pub fn error(code: i32, message: impl Into<String>) -> Self {
        Self {
            data: None,
            code,
            message: message.into(),
        }
    }
}

/// A segment for the client to issue itself (Tinyid's `SegmentId`): the IDs `id` with
/// `current_id < id <= max_id` and `id % delta == remainder`. Its JSON fields come in the
/// order Jackson writes Tinyid's class: `maxId`, `loadingId`, `currentId`, `delta`,
/// `remainder`. The types are Java's: `long` for the IDs, `int` for `delta` and
/// `remainder`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Segment {
    /// The last ID the segment may hold.
    pub max_id: i64,
    /// Once the client issues an ID at or above this, it fetches the next segment.
    pub loading_id: i64,
    /// Below the first ID: the client starts issuing above it.
    pub current_id: i64,
    /// The distance between the segment's IDs: the number of striped databases (1 unless
    /// striped).
    pub delta: i32,
    /// The residue modulo `delta` every ID of the segment has: which database it came from.
    pub remainder: i32,
}

/// Why a `nextSegmentIdSimple` answer is not a segment, read as Tinyid's client reads it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimpleError {
    /// The body is empty: Tinyid's error answer (the client's fetch fails).
    #[error("the answer is empty: the server refused the request")]
    Empty,
    /// Not five comma-separated decimal numbers of the right sizes.
    #[error("{0:?} is not currentId,loadingId,maxId,delta,remainder")]
    Malformed(String),
}

impl Segment {
    /// The answer of `nextSegmentIdSimple`: `currentId,loadingId,maxId,delta,remainder`.
    pub fn to_simple(&self) -> String {
        format!(
            "{},{},{},{},{}",
            self.current_id, self.loading_id, self.max_id, self.delta, self.remainder
        )
    }

    /// Reads an answer of `nextSegmentIdSimple` as Tinyid's `HttpSegmentIdServiceImpl`
    /// does: an empty (or blank) body is a failed fetch, otherwise the first five of its
    /// comma-separated fields, each a Java `long` or `int` (`Long.parseLong`: an optional
    /// sign and decimal digits, no spaces).
    pub fn parse_simple(text: &str) -> Result<Segment, SimpleError> {
        if text.trim().is_empty() {
            return Err(SimpleError::Empty);
        }
        let bad = || SimpleError::Malformed(text.chars().take(200).collect());
        let fields: Vec<&str> = text.split(',').collect();
        let field = |i: usize| fields.get(i).copied().ok_or_else(bad);
        let long = |i: usize| java_number::<i64>(field(i)?).ok_or_else(bad);
        let int = |i: usize| java_number::<i32>(field(i)?).ok_or_else(bad);
        Ok(Segment {
            current_id: long(0)?,
            loading_id: long(1)?,
            max_id: long(2)?,
            delta: int(3)?,
            remainder: int(4)?,
        })
    }

    /// The IDs Tinyid's client issues from this segment, in order: a step for step copy of
    /// its `SegmentId.init()` (move `currentId` up to just below the first ID with the
    /// segment's remainder) and `nextId()` (add `delta`; past `maxId` the segment is used
    /// up). `None` where that client would not issue a clean sequence at all: `delta` below
    /// 1 (a division by zero there) or a `remainder` outside `0..delta` (its `init` never
    /// finds one and it issues IDs of any residue).
    pub fn client_ids(&self) -> Option<impl Iterator<Item = i64> + use<>> {
        let (delta, remainder) = (i64::from(self.delta), i64::from(self.remainder));
        if delta < 1 || !(0..delta).contains(&remainder) {
            return None;
        }
        let mut current = self.current_id;
        // init(): Java's `%` and Rust's agree (both truncate), negative IDs included.
        if current % delta != remainder {
            let mut found = false;
            for _ in 0..=delta {
                current = current.checked_add(1)?;
                if current % delta == remainder {
                    current -= delta;
                    found = true;
                    break;
                }
            }
            if !found {
                return None;
            }
        }
        let max_id = self.max_id;
        // nextId(): `currentId.addAndGet(delta)`, refused once above maxId.
        Some(
            std::iter::successors(current.checked_add(delta), move |id| id.checked_add(delta))
                .take_while(move |id| *id <= max_id),
        )
    }
}

/// A decimal number as Java's `Long.parseLong` / `Integer.parseInt` read it: an optional
/// `+` or `-`, then ASCII digits only, within the type's range.
fn java_number<T: std::str::FromStr>(text: &str) -> Option<T> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(current_id: i64, max_id: i64, delta: i32, remainder: i32) -> Segment {
        Segment {
            max_id,
            loading_id: current_id,
            current_id,
            delta,
            remainder,
        }
    }

    fn issued(s: Segment) -> Vec<i64> {
        s.client_ids().expect("a clean segment").collect()
    }

    #[test]
    fn the_client_issues_above_current_up_to_max_in_its_residue() {
        // Tinyid's own example (SegmentId.init's comment): (1000, 2000], delta 3,
        // remainder 0 starts at 1002.
        let ids = issued(segment(1000, 2000, 3, 0));
        assert_eq!(ids.first(), Some(&1002));
        assert_eq!(ids.last(), Some(&1998));
        assert!(ids.iter().all(|id| id % 3 == 0));
        assert_eq!(issued(segment(0, 5, 1, 0)), [1, 2, 3, 4, 5]);
        // currentId already in the residue: the first ID is a delta above it.
        assert_eq!(issued(segment(4, 12, 2, 0)), [6, 8, 10, 12]);
        assert_eq!(issued(segment(4, 12, 2, 1)), [5, 7, 9, 11]);
        assert_eq!(issued(segment(10, 10, 1, 0)), Vec::<i64>::new());
        assert!(segment(0, 9, 2, 2).client_ids().is_none());
        assert!(segment(0, 9, 0, 0).client_ids().is_none());
    }

    #[test]
    fn the_simple_answer_reads_back_as_the_client_reads_it() {
        let s = Segment {
            max_id: 2000,
            loading_id: 1200,
            current_id: 1000,
            delta: 2,
            remainder: 1,
        };
        assert_eq!(s.to_simple(), "1000,1200,2000,2,1");
        assert_eq!(Segment::parse_simple(&s.to_simple()), Ok(s));
        assert_eq!(Segment::parse_simple(""), Err(SimpleError::Empty));
        assert_eq!(Segment::parse_simple(" \n"), Err(SimpleError::Empty));
        for bad in [
            "1,2,3,4",
            "1,2,3,4,x",
            "1, 2,3,4,5",
            "1,2,3,4,2147483648",
            "1,2,3,4,",
        ] {
            assert!(
                matches!(Segment::parse_simple(bad), Err(SimpleError::Malformed(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn json_is_tinyid_s_field_for_field() {
        let ok = Answer::ok(Segment {
            max_id: 2000,
            loading_id: 1200,
            current_id: 1000,
            delta: 1,
            remainder: 0,
        });
        assert_eq!(
            serde_json::to_string(&ok).unwrap(),
            r#"{"data":{"maxId":2000,"loadingId":1200,"currentId":1000,"delta":1,"remainder":0},"code":200,"message":""}"#
        );
        let refused: Answer<Vec<i64>> = Answer::error(TOKEN_ERROR, TOKEN_ERROR_MESSAGE);
        assert_eq!(
            serde_json::to_string(&refused).unwrap(),
            r#"{"data":null,"code":5,"message":"token is error"}"#
        );
        assert_eq!(
            serde_json::to_string(&Answer::ok(vec![2i64, 3])).unwrap(),
            r#"{"data":[2,3],"code":200,"message":""}"#
        );
    }
}

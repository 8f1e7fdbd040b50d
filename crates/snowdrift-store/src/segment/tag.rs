//! Tags, claims, and the validation of what users send.

use snowdrift_core::counter::CounterTemplate;
use snowdrift_core::segment::IdRange;

use crate::error::{Error, Result};

/// Longest tag: Leaf's `biz_tag varchar(128)`.
pub const MAX_TAG_LEN: usize = 128;
/// Longest description: Leaf's `description varchar(256)`.
pub const MAX_DESCRIPTION_LEN: usize = 256;
/// Largest step: Leaf's `step int`.
pub const MAX_STEP: i64 = i32::MAX as i64;
/// The step of a tag created without one.
pub const DEFAULT_STEP: i64 = 1000;

/// A segment tag as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    /// Name (`biz_tag`).
    pub tag: String,
    /// Highest ID claimed so far, plus one: the next segment starts here.
    pub max_id: i64,
    /// IDs per claimed segment.
    pub step: i64,
    /// Free text.
    pub description: Option<String>,
    /// The template its numbers are rendered through (`ORD{date:%Y%m%d}{seq:06}`, with its
    /// UTC offset), when it has one: its `max_id` then counts in [`period`](Self::period)
    /// and starts again from 1 each period. SQL stores only.
    pub template: Option<CounterTemplate>,
    /// For a tag with a template, the period `max_id` counts in (`20261122`): 0 before its
    /// first claim, and always for a template without a date. 0 for other tags.
    pub period: i64,
}

/// A tag to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTag {
    /// Name.
    pub tag: String,
    /// IDs per segment (1 to 2^31 - 1).
    pub step: i64,
    /// Free text, at most 256 characters.
    pub description: Option<String>,
    /// A template to render its numbers through, counting from 1 each period it names
    /// (SQL stores only); `None` for Leaf's numeric IDs.
    pub template: Option<CounterTemplate>,
}

/// Changes to a tag; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TagUpdate {
    /// New step.
    pub step: Option<i64>,
    /// New description.
    pub description: Option<String>,
}

/// A segment claimed from the store: durable before its first ID is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// The IDs: `[max_id - step, max_id)`.
    pub ids: IdRange,
    /// The step used.
    pub step: i64,
    /// The tag's step as stored when claimed, so a step changed with `update_tag` reaches
    /// running buffers at their next claim.
    pub stored_step: i64,
}

/// A segment of a tag with a template, claimed for one period: what
/// [`SegmentStore::claim_dated`](super::SegmentStore::claim_dated) returns. Its IDs are the
/// period's sequence numbers (1 is its first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatedClaim {
    /// The numbers, the step used and the stored step.
    pub claim: Claim,
    /// The period the row now counts in: the one asked for.
    pub period: i64,
}

/// Checks a tag name: 1 to 128 characters from `A-Z a-z 0-9 _ - . :`.
pub fn validate_tag(tag: &str) -> Result<()> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || "_-.:".contains(c);
    // "." and ".." would be rewritten as URL path segments and as znode names.
    let dots = tag == "." || tag == "..";
    if tag.is_empty() || tag.len() > MAX_TAG_LEN || !tag.chars().all(ok_char) || dots {
        let shown: String = tag.chars().take(40).collect();
        return Err(Error::InvalidInput(format!(
            "tag {shown:?} is not valid: use 1 to {MAX_TAG_LEN} characters from A-Z, a-z, 0-9, '_', '-', '.', ':' (not \".\" or \"..\")"
        )));
    }
    Ok(())
}

/// Checks a step: 1 to 2^31 - 1 (Leaf stores it as `int`).
pub fn validate_step(step: i64) -> Result<()> {
    if !(1..=MAX_STEP).contains(&step) {
        return Err(Error::InvalidInput(format!(
            "step {step} is not valid: use 1 to {MAX_STEP}"
        )));
    }
    Ok(())
}

impl NewTag {
    /// Checks every field; nothing is written when this fails.
    pub(crate) fn validate(&self) -> Result<()> {
        validate_tag(&self.tag)?;
        validate_step(self.step)?;
        validate_description(self.description.as_deref())?;
        self.template
            .as_ref()
            .map_or(Ok(()), |t| validate_tag_template(t.as_str()))
    }
}

/// Checks what a tag's template may hold beyond what every template may: printable ASCII
/// only, since its numbers go into URLs, Leaf's plain-text answers and `VARCHAR(256)`
/// columns (and so its length in bytes is its length in characters).
pub fn validate_tag_template(text: &str) -> Result<()> {
    match text.char_indices().find(|(_, c)| !(' '..='~').contains(c)) {
        None => Ok(()),
        Some((at, c)) => Err(Error::InvalidInput(format!(
            "template {text:?} holds {c:?} at character {}: a tag's template is printable \
             ASCII (space to '~'), as its numbers go into URLs and Leaf's text answers",
            text[..at].chars().count() + 1
        ))),
    }
}

impl TagUpdate {
    /// Checks the fields given, and that at least one is.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.step.is_none() && self.description.is_none() {
            return Err(Error::InvalidInput(
                "nothing to update: give a step and/or a description".into(),
            ));
        }
        if let Some(step) = self.step {
            validate_step(step)?;
        }
        validate_description(self.description.as_deref())
    }
}

/// Reads a UTC offset written `+HH:MM` or `-HH:MM` (`Z` for UTC): the seconds east of UTC a
/// template's dates are in, as [`CounterTemplate::with_utc_offset`] takes them.
///
/// ```
/// use snowdrift_store::segment::{parse_utc_offset, show_utc_offset};
/// assert_eq!(parse_utc_offset("+08:00").unwrap(), 8 * 3600);
/// assert_eq!(parse_utc_offset("-05:30").unwrap(), -(5 * 3600 + 1800));
/// assert_eq!(show_utc_offset(-(5 * 3600 + 1800)), "-05:30");
/// assert!(parse_utc_offset("8").is_err());
/// ```
pub fn parse_utc_offset(text: &str) -> Result<i32> {
    if text == "Z" {
        return Ok(0);
    }
    let bad = || {
        Error::InvalidInput(format!(
            "utc_offset {text:?} is not an offset: write +HH:MM or -HH:MM (\"+08:00\", \
             \"-05:30\"; \"Z\" or \"+00:00\" for UTC), at most 25:59"
        ))
    };
    let (sign, rest) = match text.as_bytes().first() {
        Some(b'+') => (1, &text[1..]),
        Some(b'-') => (-1, &text[1..]),
        _ => return Err(bad()),
    };
    let (h, m) = rest.split_once(':').ok_or_else(bad)?;
    let two = |s: &str| {
        (s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<i32>().ok())
            .flatten()
    };
    match (two(h), two(m)) {
        (Some(h), Some(m)) if h <= 25 && m <= 59 => Ok(sign * (h * 3600 + m * 60)),
        _ => Err(bad()),
    }
}

/// An offset in seconds east of UTC as `+HH:MM` (seconds, which no written offset has,
/// are shown as `+HH:MM:SS`).
pub fn show_utc_offset(seconds: i32) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let s = seconds.unsigned_abs();
    let (h, m, rest) = (s / 3600, s % 3600 / 60, s % 60);
    if rest == 0 {
        format!("{sign}{h:02}:{m:02}")
    } else {
        format!("{sign}{h:02}:{m:02}:{rest:02}")
    }
}

/// Checks the arguments of a claim.
pub(crate) fn validate_claim(tag: &str, step: Option<i64>) -> Result<()> {
    validate_tag(tag)?;
    step.map_or(Ok(()), validate_step)
}

/// Checks the name of a store's table (or key prefix, or root znode): 1 to 64 letters,
/// digits or `_`, not starting with a digit, so it can be spliced into SQL safely.
pub(crate) fn validate_table(table: &str) -> Result<()> {
    let ok = !table.is_empty()
        && table.len() <= 64
        && table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !table.starts_with(|c: char| c.is_ascii_digit());
    if !ok {
        return Err(Error::InvalidInput(format!(
            "table name {table:?} is not valid: use 1 to 64 letters, digits or '_', not starting with a digit"
        )));
    }
    Ok(())
}

fn validate_description(d: Option<&str>) -> Result<()> {
    match d {
        Some(d) if d.chars().count() > MAX_DESCRIPTION_LEN => Err(Error::InvalidInput(format!(
            "description is {} characters long; at most {MAX_DESCRIPTION_LEN} are allowed",
            d.chars().count()
        ))),
        _ => Ok(()),
    }
}

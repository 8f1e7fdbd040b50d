//! Carrying tags over from another system: a floor under a tag's next ID, raised to and
//! never lowered, so IDs the other system issued are never issued again.

use super::tag::{Tag, validate_step, validate_tag};
use crate::error::{Error, Result};

/// The least a tag must be at: its next segment starts at `next_id` or above, with `step`.
///
/// Raising a store to a floor creates the tag at `max_id = next_id` when it is missing, and
/// moves a lower `max_id` up to `next_id`; a `max_id` already at or above it stays as it is
/// (never lowered). The step is set to `step` either way. A tag with a template (which
/// counts per period) is refused: a floor under its numbers means nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagFloor {
    /// The tag.
    pub tag: String,
    /// The lowest ID its next segment may start at (Leaf's `max_id`: the first ID not yet
    /// handed out).
    pub next_id: i64,
    /// IDs per segment.
    pub step: i64,
    /// The description of a tag created by the raise (an existing one keeps its own).
    pub description: Option<String>,
}

/// What raising one tag to its floor changes (or, for a preview, would change).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagChange {
    /// The tag.
    pub tag: String,
    /// Its `max_id` and step before; `None` when it did not exist.
    pub before: Option<(i64, i64)>,
    /// Its `max_id` and step after.
    pub after: (i64, i64),
}

impl TagChange {
    /// Whether the raise writes anything.
    pub fn changes(&self) -> bool {
        self.before != Some(self.after)
    }
}

impl TagFloor {
    /// Checks the floor: a valid tag name and step, and a `next_id` from which one more
    /// segment still fits below `i64::MAX`.
    pub fn validate(&self) -> Result<()> {
        validate_tag(&self.tag)?;
        validate_step(self.step)?;
        if self.next_id < 1 || self.next_id > i64::MAX - self.step {
            return Err(Error::InvalidInput(format!(
                "tag {:?}: a next ID of {} with step {} leaves no segment below i64::MAX (use 1 to {})",
                self.tag,
                self.next_id,
                self.step,
                i64::MAX - self.step
            )));
        }
        Ok(())
    }

    /// The change raising `before` (the tag as the store holds it, if it does) to this
    /// floor makes: the rule every backend applies, and previews show.
    pub fn against(&self, before: Option<&Tag>) -> Result<TagChange> {
        self.validate()?;
        let Some(tag) = before else {
            return Ok(TagChange {
                tag: self.tag.clone(),
                before: None,
                after: (self.next_id, self.step),
            });
        };
        if let Some(template) = &tag.template {
            return Err(Error::InvalidInput(format!(
                "tag {:?} exists in the store with a template ({template}): its numbers count \
                 per period, so the IDs carried over cannot be kept out of them; carry them \
                 to a tag of another name",
                self.tag
            )));
        }
        Ok(TagChange {
            tag: self.tag.clone(),
            before: Some((tag.max_id, tag.step)),
            after: (tag.max_id.max(self.next_id), self.step),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floor(next_id: i64) -> TagFloor {
        TagFloor {
            tag: "order".into(),
            next_id,
            step: 500,
            description: None,
        }
    }

    fn tag(max_id: i64) -> Tag {
        Tag {
            tag: "order".into(),
            max_id,
            step: 1000,
            description: None,
            template: None,
            period: 0,
        }
    }

    #[test]
    fn a_floor_creates_raises_and_never_lowers() {
        let created = floor(2001).against(None).unwrap();
        assert_eq!((created.before, created.after), (None, (2001, 500)));
        assert!(created.changes());
        let raised = floor(2001).against(Some(&tag(1001))).unwrap();
        assert_eq!(raised.after, (2001, 500));
        let kept = floor(2001).against(Some(&tag(9001))).unwrap();
        assert_eq!(kept.after, (9001, 500), "a higher max_id is kept");
        let same = floor(2001).against(Some(&Tag {
            step: 500,
            ..tag(2001)
        }));
        assert!(
            !same.unwrap().changes(),
            "at the floor already: nothing to write"
        );
    }

    #[test]
    fn bad_floors_and_template_tags_are_refused() {
        assert!(floor(0).against(None).is_err());
        assert!(floor(i64::MAX - 10).against(None).is_err());
        let bad_name = TagFloor {
            tag: "a b".into(),
            ..floor(5)
        };
        assert!(bad_name.against(None).is_err());
        let dated = Tag {
            template: Some(snowdrift_core::counter::CounterTemplate::parse("ORD{seq:04}").unwrap()),
            ..tag(5)
        };
        let e = floor(5).against(Some(&dated)).unwrap_err().to_string();
        assert!(e.contains("template"), "{e}");
    }
}

//! Durations as text (`"10s"`, `"250ms"`, `"1m 30s"`), parsed by jiff's friendly format.

pub(crate) mod duration_text {
    use std::fmt;
    use std::time::Duration;

    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        let signed = jiff::SignedDuration::try_from(*d).map_err(serde::ser::Error::custom)?;
        s.serialize_str(&format!("{signed:#}"))
    }

    /// What a duration key takes, for the messages of a value of another type.
    struct Text;

    impl serde::de::Visitor<'_> for Text {
        type Value = Duration;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a duration in quotes, such as \"10s\", \"250ms\" or \"1m 30s\"")
        }

        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Duration, E> {
            let signed: jiff::SignedDuration = text.trim().parse().map_err(|_| {
                E::custom(format!(
                    "{text:?} is not a duration; write e.g. \"10s\", \"250ms\" or \"1m 30s\""
                ))
            })?;
            Duration::try_from(signed)
                .map_err(|_| E::custom(format!("{text:?}: a duration cannot be negative")))
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        d.deserialize_str(Text)
    }

    /// The same for an optional key.
    pub mod option {
        use std::time::Duration;

        use serde::{Deserializer, Serializer};

        pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => super::serialize(d, s),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
            super::deserialize(d).map(Some)
        }
    }
}

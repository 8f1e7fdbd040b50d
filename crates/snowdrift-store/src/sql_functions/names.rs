//! The names the functions use in a database: the generator's slug in object names, the
//! advisory-lock classes, the reservation's holder, and the checks of what a user gives.

use crate::error::{Error, Result};

/// The longest slug: PostgreSQL names are at most 63 bytes, and the longest object name is
/// `snowdrift_{slug}_check`.
pub const MAX_SLUG: usize = 40;

/// Holders of reservations made by `snowdrift sql install` start with this, so a listing
/// of the registry can tell them from servers.
pub const RESERVATION_PREFIX: &str = "snowdrift-sql:";

/// The lease end a reservation carries: the largest `BIGINT`, so no server's claim (which
/// takes only an ended lease) ever takes it. Only `snowdrift sql uninstall` ends it.
pub const RESERVED_UNTIL_MS: i64 = i64::MAX;

/// The part of object names that names generator `name`: lowercase letters, digits and
/// `_` (every other character of a name becomes `_`).
pub fn slug(name: &str) -> Result<String> {
    crate::segment::validate_tag(name).map_err(|_| {
        Error::InvalidInput(format!(
            "generator name {name:?} is not valid: use 1 to 128 characters from A-Z, a-z, 0-9, '_', '-', '.', ':'"
        ))
    })?;
    let slug: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if slug.len() > MAX_SLUG {
        return Err(Error::InvalidInput(format!(
            "generator name {name:?} is too long for the database's object names: use at most {MAX_SLUG} characters"
        )));
    }
    Ok(slug)
}

/// The prefix of every object of generator `slug`: `snowdrift_{slug}`.
pub fn prefix(slug: &str) -> String {
    format!("snowdrift_{slug}")
}

/// Checks a schema or database name the user gives: letters, digits and `_`, not
/// starting with a digit, at most 63 characters (so it needs no quoting anywhere).
pub fn check_schema(schema: &str) -> Result<()> {
    let ok = !schema.is_empty()
        && schema.len() <= 63
        && schema
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !schema.starts_with(|c: char| c.is_ascii_digit());
    if !ok {
        return Err(Error::InvalidInput(format!(
            "schema {schema:?} is not valid here: use 1 to 63 letters, digits or '_', not starting with a digit"
        )));
    }
    Ok(())
}

/// The three advisory-lock classes of generator `slug` in `schema` (the first key of
/// PostgreSQL's two-key advisory locks, the second being the worker ID): claim, use and
/// fence. Derived from the names, so they differ between generators, and below 2^31.
pub fn lock_classes(schema: &str, slug: &str) -> [i32; 3] {
    // FNV-1a: stable across versions and platforms, unlike std's hasher.
    let mut h: u32 = 0x811c_9dc5;
    for b in format!("snowdrift:{schema}.{slug}").bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    let base = ((h & 0x1fff_ffff) * 4) as i32;
    [base, base + 1, base + 2]
}

/// A SQL string literal of `text`: quotes doubled; refused with control characters.
pub fn literal(text: &str) -> Result<String> {
    if text.chars().any(char::is_control) {
        return Err(Error::InvalidInput(format!(
            "{text:?} holds a control character; it cannot go into the database's functions"
        )));
    }
    Ok(format!("'{}'", text.replace('\'', "''")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_and_classes() {
        assert_eq!(slug("Orders-2026.eu:1").unwrap(), "orders_2026_eu_1");
        assert!(slug("a b").is_err());
        assert!(slug(&"x".repeat(41)).is_err());
        let [claim, use_, fence] = lock_classes("public", "orders");
        assert!(claim >= 0 && fence > use_ && use_ > claim);
        assert_ne!(
            lock_classes("public", "orders"),
            lock_classes("public", "order")
        );
        assert_eq!(literal("it's").unwrap(), "'it''s'");
        assert!(check_schema("1x").is_err());
        assert!(check_schema("app_ids").is_ok());
    }
}

//! A ticket server's configuration and the validation of what users send.

use std::time::Duration;

use crate::error::{Error, Result};
pub(crate) use crate::sql_connection::Dialect;

/// Default table (MySQL/MariaDB) or sequence (PostgreSQL) name: Flickr's `tickets64`.
pub const DEFAULT_NAME: &str = "tickets64";
/// Largest increment: MySQL and MariaDB cap `auto_increment_increment` at 65,535.
pub const MAX_INCREMENT: u32 = 65_535;
/// Most tickets one call may ask for.
pub const MAX_TICKETS_PER_CALL: usize = 10_000;
/// Default bound on one call to one server (connection, statements, answer).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// How one ticket server hands out IDs: every ID it returns is ≡ `offset` (mod `increment`).
///
/// Servers that share an `increment` and have distinct offsets in `1..=increment` never
/// return the same ID. `increment` may exceed the number of servers, leaving room to add
/// servers later without renumbering the others.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TicketConfig {
    /// Table (MySQL/MariaDB) or sequence (PostgreSQL): 1 to 63 characters of `a-z`, `0-9`,
    /// `_`, not starting with a digit. Default [`DEFAULT_NAME`].
    pub name: String,
    /// N: the number of interleaved classes (1 to [`MAX_INCREMENT`]).
    pub increment: u32,
    /// k: this server's class, 1 to `increment`.
    pub offset: u32,
    /// Bound on one call to the server, including (re)connecting. Default [`DEFAULT_TIMEOUT`].
    pub timeout: Duration,
}

impl TicketConfig {
    /// Class `offset` of `increment`, with the default name and timeout.
    pub fn new(increment: u32, offset: u32) -> Self {
        Self {
            name: DEFAULT_NAME.to_string(),
            increment,
            offset,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Checks every field; says what is allowed.
    pub fn validate(&self) -> Result<()> {
        validate_name(&self.name)?;
        if !(1..=MAX_INCREMENT).contains(&self.increment) {
            return Err(Error::InvalidInput(format!(
                "ticket increment {} is not valid: use 1 to {MAX_INCREMENT} (the number of ticket servers, or more to leave room)",
                self.increment
            )));
        }
        // MySQL ignores an offset above the increment, so such a server would leave its class.
        if !(1..=self.increment).contains(&self.offset) {
            return Err(Error::InvalidInput(format!(
                "ticket offset {} is not valid with increment {}: use 1 to {}",
                self.offset, self.increment, self.increment
            )));
        }
        if self.timeout.is_zero() {
            return Err(Error::InvalidInput(
                "ticket server timeout is zero: give it time to answer (e.g. 2s)".into(),
            ));
        }
        Ok(())
    }

    /// True when `id` is in this server's class.
    pub(crate) fn owns(&self, id: u64) -> bool {
        id % u64::from(self.increment) == u64::from(self.offset % self.increment)
    }
}

/// Checks a table or sequence name: 1 to 63 characters of `a-z`, `0-9`, `_`, not starting
/// with a digit. Lower case only, because PostgreSQL folds unquoted names to lower case and
/// MySQL on Linux does not, so one spelling means one object on both.
pub fn validate_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !ok {
        let shown: String = name.chars().take(70).collect();
        return Err(Error::InvalidInput(format!(
            "ticket table/sequence name {shown:?} is not valid: use 1 to 63 characters of a-z, 0-9 and '_', not starting with a digit"
        )));
    }
    Ok(())
}

/// Checks how many tickets a call asks for.
pub(crate) fn validate_count(count: usize) -> Result<()> {
    if !(1..=MAX_TICKETS_PER_CALL).contains(&count) {
        return Err(Error::InvalidInput(format!(
            "ticket count {count} is not valid: ask for 1 to {MAX_TICKETS_PER_CALL} per call"
        )));
    }
    Ok(())
}

/// The dialect of a ticket server's `url` (PostgreSQL or MySQL/MariaDB, read by the one
/// SQL URL parser) and the URL sqlx takes.
pub(crate) fn dialect_of(url: &str) -> Result<(Dialect, String)> {
    let bad_url = |reason: String| Error::InvalidUrl {
        url: crate::mask_url(url),
        reason,
    };
    // Refused by name even in a build without SQLite.
    let sqlite = url.split(':').next() == Some("sqlite");
    match crate::sql_connection::dialect_of(url).map(|d| d.filter(|_| !sqlite)) {
        _ if sqlite => Err(bad_url(
            "SQLite is not a ticket server: ticket mode interleaves several MySQL/MariaDB or PostgreSQL servers; for one SQLite file use segment mode".into(),
        )),
        Ok(Some(parsed)) => Ok(parsed),
        Err(e) => Err(e),
        Ok(None) => Err(bad_url(
            "a ticket server is mysql://USER@HOST/DB (or mariadb://) or postgres://USER@HOST/DB"
                .into(),
        )),
    }
}

/// The error of a ticket operation on a SQLite connection, which [`dialect_of`] never
/// hands out: named rather than a panic, should that ever change.
pub(crate) fn no_sqlite_ticket_server() -> Error {
    Error::InvalidInput(
        "SQLite is not a ticket server: ticket mode interleaves several MySQL/MariaDB or PostgreSQL servers".into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_owns_its_residue() {
        let c = TicketConfig::new(3, 3);
        assert!(c.owns(3) && c.owns(6) && !c.owns(4) && !c.owns(5));
        let c = TicketConfig::new(3, 1);
        assert!(c.owns(1) && c.owns(4) && !c.owns(3));
        assert!(TicketConfig::new(1, 1).owns(17));
    }
}

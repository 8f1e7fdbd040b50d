//! The URL of a coordinator (etcd, ZooKeeper): `SCHEME://[USER:PASSWORD@]HOST:PORT[,...]`
//! with an optional `?key=value&...` of connection options. URL crates refuse a host list,
//! so it is split here; user, password and values are percent-decoded.

use percent_encoding::percent_decode_str;

use crate::error::{Error, Result};
use crate::mask_url;

/// A coordinator URL taken apart.
pub(crate) struct CoordinatorUrl {
    /// The scheme, as written (`etcd`, `https`, `zookeeper`).
    pub(crate) scheme: String,
    /// The user and password, decoded.
    pub(crate) user: Option<(String, String)>,
    /// `HOST:PORT` of each member.
    pub(crate) hosts: Vec<String>,
    /// The options after `?`, decoded, in order.
    pub(crate) options: Vec<(String, String)>,
}

impl CoordinatorUrl {
    /// Splits `url`; `usage` is the form errors tell the user to write, `allowed` the option
    /// keys accepted after `?`.
    pub(crate) fn parse(url: &str, usage: &str, allowed: &[&str]) -> Result<Self> {
        let bad = |reason: String| Error::InvalidUrl {
            url: mask_url(url),
            reason,
        };
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad(format!("use {usage}")))?;
        let (rest, query) = match rest.split_once('?') {
            Some((rest, query)) => (rest, Some(query)),
            None => (rest, None),
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        // The password may hold '@' only percent-encoded, so the last '@' ends the user part.
        let (userinfo, hosts) = match rest.rsplit_once('@') {
            Some((userinfo, hosts)) => (Some(userinfo), hosts),
            None => (None, rest),
        };
        if hosts.is_empty() || hosts.contains('/') || hosts.split(',').any(|h| h.trim().is_empty())
        {
            return Err(bad(format!(
                "the hosts must be HOST:PORT[,HOST:PORT...] without a path; use {usage}"
            )));
        }
        let user = match userinfo {
            None => None,
            Some(userinfo) => {
                let Some((user, password)) = userinfo.split_once(':') else {
                    return Err(bad(format!(
                        "the user {userinfo:?} has no password; write USER:PASSWORD@ (percent-encode ':', '@' and '/' in them), as in {usage}"
                    )));
                };
                let user = decode(user).map_err(|e| bad(format!("the user {e}")))?;
                let password = decode(password).map_err(|e| bad(format!("the password {e}")))?;
                if user.is_empty() {
                    return Err(bad(format!("the user is empty; use {usage}")));
                }
                Some((user, password))
            }
        };
        let mut options: Vec<(String, String)> = Vec::new();
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let key = decode(key).map_err(|e| bad(format!("an option name {e}")))?;
            if !allowed.contains(&key.as_str()) {
                let allowed = if allowed.is_empty() {
                    "none".to_string()
                } else {
                    allowed.join(", ")
                };
                return Err(bad(format!(
                    "unknown option {key:?} after '?' (allowed: {allowed})"
                )));
            }
            let value = decode(value).map_err(|e| bad(format!("option {key:?} {e}")))?;
            if value.is_empty() {
                return Err(bad(format!(
                    "option {key:?} has no value; write {key}=VALUE"
                )));
            }
            if options.iter().any(|(k, _)| *k == key) {
                return Err(bad(format!("option {key:?} is given twice")));
            }
            options.push((key, value));
        }
        Ok(Self {
            scheme: scheme.to_string(),
            user,
            hosts: hosts.split(',').map(|h| h.trim().to_string()).collect(),
            options,
        })
    }

    /// The value of option `key`, if given.
    pub(crate) fn option(&self, key: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

fn decode(text: &str) -> std::result::Result<String, String> {
    percent_decode_str(text)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| format!("{text:?} is not UTF-8 once percent-decoded"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const USAGE: &str = "etcd://HOST:PORT";

    #[test]
    fn user_hosts_and_options_are_split_and_decoded() {
        let u = CoordinatorUrl::parse(
            "https://snow%40drift:p%3Ass%2Fw@a:2379,b:2379/?ca=%2Fetc%2Fca.pem&key=k.pem",
            USAGE,
            &["ca", "key"],
        )
        .unwrap();
        assert_eq!(u.scheme, "https");
        assert_eq!(
            u.user,
            Some(("snow@drift".to_string(), "p:ss/w".to_string()))
        );
        assert_eq!(u.hosts, ["a:2379", "b:2379"]);
        assert_eq!(u.option("ca"), Some("/etc/ca.pem"));
        assert_eq!(u.option("key"), Some("k.pem"));
        assert_eq!(u.option("cert"), None);
    }

    #[test]
    fn bad_urls_say_what_is_wrong_without_the_password() {
        for (url, says) in [
            ("etcd://u:secret@a:1/path", "without a path"),
            ("etcd://u:secret@", "without a path"),
            ("etcd://u@a:1", "has no password"),
            ("etcd://:secret@a:1", "the user is empty"),
            ("etcd://u:secret@a:1?bogus=1", "unknown option \"bogus\""),
            ("etcd://u:secret@a:1?ca=", "has no value"),
            ("etcd://u:secret@a:1?ca=x&ca=y", "given twice"),
            ("a:1", "use etcd://HOST:PORT"),
        ] {
            let e = CoordinatorUrl::parse(url, USAGE, &["ca"])
                .err()
                .unwrap_or_else(|| panic!("{url} was accepted"))
                .to_string();
            assert!(e.contains(says), "{url}: {e}");
            assert!(!e.contains("secret"), "{url}: {e}");
        }
    }
}

//! The one policy for showing a URL that may hold a secret (errors, logs, status pages,
//! `--check-config`): what is masked and what stays readable.

use percent_encoding::percent_decode_str;

/// Query parameters whose whole name, lowercased, is a secret's: their value is masked.
const SECRET_PARAMS: &[&str] = &[
    "pass",
    "pwd",
    "auth",
    "apikey",
    "api_key",
    "access_key",
    "private_key",
];

/// Words that make any query parameter containing them (lowercased) a secret's:
/// `password`, `sslpassword`, `passwd`, `client_secret`, `token`, `auth_token`, ...
const SECRET_WORDS: &[&str] = &["password", "passwd", "secret", "token", "credential"];

/// `url` with its secrets replaced by `***`, for errors, logs and `--check-config`.
///
/// Masked: the password of the user part (`postgres://app:***@db/ids`, the user stays),
/// and the value of every query parameter named like a secret: a name (percent-decoded,
/// any case) containing `password`, `passwd`, `secret`, `token` or `credential`, or equal to
/// `pass`, `pwd`, `auth`, `apikey`, `api_key`, `access_key` or `private_key`
/// (`postgres://h/db?password=***`).
///
/// Kept: the scheme, user, hosts, path, fragment and every other parameter. `key`, `cert`
/// and `ca` stay readable on purpose: on etcd (`?key=/etc/snowdrift/client.key`) and
/// PostgreSQL (`sslkey=`) they name a file, not hold a secret, and seeing which file is what
/// a config check is for. Text that is not `SCHEME://...` is returned as it is.
pub fn mask_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    // The authority ends at the path, the query or the fragment: an etcd URL's options
    // (`?ca=/etc/ca.pem`) may hold '/' and '@' of their own.
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{hosts}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let (tail, fragment) = match tail.split_once('#') {
        Some((tail, fragment)) => (tail, Some(fragment)),
        None => (tail, None),
    };
    let mut shown = format!("{scheme}://{authority}");
    match tail.split_once('?') {
        Some((path, query)) => {
            shown.push_str(path);
            shown.push('?');
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((name, value)) if !value.is_empty() && is_secret(name) => {
                        format!("{name}=***")
                    }
                    _ => pair.to_string(),
                })
                .collect();
            shown.push_str(&pairs.join("&"));
        }
        None => shown.push_str(tail),
    }
    if let Some(fragment) = fragment {
        shown.push('#');
        shown.push_str(fragment);
    }
    shown
}

/// Whether a query parameter named `name` (as written, maybe percent-encoded) holds a
/// secret.
fn is_secret(name: &str) -> bool {
    let name = percent_decode_str(name)
        .decode_utf8_lossy()
        .to_ascii_lowercase();
    SECRET_PARAMS.contains(&name.as_str()) || SECRET_WORDS.iter().any(|w| name.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_passwords_are_masked_and_the_rest_kept() {
        assert_eq!(
            mask_url("postgres://app:hunter2@db:5432/ids"),
            "postgres://app:***@db:5432/ids"
        );
        assert_eq!(mask_url("redis://db:6379"), "redis://db:6379");
        assert_eq!(mask_url("mysql://root@db/test"), "mysql://root@db/test");
        assert_eq!(mask_url("sqlite://ids.db"), "sqlite://ids.db");
        assert_eq!(mask_url("etcd://u:pw@a:1,b:2"), "etcd://u:***@a:1,b:2");
        assert_eq!(
            mask_url("https://sd:pw@a:2379,b:2379?ca=/etc/ca.pem&key=/k@x"),
            "https://sd:***@a:2379,b:2379?ca=/etc/ca.pem&key=/k@x"
        );
        assert_eq!(
            mask_url("zookeeper://sd:pw@a:2181,b:2181"),
            "zookeeper://sd:***@a:2181,b:2181"
        );
        assert_eq!(mask_url("etcd://a:2379?key=k@x"), "etcd://a:2379?key=k@x");
        assert_eq!(mask_url("not a url"), "not a url");
    }

    #[test]
    fn password_like_query_parameters_are_masked() {
        assert_eq!(
            mask_url("postgres://h/db?password=secret"),
            "postgres://h/db?password=***"
        );
        assert_eq!(
            mask_url("postgres://u:pw@h/db?sslmode=require&PassWord=s&sslpassword=s2#frag"),
            "postgres://u:***@h/db?sslmode=require&PassWord=***&sslpassword=***#frag"
        );
        for name in [
            "pass",
            "pwd",
            "passwd",
            "secret",
            "client_secret",
            "token",
            "auth_token",
            "auth",
            "apikey",
            "api_key",
            "access_key",
            "private_key",
            "credentials",
            "pass%77ord",
        ] {
            let shown = mask_url(&format!("mysql://h/db?a=1&{name}=hunter2&b=2"));
            assert_eq!(shown, format!("mysql://h/db?a=1&{name}=***&b=2"));
        }
        // A file's path is not a secret, and an empty value has nothing to hide.
        assert_eq!(
            mask_url("postgres://h/db?sslkey=/k.pem&sslcert=/c.pem&password="),
            "postgres://h/db?sslkey=/k.pem&sslcert=/c.pem&password="
        );
    }
}

//! The parameters of a Tinyid request, read as Tinyid's Spring Boot server (Tomcat) reads
//! them: the query string and a form body (`application/x-www-form-urlencoded`, on the
//! methods Tomcat and Spring read one from) together, every other name and body ignored;
//! and the query or form as a log line may show it, its token masked.

/// A request's body, as far as its parameters are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Body<'a> {
    /// No body, or one that holds no parameters: empty (Tinyid's client POSTs an empty
    /// form), not a form, or a form on a method Tinyid's server reads none from.
    Empty,
    /// A form body: its bytes.
    Form(&'a [u8]),
}

/// What a request asked with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Params {
    /// `bizType`: the segment tag or generator.
    pub(crate) biz_type: Option<String>,
    /// `token`, when sent as a parameter.
    pub(crate) token: Option<String>,
    /// `batchSize`, as sent.
    pub(crate) batch_size: Option<String>,
}

impl Params {
    /// The parameters of `query` and `body` together, as Spring binds them to Tinyid's
    /// `String bizType, Integer batchSize, String token`: a name it does not take is
    /// ignored; one given more than once (the query's values first, then the form's) is
    /// its values joined with commas for the two strings, the first value for `batchSize`.
    /// Refused with the reason: a query or form that is not UTF-8.
    pub(crate) fn read(query: Option<&str>, body: Body<'_>) -> Result<Self, String> {
        let form = match body {
            Body::Empty => &[][..],
            Body::Form(bytes) => bytes,
        };
        let mut params = Params::default();
        let parts = [
            ("query string", query.unwrap_or_default().as_bytes()),
            ("form body", form),
        ];
        for (place, raw) in parts {
            if std::str::from_utf8(raw).is_err() {
                return Err(format!("the {place} is not UTF-8; send text as UTF-8"));
            }
            for pair in raw.split(|&b| b == b'&').filter(|p| !p.is_empty()) {
                let (key, value) = one_pair(pair)
                    .ok_or_else(|| format!("the {place} is not UTF-8 once percent-decoded"))?;
                let (slot, joined) = match key.as_str() {
                    "bizType" => (&mut params.biz_type, true),
                    "token" => (&mut params.token, true),
                    "batchSize" => (&mut params.batch_size, false),
                    _ => continue,
                };
                match slot {
                    None => *slot = Some(value),
                    Some(before) if joined => {
                        before.push(',');
                        before.push_str(&value);
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(params)
    }
}

/// One `key=value` of a query or form, percent-decoded (`+` is a space), or `None` when the
/// decoded bytes are not UTF-8 (they would be read as something not sent).
fn one_pair(pair: &[u8]) -> Option<(String, String)> {
    let split = pair.iter().position(|&b| b == b'=');
    let (key, value) = match split {
        Some(at) => (&pair[..at], &pair[at + 1..]),
        None => (pair, &[][..]),
    };
    Some((decoded(key)?, decoded(value)?))
}

fn decoded(raw: &[u8]) -> Option<String> {
    let plus: Vec<u8> = raw
        .iter()
        .map(|&b| if b == b'+' { b' ' } else { b })
        .collect();
    percent_encoding::percent_decode(&plus)
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

/// `raw` (a query string or form body) as a log line may show it: every `token` value
/// (however its name is percent-encoded) replaced by `***`, the rest as sent, cut to its
/// first 256 characters. Bytes that are not UTF-8 are shown replaced.
pub(crate) fn masked(raw: &[u8]) -> String {
    const MOST: usize = 256;
    let mut out = String::new();
    for (i, pair) in raw.split(|&b| b == b'&').enumerate() {
        if i > 0 {
            out.push('&');
        }
        let at = pair.iter().position(|&b| b == b'=').unwrap_or(pair.len());
        let (key, _) = pair.split_at(at);
        if decoded(key).is_none_or(|k| k == "token") {
            // A name that does not decode might be the token's too: mask it whole.
            out.push_str(&String::from_utf8_lossy(key));
            out.push_str("=***");
        } else {
            out.push_str(&String::from_utf8_lossy(pair));
        }
    }
    match out.char_indices().nth(MOST) {
        None => out,
        Some((end, _)) => format!("{}... ({} bytes in all)", &out[..end], raw.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(query: &str, form: &str) -> Result<Params, String> {
        let body = if form.is_empty() {
            Body::Empty
        } else {
            Body::Form(form.as_bytes())
        };
        Params::read(Some(query), body)
    }

    #[test]
    fn query_and_form_together_as_spring_binds_them() {
        let p = read("token=sd_x&bizType=order", "batchSize=3").unwrap();
        assert_eq!(p.biz_type.as_deref(), Some("order"));
        assert_eq!(p.token.as_deref(), Some("sd_x"));
        assert_eq!(p.batch_size.as_deref(), Some("3"));
        let p = read("", "bizType=a+b%2Fc&token=").unwrap();
        assert_eq!(p.biz_type.as_deref(), Some("a b/c"));
        assert_eq!(p.token.as_deref(), Some(""));
        assert_eq!(read("&&", "").unwrap(), Params::default());
        // Names Tinyid's controller does not take are ignored, as Spring ignores them.
        let p = read("biztype=a&size=3&bizType=b&x", "").unwrap();
        assert_eq!(p.biz_type.as_deref(), Some("b"));
        assert_eq!(p.batch_size, None);
        // A string given twice is its values joined, the query's first; batchSize the first.
        let p = read(
            "bizType=a&batchSize=2&token=t",
            "bizType=b&batchSize=9&token=t",
        )
        .unwrap();
        assert_eq!(p.biz_type.as_deref(), Some("a,b"));
        assert_eq!(p.token.as_deref(), Some("t,t"));
        assert_eq!(p.batch_size.as_deref(), Some("2"));
        let e = read("bizType=%FF", "").unwrap_err();
        assert!(e.contains("UTF-8"), "{e}");
    }

    #[test]
    fn the_token_never_shows() {
        assert_eq!(
            masked(b"token=sd_secret&bizType=order"),
            "token=***&bizType=order"
        );
        assert_eq!(
            masked(b"bizType=o&%74oken=sd_secret"),
            "bizType=o&%74oken=***"
        );
        assert_eq!(masked(b"token"), "token=***");
        assert_eq!(masked(b"%FF=sd_secret"), "%FF=***");
        assert_eq!(masked(b""), "");
        let long = format!("bizType={}&token=sd_secret", "a".repeat(400));
        let shown = masked(long.as_bytes());
        assert!(
            !shown.contains("sd_secret") && shown.contains("bytes in all"),
            "{shown}"
        );
    }
}

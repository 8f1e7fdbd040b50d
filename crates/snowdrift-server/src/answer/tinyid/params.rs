//! The parameters of a Tinyid request, read where Tinyid's Spring server reads them: the
//! query string and a form body (`application/x-www-form-urlencoded`) together; and the
//! query or form as a log line may show it, its token masked.

use crate::error::quoted;

/// A request's body, as far as its parameters are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Body<'a> {
    /// No body, or an empty one (Tinyid's client POSTs an empty form).
    Empty,
    /// A form body: its bytes.
    Form(&'a [u8]),
    /// A body of another type, which holds no parameters: its `content-type` (empty when
    /// it had none).
    Other(&'a str),
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

/// The names the ID routes take; the segment routes take all but `batchSize`.
const ID_NAMES: [&str; 3] = ["bizType", "batchSize", "token"];

impl Params {
    /// The parameters of `query` and `body` together, for a route that takes `batchSize`
    /// (`batch`) or not. Refused with the reason: a name the route does not take, a name
    /// given twice (in the query and the form counts), a value that is not UTF-8, a body
    /// that is not a form.
    pub(crate) fn read(query: Option<&str>, body: Body<'_>, batch: bool) -> Result<Self, String> {
        let allowed: &[&str] = if batch {
            &ID_NAMES
        } else {
            &["bizType", "token"]
        };
        let form = match body {
            Body::Empty => &[][..],
            Body::Form(bytes) => bytes,
            Body::Other(content_type) => {
                return Err(format!(
                    "a body of type {} holds no parameters here: send bizType and token in the \
                     query string, or as a form (application/x-www-form-urlencoded)",
                    if content_type.is_empty() {
                        "(none)".to_string()
                    } else {
                        quoted(content_type)
                    }
                ));
            }
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
                let slot = match key.as_str() {
                    "bizType" => &mut params.biz_type,
                    "token" => &mut params.token,
                    "batchSize" if batch => &mut params.batch_size,
                    _ => {
                        return Err(format!(
                            "unknown parameter {}; this route takes {}",
                            quoted(&key),
                            allowed.join(", ")
                        ));
                    }
                };
                if slot.replace(value).is_some() {
                    return Err(format!(
                        "parameter {key} is given twice (query string and form body count \
                         together); give it once"
                    ));
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

    fn read(query: &str, form: &str, batch: bool) -> Result<Params, String> {
        let body = if form.is_empty() {
            Body::Empty
        } else {
            Body::Form(form.as_bytes())
        };
        Params::read(Some(query), body, batch)
    }

    #[test]
    fn query_and_form_together_each_name_once() {
        let p = read("token=sd_x&bizType=order", "batchSize=3", true).unwrap();
        assert_eq!(p.biz_type.as_deref(), Some("order"));
        assert_eq!(p.token.as_deref(), Some("sd_x"));
        assert_eq!(p.batch_size.as_deref(), Some("3"));
        let p = read("", "bizType=a+b%2Fc&token=", false).unwrap();
        assert_eq!(p.biz_type.as_deref(), Some("a b/c"));
        assert_eq!(p.token.as_deref(), Some(""));
        assert_eq!(read("&&", "", true).unwrap(), Params::default());
        let e = read("bizType=a", "bizType=b", true).unwrap_err();
        assert!(e.contains("bizType is given twice"), "{e}");
        let e = read("biztype=a", "", true).unwrap_err();
        assert!(
            e.contains("\"biztype\"") && e.contains("bizType, batchSize, token"),
            "{e}"
        );
        let e = read("bizType=a&batchSize=2", "", false).unwrap_err();
        assert!(
            e.contains("\"batchSize\"") && e.contains("takes bizType, token"),
            "{e}"
        );
        let e = read("bizType=%FF", "", true).unwrap_err();
        assert!(e.contains("UTF-8"), "{e}");
        let e = Params::read(Some("bizType=a"), Body::Other("application/json"), true).unwrap_err();
        assert!(e.contains("application/json") && e.contains("form"), "{e}");
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

//! The one way this crate opens etcd (worker registry, tso election): endpoints, TLS and user
//! from one URL, and what etcd's refusals mean.
//!
//! `etcd://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...]` (or `http://`) is plain gRPC;
//! `https://...` is TLS, with `?ca=FILE` (the CA that signed etcd's certificate, PEM; the
//! system's roots without it), `cert=FILE&key=FILE` (a client certificate and its key, PEM,
//! for etcd's `--client-cert-auth`) and `domain=NAME` (the name etcd's certificate must carry,
//! when it differs from the host in the URL). A user authenticates with etcd's RBAC; the
//! token etcd gives is renewed when it expires.

use std::time::Duration;

use etcd_client as etcd;
use etcd_client::{Certificate, Client, ConnectOptions, GetOptions, Identity, TlsOptions};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::coordinator_url::CoordinatorUrl;
use crate::error::{Error, Result};
use crate::mask_url;

/// The forms an etcd URL takes, for errors.
const USAGE: &str = "etcd://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...], or https://[USER:PASSWORD@]HOST:PORT[,...]?ca=FILE&cert=FILE&key=FILE for TLS";

/// The options an etcd URL may carry after `?`.
const OPTIONS: [&str; 4] = ["ca", "cert", "key", "domain"];

/// How to reach one etcd cluster.
pub(crate) struct Target {
    endpoints: Vec<String>,
    options: ConnectOptions,
    user: Option<String>,
    tls: bool,
    /// A client certificate is presented.
    identity: bool,
    shown: String,
}

impl Target {
    /// Reads `url`, and the certificate files it names: a missing file or one that holds no
    /// PEM certificate (or key) fails here, not at the first request.
    pub(crate) fn parse(url: &str) -> Result<Self> {
        Self::parse_as(url, false)
    }

    /// As [`Target::parse`], or (`anonymous`) without the URL's user and client
    /// certificate: what anyone who can reach etcd presents.
    fn parse_as(url: &str, anonymous: bool) -> Result<Self> {
        let parts = CoordinatorUrl::parse(url, USAGE, &OPTIONS)?;
        let shown = mask_url(url);
        let bad = |reason: String| Error::InvalidUrl {
            url: shown.clone(),
            reason,
        };
        let tls = match parts.scheme.as_str() {
            "etcd" | "http" => false,
            "https" => true,
            other => return Err(bad(format!("scheme {other:?} is not etcd's; use {USAGE}"))),
        };
        let mut identity = false;
        let mut options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(Duration::from_secs(5));
        if !tls && let Some((key, _)) = parts.options.first() {
            return Err(bad(format!(
                "option {key:?} is for TLS; write https:// to reach etcd over TLS"
            )));
        }
        if tls {
            let mut config = TlsOptions::new();
            config = match parts.option("ca") {
                Some(file) => {
                    let pem = read_pem(file, "ca", &bad)?;
                    check_certificates(&pem, file, "ca", &bad)?;
                    config.ca_certificate(Certificate::from_pem(pem))
                }
                None => config.with_native_roots(),
            };
            match (parts.option("cert"), parts.option("key")) {
                (Some(_), Some(_)) if anonymous => {}
                (Some(cert_file), Some(key_file)) => {
                    let cert = read_pem(cert_file, "cert", &bad)?;
                    check_certificates(&cert, cert_file, "cert", &bad)?;
                    let key = read_pem(key_file, "key", &bad)?;
                    if let Err(e) = PrivateKeyDer::from_pem_slice(&key) {
                        return Err(bad(format!(
                            "key file {key_file:?} holds no PEM private key ({e:?}); give the client certificate's key, PEM"
                        )));
                    }
                    config = config.identity(Identity::from_pem(cert, key));
                    identity = true;
                }
                (None, None) => {}
                (Some(_), None) => {
                    return Err(bad(
                        "cert is given without key; give both, or neither".into()
                    ));
                }
                (None, Some(_)) => {
                    return Err(bad(
                        "key is given without cert; give both, or neither".into()
                    ));
                }
            }
            if let Some(domain) = parts.option("domain") {
                config = config.domain_name(domain);
            }
            options = options.with_tls(config);
        }
        let user = parts.user.as_ref().map(|(user, _)| user.clone());
        if let Some((user, password)) = parts.user.filter(|_| !anonymous) {
            // etcd's simple tokens expire after 5 idle minutes; a registry renews more often
            // than that, but a tso follower may sit idle.
            options = options
                .with_user(user, password)
                .with_auto_token_refresh(true);
        }
        let scheme = if tls { "https" } else { "http" };
        Ok(Self {
            endpoints: parts
                .hosts
                .iter()
                .map(|h| format!("{scheme}://{h}"))
                .collect(),
            options,
            user,
            tls,
            identity,
            shown,
        })
    }

    /// Connects (authenticating the user, if any) and counts the keys under `prefix` once:
    /// the client connects lazily, so a wrong address, certificate or password, or a user
    /// that may not read `prefix`, fails here.
    pub(crate) async fn connect(self, prefix: &str) -> Result<Client> {
        self.try_connect(prefix)
            .await
            .map_err(|e| self.refused(e, prefix))
    }

    /// Connects and counts the keys under `prefix` once, with etcd's own error.
    async fn try_connect(&self, prefix: &str) -> std::result::Result<Client, etcd::Error> {
        let client = Client::connect(&self.endpoints, Some(self.options.clone())).await?;
        client
            .kv_client()
            .get(
                prefix,
                Some(GetOptions::new().with_prefix().with_count_only()),
            )
            .await?;
        Ok(client)
    }

    /// An error of the first requests, said with what to check in the URL.
    fn refused(&self, e: etcd::Error, prefix: &str) -> Error {
        let user = match &self.user {
            Some(user) => format!("the user {user:?}"),
            None => "a client without a user".to_string(),
        };
        let said = match &e {
            etcd::Error::GRpcStatus(s) => s.message().to_string(),
            _ => String::new(),
        };
        if said.contains("authentication failed") {
            return Error::AccessDenied(format!(
                "etcd at {} refused {user} ({said}): check the user and password in the etcd URL",
                self.shown
            ));
        }
        if said.contains("user name is empty") {
            return Error::AccessDenied(format!(
                "etcd at {} has authentication on and was given no user ({said}): write etcd://USER:PASSWORD@HOST:PORT, or give a client certificate whose name is an etcd user",
                self.shown
            ));
        }
        if said.contains("authentication is not enabled") {
            return Error::AccessDenied(format!(
                "etcd at {} has authentication off, so it does not take {user} ({said}): enable it (etcdctl auth enable) or take the user out of the URL",
                self.shown
            ));
        }
        if said.contains("permission denied") {
            return Error::AccessDenied(format!(
                "etcd at {} refused {user} access to {prefix} ({said}): give the user a role with readwrite on the prefix {prefix} (etcdctl role grant-permission ROLE --prefix=true readwrite {prefix})",
                self.shown
            ));
        }
        match failed(e) {
            Error::Unavailable(why) => {
                let hint = if self.tls {
                    "check etcd's address, that its certificate is signed by the ca given and names the host (or set domain=NAME), and that it accepts the cert and key given"
                } else {
                    "check etcd's address, and write https:// if etcd serves TLS"
                };
                Error::Unavailable(format!("etcd at {}: {why}; {hint}", self.shown).into())
            }
            other => other,
        }
    }
}

/// Whether etcd at `url` answers a client that presents neither a user nor a client
/// certificate: one that reads the keys under `prefix` with neither. Such an etcd takes
/// writes from anyone who can reach it (its authentication is off), so a leader key or a
/// worker lease there proves nothing. A refusal (no user, permission denied, a client
/// certificate required) is `false`; an etcd that cannot be reached is the error.
pub async fn takes_anonymous_requests(url: &str, prefix: &str) -> Result<bool> {
    let target = Target::parse_as(url, true)?;
    match target.try_connect(prefix).await {
        Ok(_) => Ok(true),
        Err(e) => {
            let said = match &e {
                etcd::Error::GRpcStatus(s) => format!("{}: {}", s.message(), chain(&e)),
                other => chain(other),
            };
            let refused = [
                "user name is empty",
                "permission denied",
                "invalid auth token",
                "certificate",
                "handshake",
                "tls",
            ]
            .iter()
            .any(|r| said.to_ascii_lowercase().contains(r));
            if refused {
                return Ok(false);
            }
            // A client certificate that etcd requires closes the connection in the TLS
            // handshake, which the client sees as the transport failing: if the URL's own
            // credentials get through, etcd refused the anonymous client.
            let full = Target::parse(url)?;
            if full.identity {
                full.connect(prefix).await.map(|_| false)
            } else {
                Err(target.refused(e, prefix))
            }
        }
    }
}

/// An etcd error as ours: a refusal of this client's rights is [`Error::AccessDenied`], the
/// rest [`Error::Unavailable`], said with every cause (tonic's transport error alone says
/// only "transport error").
pub(crate) fn failed(e: etcd::Error) -> Error {
    if let etcd::Error::GRpcStatus(s) = &e
        && s.message().contains("permission denied")
    {
        return Error::AccessDenied(format!(
            "etcd refused the request ({}): the URL's user needs a role with readwrite on snowdrift's keys (the prefix /snowdrift covers the server's)",
            s.message()
        ));
    }
    Error::Unavailable(chain(&e).into())
}

/// `e` and each of its causes, joined by ": ".
fn chain(e: &etcd::Error) -> String {
    let mut text = e.to_string();
    let mut cause: Option<&(dyn std::error::Error + 'static)> = match e {
        etcd::Error::GRpcStatus(s) => std::error::Error::source(s),
        etcd::Error::TransportError(t) => std::error::Error::source(t),
        etcd::Error::IoError(io) => std::error::Error::source(io),
        _ => None,
    };
    while let Some(c) = cause {
        let part = c.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        cause = c.source();
    }
    text
}

/// The contents of the PEM file given as option `key`.
fn read_pem(file: &str, key: &str, bad: &impl Fn(String) -> Error) -> Result<Vec<u8>> {
    std::fs::read(file).map_err(|e| {
        bad(format!(
            "{key} file {file:?} cannot be read ({e}); give the path of a PEM file this process may read"
        ))
    })
}

/// Fails unless `pem` holds at least one certificate and nothing unreadable.
fn check_certificates(
    pem: &[u8],
    file: &str,
    key: &str,
    bad: &impl Fn(String) -> Error,
) -> Result<()> {
    let mut count = 0;
    for cert in CertificateDer::pem_slice_iter(pem) {
        if let Err(e) = cert {
            return Err(bad(format!(
                "{key} file {file:?} is not valid PEM ({e:?}); give a PEM certificate (-----BEGIN CERTIFICATE-----)"
            )));
        }
        count += 1;
    }
    if count == 0 {
        return Err(bad(format!(
            "{key} file {file:?} holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
        )));
    }
    Ok(())
}

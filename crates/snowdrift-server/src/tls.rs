//! TLS listeners: certificates loaded from PEM files, and a listener that hands axum only
//! connections whose handshake finished, so one slow or broken client never holds up
//! accepting the others.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::server::TlsStream;

use crate::conn::{Admission, Conn};
use crate::error::ConfigError;

/// A handshake that takes longer than this is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A loaded certificate and key, ready to accept TLS connections.
#[derive(Clone)]
pub struct Tls(TlsAcceptor);

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls { .. }")
    }
}

/// Loads the certificate chain and private key (PEM) into an acceptor that offers HTTP/2
/// (gRPC needs it) and HTTP/1.1 by ALPN.
pub fn acceptor(cert: &Path, key: &Path) -> Result<Tls, ConfigError> {
    let bad = |what: &str, path: &Path, e: &dyn std::fmt::Display| {
        ConfigError::new(format!("server.{what} {}: {e}", path.display()))
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad("tls_cert", cert, &e))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad("tls_cert", cert, &e))?;
    if certs.is_empty() {
        return Err(bad("tls_cert", cert, &"holds no PEM certificate"));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| bad("tls_key", key, &e))?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ConfigError::new(format!("TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            ConfigError::new(format!(
                "server.tls_cert and server.tls_key do not make a usable pair: {e}"
            ))
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Tls(TlsAcceptor::from(Arc::new(config))))
}

/// A TCP listener whose connections come out already through the TLS handshake.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<Conn<TcpStream>>, SocketAddr)>,
    local: SocketAddr,
    accepting: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    /// Accepts on `tcp` and runs each handshake in its own task, for the connections
    /// `admission` lets in (the others are closed before their handshake).
    pub fn new(tcp: TcpListener, tls: Tls, admission: Admission) -> std::io::Result<Self> {
        let acceptor = tls.0;
        let local = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(1024);
        let accepting = tokio::spawn(async move {
            loop {
                let (stream, peer) = match tcp.accept().await {
                    Ok(conn) => conn,
                    Err(e) => {
                        // Out of file descriptors and the like: back off, as axum does.
                        tracing::warn!(error = %e, "accepting a TCP connection failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // As on the plain listener: no Nagle delay between a stream's messages.
                let _ = stream.set_nodelay(true);
                let Some(stream) = admission.admit(stream) else {
                    continue;
                };
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(Self {
            ready,
            local,
            accepting,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<Conn<TcpStream>>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(conn) => conn,
            // The accept task only ends when this listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

//! TLS for `https://` and `rediss://` targets of [`load`](crate::load): the trust roots, the
//! blocking handshake each connection starts with, and the non-blocking connection the
//! polling loop reads and writes afterwards, so a deployed server is measured as clients
//! reach it.

use std::io::{self, ErrorKind, Read, Write};
use std::path::Path;
use std::sync::Arc;

use mio::net::TcpStream;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore};

use crate::error::{Context, Error};

/// The client side of TLS for one run: whom to trust, and the name to check.
#[derive(Clone)]
pub struct Tls {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl Tls {
    /// Trusts the certificates in the PEM file `ca` (a private CA, or the server's own
    /// self-signed certificate), else the system's roots; checks the server against `host`.
    pub fn new(host: &str, ca: Option<&Path>) -> Result<Self, Error> {
        let mut roots = RootCertStore::empty();
        match ca {
            Some(path) => {
                let certs = CertificateDer::pem_file_iter(path)
                    .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                    .with_context(|| {
                        format!("--ca {}: not a PEM certificate file", path.display())
                    })?;
                if certs.is_empty() {
                    return Err(Error::Options(format!(
                        "--ca {}: no certificate in it",
                        path.display()
                    )));
                }
                for cert in certs {
                    roots.add(cert).with_context(|| {
                        format!("--ca {}: a certificate rustls cannot use", path.display())
                    })?;
                }
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                roots.add_parsable_certificates(found.certs);
                if roots.is_empty() {
                    return Err(Error::Options(
                        "no trusted root certificates found on this system; give the server's CA with --ca FILE".into(),
                    ));
                }
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .context("setting up TLS")?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = ServerName::try_from(host.to_string()).with_context(|| {
            format!("{host:?} is not a name TLS can check a certificate against")
        })?;
        Ok(Self {
            config: Arc::new(config),
            name,
        })
    }

    /// Completes the handshake on a blocking `stream` (its read timeout bounds each wait).
    pub fn handshake(&self, stream: &mut std::net::TcpStream) -> Result<ClientConnection, Error> {
        let mut tls = ClientConnection::new(self.config.clone(), self.name.clone())
            .context("starting TLS")?;
        while tls.is_handshaking() {
            tls.complete_io(stream)
                .context("TLS handshake (a certificate the client does not trust? see --ca)")?;
        }
        Ok(tls)
    }
}

/// A blocking connection, plain or past its TLS handshake.
pub enum Blocking {
    /// Plain TCP.
    Plain(std::net::TcpStream),
    /// TLS over TCP.
    Tls(Box<rustls::StreamOwned<ClientConnection, std::net::TcpStream>>),
}

impl Blocking {
    /// The connection made non-blocking for the polling loop.
    pub fn into_polled(self) -> io::Result<Polled> {
        match self {
            Blocking::Plain(stream) => {
                stream.set_nonblocking(true)?;
                Ok(Polled::Plain(TcpStream::from_std(stream)))
            }
            Blocking::Tls(owned) => {
                let rustls::StreamOwned { conn, sock } = *owned;
                sock.set_nonblocking(true)?;
                Ok(Polled::Tls(Box::new((TcpStream::from_std(sock), conn))))
            }
        }
    }
}

impl Read for Blocking {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Blocking::Plain(s) => s.read(buf),
            Blocking::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Blocking {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Blocking::Plain(s) => s.write(buf),
            Blocking::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Blocking::Plain(s) => s.flush(),
            Blocking::Tls(s) => s.flush(),
        }
    }
}

/// A non-blocking connection of the polling loop. `read` and `write` behave as a socket's:
/// `WouldBlock` when nothing can move now. Over TLS, `write` takes the bytes into the
/// session at once; what the socket cannot take yet goes out on the next
/// [`flush_pending`](Self::flush_pending) (called when the socket turns writable).
pub enum Polled {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP.
    Tls(Box<(TcpStream, ClientConnection)>),
}

impl Polled {
    /// The socket, to register with the poll.
    pub fn socket(&mut self) -> &mut TcpStream {
        match self {
            Polled::Plain(s) => s,
            Polled::Tls(t) => &mut t.0,
        }
    }

    /// Sends what TLS holds for the socket, as far as it takes it now.
    pub fn flush_pending(&mut self) -> io::Result<()> {
        let Polled::Tls(t) = self else {
            return Ok(());
        };
        let (sock, tls) = &mut **t;
        while tls.wants_write() {
            match tls.write_tls(sock) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Writes `buf` (all of it, over TLS).
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Polled::Plain(s) => s.write(buf),
            Polled::Tls(t) => {
                t.1.writer().write_all(buf)?;
                self.flush_pending()?;
                Ok(buf.len())
            }
        }
    }

    /// Reads what has arrived: `Ok(0)` at the end of the stream.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Polled::Plain(s) => s.read(buf),
            Polled::Tls(t) => {
                let (sock, tls) = &mut **t;
                loop {
                    match tls.reader().read(buf) {
                        Ok(n) => return Ok(n),
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                        Err(e) => return Err(e),
                    }
                    // No plaintext yet: take more records off the socket.
                    match tls.read_tls(sock) {
                        Ok(0) => return Ok(0),
                        Ok(_) => {
                            tls.process_new_packets()
                                .map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }
}

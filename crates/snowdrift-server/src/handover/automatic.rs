//! hyper's automatic answers given the contract's error body. When hyper cannot parse a
//! request head on a connection the fast path handed over (a bad request line or header,
//! a head over `limits.max_head`, a target too long), it answers 400, 431 or 414 itself with
//! an empty body and closes; it has no hook to shape that answer. This layer, between hyper
//! and the connection, recognises such an answer (a 4xx head written alone with
//! `content-length: 0` and no `content-type`, which no handler of this server writes: every
//! refusal it makes carries a JSON body) and sends it with the JSON body the fast path
//! and the handlers give.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::answer::refusal;

/// `io`, with hyper's empty-bodied automatic answers written with the contract's body.
#[derive(Debug)]
pub(crate) struct ErrorBodies<I> {
    io: I,
    /// A rewritten answer not yet written whole, and how much of it is written.
    pending: Vec<u8>,
    written: usize,
}

impl<I> ErrorBodies<I> {
    pub(crate) fn new(io: I) -> Self {
        Self {
            io,
            pending: Vec::new(),
            written: 0,
        }
    }
}

impl<I: AsyncWrite + Unpin> ErrorBodies<I> {
    /// Writes what is pending of a rewritten answer.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.pending.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.pending[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.pending.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }

    /// Takes `buf` whole as a rewritten answer if it is one of hyper's automatic answers.
    fn take_automatic(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Option<io::Result<usize>> {
        let rewritten = rewrite(buf)?;
        self.pending = rewritten;
        self.written = 0;
        // Written now if it can be; the rest by the next write, flush or shutdown (hyper
        // flushes and shuts down after such an answer).
        match self.poll_drain(cx) {
            Poll::Ready(Err(e)) => Some(Err(e)),
            _ => Some(Ok(buf.len())),
        }
    }
}

/// The answer `buf` with the contract's body, if `buf` is exactly one of hyper's automatic
/// answers: `HTTP/1.1 4xx` with a status [`refusal::head`] knows, `content-length: 0`, no
/// `content-type`, and nothing after the head.
fn rewrite(buf: &[u8]) -> Option<Vec<u8>> {
    let rest = buf.strip_prefix(b"HTTP/1.1 4")?;
    let head_len = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    if head_len != buf.len() {
        return None;
    }
    let code: u16 = std::str::from_utf8(rest.get(..2)?).ok()?.parse().ok()?;
    let status = 400 + code;
    refusal::head(status)?;
    let head = std::str::from_utf8(&buf[..head_len - 2]).ok()?;
    let mut empty = false;
    let mut kept = String::with_capacity(head.len() + 64);
    for line in head.split_inclusive("\r\n") {
        let lower = line.to_ascii_lowercase();
        if lower.starts_with("content-type:") {
            return None;
        }
        if lower.trim_end() == "content-length: 0" {
            empty = true;
            continue;
        }
        kept.push_str(line);
    }
    if !empty {
        return None;
    }
    let body = refusal::head_body(status)?;
    let mut out = kept.into_bytes();
    out.extend_from_slice(
        format!(
            "content-type: application/json\r\nx-content-type-options: nosniff\r\n\
             content-length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    out.extend_from_slice(&body);
    Some(out)
}

impl<I: AsyncRead + Unpin> AsyncRead for ErrorBodies<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for ErrorBodies<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_drain(cx))?;
        if let Some(done) = self.take_automatic(cx, buf) {
            return Poll::Ready(done);
        }
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_drain(cx))?;
        // An automatic answer is a head alone: one non-empty slice.
        let mut filled = bufs.iter().filter(|b| !b.is_empty());
        if let (Some(only), None) = (filled.next(), filled.next())
            && let Some(done) = self.take_automatic(cx, only)
        {
            return Poll::Ready(done);
        }
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYPER_431: &[u8] =
        b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\n\
                               content-length: 0\r\ndate: Wed, 25 Nov 2026 20:22:03 GMT\r\n\r\n";

    #[test]
    fn hyper_s_empty_answers_get_the_contract_s_body() {
        let out = String::from_utf8(rewrite(HYPER_431).unwrap()).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 "), "{head}");
        assert!(head.contains("connection: close\r\n"), "{head}");
        assert!(head.contains("date: "), "{head}");
        assert!(head.contains("content-type: application/json"), "{head}");
        assert!(
            head.ends_with(&format!("content-length: {}", body.len())),
            "{head}"
        );
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "invalid_request", "{body}");
        assert!(body.contains("limits.max_head"), "{body}");
    }

    #[test]
    fn the_server_s_own_answers_pass_untouched() {
        for answer in [
            // A handler's refusal: it has a type and a body.
            &b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 0\r\n\r\n"[..],
            // A head with its body in the same write.
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\n{}",
            // Success, another status, a partial head, a body that looks like a head.
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n",
            b"{\"ids\":[1]}",
        ] {
            assert!(rewrite(answer).is_none(), "{}", String::from_utf8_lossy(answer));
        }
    }

    #[tokio::test]
    async fn written_whole_through_a_slow_connection() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // A pipe of 7 bytes: the rewritten answer goes out over many writes and the flush.
        let (mut client, server) = tokio::io::duplex(7);
        let reader = tokio::spawn(async move {
            let mut all = Vec::new();
            client.read_to_end(&mut all).await.unwrap();
            all
        });
        let mut io = ErrorBodies::new(server);
        io.write_all(HYPER_431).await.unwrap();
        io.shutdown().await.unwrap();
        drop(io);
        let all = String::from_utf8(reader.await.unwrap()).unwrap();
        assert!(all.starts_with("HTTP/1.1 431 "), "{all}");
        assert!(all.ends_with('}'), "{all}");
    }
}

//! Readers of the request framing the server parses itself, rather than through hyper or a
//! Redis library: the head of a single-ID HTTP/1.1 request ([`http1`]) and RESP frames
//! ([`resp`]). Each takes a connection's buffer and says how much of it is one request, or
//! that more must be read; each is a fuzz target's subject.

pub mod http1;
pub mod resp;

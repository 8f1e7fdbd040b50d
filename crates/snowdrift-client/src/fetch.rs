//! One fetch of a batch from the servers: `Next` for a batch the servers' default
//! `limits.max_count` allows, `Stream` above it (or above a server's lower `max_count`, once
//! it refused one); each call cut at the deadline, a failed one retried on the next
//! endpoint after a backoff, a final error returned at once.

use std::sync::atomic::Ordering;
use std::time::Instant;

use snowdrift_proto::Kind;
use snowdrift_proto::grpc::{IdBatch, NextRequest, StreamRequest};

use crate::cache::Batch;
use crate::client::Shared;
use crate::endpoints::Endpoint;
use crate::error::{Error, ErrorKind};
use crate::guard::{Guard, Refusal, check_shape};

/// The largest batch asked for with one `Next` call: the servers' default
/// `limits.max_count`. Larger batches are streamed, in messages of the server's
/// `limits.max_count`.
pub(crate) const NEXT_MAX: u64 = 10_000;

impl Shared {
    /// One batch of `count` IDs of `name`, checked by `guard` (and recorded there) before it
    /// is returned.
    pub(crate) async fn fetch(
        &self,
        name: &str,
        count: u64,
        guard: &Guard,
    ) -> Result<Batch, Error> {
        self.fetch_with(name, count, None, Some(guard)).await
    }

    /// One batch of `count` IDs of `name`, made of `input` (the name a uuid3 or uuid5
    /// generator hashes) when given. An answer that fails the checks of [`crate::guard`]
    /// (with `guard`, also against what the name received before) is refused: counted,
    /// its endpoint marked failed at once (left out for its backoff), and the next endpoint
    /// asked; when no endpoint gives an acceptable batch the error says what each sent.
    pub(crate) async fn fetch_with(
        &self,
        name: &str,
        count: u64,
        input: Option<&str>,
        guard: Option<&Guard>,
    ) -> Result<Batch, Error> {
        let mut last = None;
        // The last refusal of each endpoint, in the order they were first refused.
        let mut refusals: Vec<(&str, String)> = Vec::new();
        for _ in 0..self.attempts {
            let endpoint = self.endpoints.pick();
            let started = Instant::now();
            let answer =
                tokio::time::timeout(self.deadline, self.call(endpoint, name, count, input)).await;
            let error = match answer {
                Ok(Ok((batch, mismatch))) => {
                    let checked = match (mismatch, guard) {
                        (Some(why), _) => Err(Refusal(why)),
                        (None, Some(g)) => g.admit(&endpoint.url, name, &batch, count),
                        (None, None) => check_shape(&endpoint.url, name, &batch, count),
                    };
                    match checked {
                        Ok(()) => {
                            self.endpoints.succeeded(endpoint);
                            metrics::histogram!("snowdrift_client_fetch_seconds", "name" => name.to_string())
                                .record(started.elapsed().as_secs_f64());
                            return Ok(batch);
                        }
                        Err(Refusal(why)) => {
                            tracing::warn!(endpoint = %endpoint.url, name, "snowdrift client refused a batch: {why}");
                            if let Some(g) = guard {
                                g.count_refusal();
                            }
                            metrics::counter!(
                                "snowdrift_client_refused_total",
                                "name" => name.to_string(),
                                "endpoint" => endpoint.url.clone()
                            )
                            .increment(1);
                            match refusals.iter_mut().find(|(url, _)| *url == endpoint.url) {
                                Some((_, old)) => old.clone_from(&why),
                                None => refusals.push((&endpoint.url, why.clone())),
                            }
                            let error = Error::new(ErrorKind::Refused, why);
                            let wait = self.endpoints.refused(endpoint, &error);
                            last = Some(error);
                            if self.endpoints.len() == 1 {
                                tokio::time::sleep(wait).await;
                            }
                            continue;
                        }
                    }
                }
                Ok(Err(e)) => e,
                Err(_) => Error::new(
                    ErrorKind::Unavailable,
                    format!("{}: no answer within {:?}", endpoint.url, self.deadline),
                ),
            };
            if error.is_final() {
                return Err(error);
            }
            metrics::counter!("snowdrift_client_fetch_errors_total", "endpoint" => endpoint.url.clone())
                .increment(1);
            let wait = self.endpoints.failed(endpoint, &error);
            last = Some(error);
            if self.endpoints.len() == 1 {
                tokio::time::sleep(wait).await;
            }
        }
        if !refusals.is_empty() {
            return Err(Error::new(
                ErrorKind::Refused,
                format!(
                    "{name:?}: no server gave IDs this client could accept after {} tries; \
                     refused: {}; endpoints: {}",
                    self.attempts,
                    refusals
                        .iter()
                        .map(|(_, why)| why.as_str())
                        .collect::<Vec<_>>()
                        .join("; "),
                    self.endpoints.describe()
                ),
            ));
        }
        let last = last.map(|e| e.message().to_string()).unwrap_or_default();
        Err(Error::new(
            ErrorKind::Unavailable,
            format!(
                "{name:?}: the cache is empty and no server answered after {} tries ({last}); \
                 endpoints: {}",
                self.attempts,
                self.endpoints.describe()
            ),
        ))
    }

    /// One call to `endpoint`: the batch, and why it must be refused when one of its
    /// messages does not fit the request (see [`mismatch`]).
    async fn call(
        &self,
        endpoint: &Endpoint,
        name: &str,
        count: u64,
        input: Option<&str>,
    ) -> Result<(Batch, Option<String>), Error> {
        let mut client = endpoint.client.clone();
        let status = |s: tonic::Status| Error::from_status(&endpoint.url, &s);
        let next_max = endpoint.next_max.load(Ordering::Relaxed);
        let mut refused = None;
        if count <= next_max {
            let request = self.request(NextRequest {
                name: name.to_string(),
                count: Some(count),
                format: None,
                input: input.map(str::to_string),
            });
            match client.next(request).await {
                Ok(batch) => {
                    let batch = batch.into_inner();
                    let why = mismatch(&endpoint.url, name, &batch);
                    return Ok((Batch::from_message(batch), why));
                }
                // A server whose `limits.max_count` is below `count` refuses it (before
                // issuing anything); its `Stream` serves the count in messages of its own
                // size. Any other invalid request fails there too, with its own message.
                Err(s) if s.code() == tonic::Code::InvalidArgument && count > 1 => {
                    refused = Some(s);
                }
                Err(s) => return Err(status(s)),
            }
        }
        // No `batch`: messages of the server's own `limits.max_count`, so a server that
        // allows less is not refused, and one that allows more sends fewer messages (64-bit
        // IDs go as runs, a few bytes whatever the count; each message costs the server an
        // issue and an encode).
        let request = self.request(StreamRequest {
            name: name.to_string(),
            count,
            batch: None,
            format: None,
            input: input.map(str::to_string),
        });
        let streamed = match client.stream(request).await {
            Ok(stream) => stream,
            // Not a count the server refuses: its answer to `Next` says what was wrong.
            Err(s) => return Err(status(refused.unwrap_or(s))),
        };
        if refused.is_some() {
            // Later counts this size or larger go straight to `Stream`.
            endpoint.next_max.fetch_min(count - 1, Ordering::Relaxed);
        }
        let mut stream = streamed.into_inner();
        let mut batch: Option<Batch> = None;
        let mut why = None;
        loop {
            match stream.message().await {
                Ok(Some(message)) => {
                    if why.is_none() {
                        why = mismatch(&endpoint.url, name, &message);
                    }
                    match &mut batch {
                        Some(b) => b.extend(message),
                        None => batch = Some(Batch::from_message(message)),
                    }
                }
                Ok(None) => break,
                // What came before the error is whole and new: keep it.
                Err(_) if batch.as_ref().is_some_and(|b| b.len() > 0) => break,
                Err(e) => return Err(status(e)),
            }
        }
        let batch = batch.ok_or_else(|| {
            Error::new(
                ErrorKind::Unavailable,
                format!("{}: the stream of {name:?} ended with no ID", endpoint.url),
            )
        })?;
        Ok((batch, why))
    }

    fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        request.set_timeout(self.deadline);
        if let Some(token) = &self.token {
            request
                .metadata_mut()
                .insert("authorization", token.clone());
        }
        request
    }
}

/// Why a message answered for `name` cannot be taken, from what it says of itself rather
/// than from its IDs (which [`crate::guard`] checks): it names another generator, or its
/// IDs come in the form the other kind has (runs under a text kind such as `uuid7`, text
/// under a 64-bit kind such as `segment`), or in both forms at once. Such an answer is no
/// snowdrift server's (each names the name asked and fills exactly the form of its kind), so
/// its IDs are not held, whatever they are. A kind this build does not know (a newer
/// server's) is judged by its IDs alone.
pub(crate) fn mismatch(endpoint: &str, name: &str, message: &IdBatch) -> Option<String> {
    let broken = |what: String| {
        Some(format!(
            "endpoint {endpoint} answered {what} for {name:?}: a broken answer is refused"
        ))
    };
    if message.name != name {
        return broken(format!("IDs of {:?}", message.name));
    }
    if !message.runs.is_empty() && !message.text.is_empty() {
        return broken("both runs and text IDs in one message".into());
    }
    let kind = message.kind_value()?;
    if kind.is_text() && !message.runs.is_empty() {
        return broken(format!("runs of 64-bit IDs under the text kind {kind}"));
    }
    // Counters are text under a template, numbers without one: either form fits.
    if !kind.is_text() && kind != Kind::Counter && !message.text.is_empty() {
        return broken(format!("text IDs under the 64-bit kind {kind}"));
    }
    None
}

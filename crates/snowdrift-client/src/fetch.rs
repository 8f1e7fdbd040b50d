//! One fetch of a batch from the servers: `Next` for a batch the servers' default
//! `limits.max_count` allows, `Stream` above it; each call cut at the deadline, a failed
//! one retried on the next endpoint after a backoff, a final error returned at once.

use std::time::Instant;

use snowdrift_proto::grpc::{NextRequest, StreamRequest};

use crate::cache::Batch;
use crate::client::Shared;
use crate::endpoints::Endpoint;
use crate::error::{Error, ErrorKind};

/// The largest batch asked for with one `Next` call: the servers' default
/// `limits.max_count`. Larger batches are streamed in messages of that size.
pub(crate) const NEXT_MAX: u64 = 10_000;

impl Shared {
    /// One batch of `count` IDs of `name`.
    pub(crate) async fn fetch(&self, name: &str, count: u64) -> Result<Batch, Error> {
        self.fetch_with(name, count, None).await
    }

    /// One batch of `count` IDs of `name`, made of `input` (the name a uuid3 or uuid5
    /// generator hashes) when given.
    pub(crate) async fn fetch_with(
        &self,
        name: &str,
        count: u64,
        input: Option<&str>,
    ) -> Result<Batch, Error> {
        let mut last = None;
        for _ in 0..self.attempts {
            let endpoint = self.endpoints.pick();
            let started = Instant::now();
            let answer =
                tokio::time::timeout(self.deadline, self.call(endpoint, name, count, input)).await;
            let error = match answer {
                Ok(Ok(batch)) => {
                    self.endpoints.succeeded(endpoint);
                    metrics::histogram!("snowdrift_client_fetch_seconds", "name" => name.to_string())
                        .record(started.elapsed().as_secs_f64());
                    return Ok(batch);
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

    async fn call(
        &self,
        endpoint: &Endpoint,
        name: &str,
        count: u64,
        input: Option<&str>,
    ) -> Result<Batch, Error> {
        let mut client = endpoint.client.clone();
        let status = |s: tonic::Status| Error::from_status(&endpoint.url, &s);
        if count <= NEXT_MAX {
            let request = self.request(NextRequest {
                name: name.to_string(),
                count: Some(count),
                format: None,
                input: input.map(str::to_string),
            });
            let batch = client.next(request).await.map_err(status)?;
            return Ok(Batch::from_message(batch.into_inner()));
        }
        let request = self.request(StreamRequest {
            name: name.to_string(),
            count,
            batch: Some(NEXT_MAX),
            format: None,
            input: input.map(str::to_string),
        });
        let mut stream = client.stream(request).await.map_err(status)?.into_inner();
        let mut batch: Option<Batch> = None;
        loop {
            match stream.message().await {
                Ok(Some(message)) => match &mut batch {
                    Some(b) => b.extend(message),
                    None => batch = Some(Batch::from_message(message)),
                },
                Ok(None) => break,
                // What came before the error is whole and new: keep it.
                Err(_) if batch.as_ref().is_some_and(|b| b.len() > 0) => break,
                Err(e) => return Err(status(e)),
            }
        }
        batch.ok_or_else(|| {
            Error::new(
                ErrorKind::Unavailable,
                format!("{}: the stream of {name:?} ended with no ID", endpoint.url),
            )
        })
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

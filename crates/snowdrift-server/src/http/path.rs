//! Path parameters with the contract's errors. axum's own rejection (a parameter that is not
//! UTF-8 once percent-decoded, say) is a plain-text body that JSON clients cannot read.

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::Error;

/// Like axum's `Path<T>`, but refused with the contract's error shape.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Error> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(Self(value)),
            Err(e) => {
                // A route whose parameters do not match its handler is a bug here, not in the
                // request: a 500 rather than blame the caller.
                if e.status().is_server_error() {
                    return Err(Error::internal(
                        "the server's route table is inconsistent; please report this",
                    ));
                }
                Err(Error::invalid(format!(
                    "{}; path segments must be UTF-8, percent-encoded",
                    e.body_text()
                )))
            }
        }
    }
}

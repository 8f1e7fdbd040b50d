//! The server's codec: prost's, except that a request that is not valid protobuf for its
//! method is answered INVALID_ARGUMENT (the caller sent it) where prost's says INTERNAL
//! (which reads as the server's fault, and which clients retry).

use std::marker::PhantomData;

use prost::Message;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic::metadata::MetadataValue;
use tonic::{Code, Status};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// [`ProstCodec`], with undecodable requests refused as INVALID_ARGUMENT.
#[derive(Debug)]
pub struct StrictCodec<T, U> {
    inner: ProstCodec<T, U>,
}

impl<T, U> Default for StrictCodec<T, U> {
    fn default() -> Self {
        Self {
            inner: ProstCodec::default(),
        }
    }
}

impl<T, U> Codec for StrictCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = StrictDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        self.inner.encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        StrictDecoder {
            inner: self.inner.decoder(),
            _message: PhantomData,
        }
    }
}

/// The decoder of [`StrictCodec`].
#[derive(Debug)]
pub struct StrictDecoder<U> {
    inner: ProstDecoder<U>,
    _message: PhantomData<U>,
}

impl<U: Message + Default> Decoder for StrictDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        self.inner.decode(src).map_err(|status| {
            if status.code() == Code::Internal {
                let mut refused = Status::invalid_argument(format!(
                    "the request is not a valid protobuf message for this method ({}); \
                     send the message proto/snowdrift.proto defines",
                    status.message()
                ));
                refused.metadata_mut().insert(
                    super::ERROR_CODE_KEY,
                    MetadataValue::from_static("invalid_request"),
                );
                refused
            } else {
                status
            }
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.inner.buffer_settings()
    }
}

//! Collecting a response body with a hard cap.

use bytes::{Bytes, BytesMut};
use http_body::Body as _;
use http_body_util::BodyExt;

use super::{HttpResponse, ResponseBody};
use crate::layer::BoxError;

/// Why a bounded collection stopped.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// The body (or its declared `Content-Length`) exceeds the cap.
    TooLarge,
    /// The body failed mid-way (connection reset, ...).
    Broken(BoxError),
}

/// True when the response declares a `Content-Length` above `max`: it can be refused
/// before a byte of the body is read. Read from the body's size hint, which
/// hyper sets from the header it already parsed (a body without a declared
/// length hints at least 0 bytes, and is bounded as it is read).
pub(crate) fn declared_too_large(response: &HttpResponse, max: usize) -> bool {
    response.body().size_hint().lower() > max as u64
}

/// Reads the whole body, failing as soon as more than `max` bytes arrived. At most
/// `max` bytes are ever buffered (plus the one chunk that crossed the limit, which
/// is dropped at once).
pub(crate) async fn collect_bounded(
    mut body: ResponseBody,
    max: usize,
) -> Result<Bytes, BodyError> {
    let mut first: Option<Bytes> = None;
    let mut buffer = BytesMut::new();
    let mut total = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(BodyError::Broken)?;
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        if data.is_empty() {
            continue;
        }
        total = total.saturating_add(data.len());
        if total > max {
            return Err(BodyError::TooLarge);
        }
        match first.take() {
            None if buffer.is_empty() => first = Some(data),
            None => buffer.extend_from_slice(&data),
            Some(previous) => {
                // Room for the declared length at once (never past `max`): the
                // buffer then grows once, not by doubling through every size.
                let remaining = usize::try_from(http_body::Body::size_hint(&body).lower())
                    .unwrap_or(usize::MAX);
                let wanted = remaining.saturating_add(total);
                buffer.reserve(wanted.min(max).max(previous.len() + data.len()));
                buffer.extend_from_slice(&previous);
                buffer.extend_from_slice(&data);
            }
        }
        // A body that knows it is complete (its `Content-Length` reached) is not
        // polled once more for its end.
        if http_body::Body::is_end_stream(&body) {
            break;
        }
    }
    Ok(first.unwrap_or_else(|| buffer.freeze()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::stream;
    use http_body_util::StreamBody;

    fn body_of(chunks: Vec<&'static [u8]>) -> ResponseBody {
        let frames = chunks
            .into_iter()
            .map(|c| Ok::<_, BoxError>(http_body::Frame::data(Bytes::from_static(c))));
        StreamBody::new(stream::iter(frames)).boxed_unsync()
    }

    #[tokio::test]
    async fn collects_within_the_cap() {
        let got = collect_bounded(body_of(vec![b"ab", b"", b"cd", b"e"]), 5)
            .await
            .unwrap();
        assert_eq!(&got[..], b"abcde");
        let got = collect_bounded(body_of(vec![b"abc"]), 3).await.unwrap();
        assert_eq!(&got[..], b"abc");
        let got = collect_bounded(body_of(vec![]), 3).await.unwrap();
        assert!(got.is_empty());
    }

    #[tokio::test]
    async fn one_byte_over_fails() {
        let err = collect_bounded(body_of(vec![b"abc", b"def"]), 5).await;
        assert!(matches!(err, Err(BodyError::TooLarge)));
    }
}

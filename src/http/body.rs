//! Reading a capped body: `http_body_util::Limited` counts, this file says what
//! its refusal means. And [`KnownEnd`], which every response body of the client
//! goes through.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Body;
use http_body_util::combinators::Collect;
use http_body_util::{BodyExt, LengthLimitError, Limited};

use super::{BoxError, ResponseBody};

pin_project_lite::pin_project! {
    /// A body that ends as soon as it knows it has ended ([`Body::is_end_stream`]:
    /// its `Content-Length` reached, an HTTP/2 stream closed with nothing left),
    /// without waiting for the end to be signalled too. hyper's HTTP/1.1 body
    /// reports its end through the connection's task, one more wake-up of that
    /// task and of the reader after the last byte arrived; a reader that stopped
    /// right after the reply (an event stream's, say) would leave that wait to a
    /// task of its own. The connection is reused all the same: hyper drains a
    /// body dropped at its declared end. Trailers after the end are not read
    /// (nothing here reads trailers).
    pub(crate) struct KnownEnd<B> {
        #[pin]
        inner: B,
    }
}

impl<B> KnownEnd<B> {
    pub(crate) fn new(inner: B) -> Self {
        KnownEnd { inner }
    }
}

impl<B: Body> Body for KnownEnd<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        if self.inner.is_end_stream() {
            return Poll::Ready(None);
        }
        self.project().inner.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Why a capped read stopped.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// The body exceeds the cap.
    TooLarge,
    /// The body failed mid-way (connection reset, ...).
    Broken(BoxError),
}

/// True when the body declares a length above `max` (hyper sets the size hint
/// from the `Content-Length` it parsed): it can be refused before a byte of it is
/// read. A body without a declared length hints at least 0 bytes, and is bounded
/// as it is read.
pub(crate) fn declared_too_large(body: &impl Body, max: usize) -> bool {
    body.size_hint().lower() > max as u64
}

/// Reads the whole body through [`Limited`]: it fails as soon as more than `max`
/// bytes arrived, so at most `max` bytes are ever buffered.
pub(crate) fn collect_limited(body: ResponseBody, max: usize) -> CollectLimited {
    CollectLimited {
        inner: Limited::new(body, max).collect(),
    }
}

pin_project_lite::pin_project! {
    /// The future of [`collect_limited`]. A named type rather than an `async fn`:
    /// a future awaiting `Limited`'s own would need `Limited`'s `Body` bound
    /// (`BoxError: Into<BoxError>`) for every lifetime, which the compiler cannot
    /// prove when it checks that future for `Send`.
    pub(crate) struct CollectLimited {
        #[pin]
        inner: Collect<Limited<ResponseBody>>,
    }
}

impl Future for CollectLimited {
    type Output = Result<Bytes, BodyError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(match std::task::ready!(self.project().inner.poll(cx)) {
            Ok(collected) => Ok(collected.to_bytes()),
            Err(error) if error.is::<LengthLimitError>() => Err(BodyError::TooLarge),
            Err(error) => Err(BodyError::Broken(error)),
        })
    }
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
        let got = collect_limited(body_of(vec![b"ab", b"", b"cd", b"e"]), 5)
            .await
            .unwrap();
        assert_eq!(&got[..], b"abcde");
        let got = collect_limited(body_of(vec![b"abc"]), 3).await.unwrap();
        assert_eq!(&got[..], b"abc");
        let got = collect_limited(body_of(vec![]), 3).await.unwrap();
        assert!(got.is_empty());
    }

    #[tokio::test]
    async fn one_byte_over_fails() {
        let err = collect_limited(body_of(vec![b"abc", b"def"]), 5).await;
        assert!(matches!(err, Err(BodyError::TooLarge)));
        let err = collect_limited(body_of(vec![b"abcdef"]), 5).await;
        assert!(matches!(err, Err(BodyError::TooLarge)));
    }

    #[tokio::test]
    async fn a_broken_body_is_not_too_large() {
        let frames: Vec<Result<http_body::Frame<Bytes>, BoxError>> = vec![
            Ok(http_body::Frame::data(Bytes::from_static(b"ab"))),
            Err("reset".into()),
        ];
        let err = collect_limited(StreamBody::new(stream::iter(frames)).boxed_unsync(), 5).await;
        assert!(matches!(err, Err(BodyError::Broken(_))));
    }

    /// A body whose end is known: its frames, then the end at once, without a
    /// further poll of the inner body (which would wait forever here).
    #[tokio::test]
    async fn a_body_that_knows_its_end_is_not_polled_for_it() {
        struct Exact(Option<Bytes>);
        impl Body for Exact {
            type Data = Bytes;
            type Error = BoxError;
            fn poll_frame(
                mut self: Pin<&mut Self>,
                _cx: &mut Context<'_>,
            ) -> Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
                match self.0.take() {
                    Some(data) => Poll::Ready(Some(Ok(http_body::Frame::data(data)))),
                    // The end is signalled later, by someone else.
                    None => Poll::Pending,
                }
            }
            fn is_end_stream(&self) -> bool {
                self.0.is_none()
            }
        }
        let body = KnownEnd::new(Exact(Some(Bytes::from_static(b"{}")))).boxed_unsync();
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), collect_limited(body, 8))
            .await
            .expect("ended without waiting")
            .unwrap();
        assert_eq!(&got[..], b"{}");
    }

    #[test]
    fn a_declared_length_over_the_cap_is_seen_before_reading() {
        let body = http_body_util::Full::new(Bytes::from_static(b"abcdef"));
        assert!(declared_too_large(&body, 5));
        assert!(!declared_too_large(&body, 6));
    }
}

//! The redirect policy of the transport's stack, for tower-http's
//! [`FollowRedirect`](tower_http::follow_redirect::FollowRedirect): every rule is
//! one of tower-http's policies but [`MethodRule`], and they are combined with
//! [`PolicyExt::and`] (a redirect is followed only when each says so).
//!
//! | policy | rule |
//! | --- | --- |
//! | [`Limited`] | at most `max` redirects per request |
//! | [`SameOrigin`] | the target has the request's scheme, host and port; any other is not followed, so a token never leaves its origin |
//! | [`MethodRule`] | `307`/`308` for every method, `301`/`302`/`303` for `GET` only (tower-http would turn a `POST` into a `GET`, and the MCP message would be lost); never to a target carrying userinfo; the `Full` request body cloned for the next hop |
//! | [`FilterCredentials`] | `Authorization`, `Cookie` and `Proxy-Authorization` removed before any cross-origin hop (none is followed while [`SameOrigin`] holds: a second line) |
//!
//! A redirect that is not followed is answered as it came: the transport fails
//! its request with `http_status`.

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::Full;
use tower_http::follow_redirect::policy::{
    Action, And, Attempt, FilterCredentials, Limited, Policy, PolicyExt, SameOrigin,
};

use super::BoxError;

/// The transport's redirect policy (see the [module docs](self)).
pub(crate) type RedirectPolicy = And<And<And<Limited, SameOrigin>, MethodRule>, FilterCredentials>;

/// The transport's redirect policy for at most `max` redirects per request.
pub(crate) fn same_origin_policy(max: usize) -> RedirectPolicy {
    Limited::new(max)
        .and::<_, Full<Bytes>, BoxError>(SameOrigin::new())
        .and::<_, Full<Bytes>, BoxError>(MethodRule)
        .and::<_, Full<Bytes>, BoxError>(FilterCredentials::new())
}

/// Which statuses are followed for which method, no userinfo in the target, and
/// the request body cloned for the next hop.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MethodRule;

impl<E> Policy<Full<Bytes>, E> for MethodRule {
    fn redirect(&mut self, attempt: &Attempt<'_>) -> Result<Action, E> {
        let method_kept = match attempt.status() {
            StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT => true,
            StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND | StatusCode::SEE_OTHER => {
                attempt.previous_method() == Method::GET
            }
            _ => false,
        };
        let userinfo = attempt
            .location()
            .authority()
            .is_some_and(|a| a.as_str().contains('@'));
        Ok(if method_kept && !userinfo {
            Action::Follow
        } else {
            Action::Stop
        })
    }

    fn clone_body(&self, body: &Full<Bytes>) -> Option<Full<Bytes>> {
        Some(body.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::{AUTHORIZATION, LOCATION};
    use http::{Request, Response, Uri};
    use std::sync::{Arc, Mutex};
    use tower::ServiceExt;
    use tower_http::follow_redirect::FollowRedirect;

    /// What the redirecting service saw: (method, URI, body, `Authorization`).
    type Seen = Arc<Mutex<Vec<(Method, String, Bytes, Option<String>)>>>;

    /// A service answering `/r/<status>/<location...>` with that redirect and
    /// anything else with `200`.
    fn redirecting(
        seen: Seen,
    ) -> impl tower::Service<
        Request<Full<Bytes>>,
        Response = Response<()>,
        Error = BoxError,
        Future = impl Send,
    > + Clone {
        tower::service_fn(move |req: Request<Full<Bytes>>| {
            let seen = seen.clone();
            async move {
                let (parts, body) = req.into_parts();
                let body = http_body_util::BodyExt::collect(body)
                    .await
                    .unwrap()
                    .to_bytes();
                let auth = parts
                    .headers
                    .get(AUTHORIZATION)
                    .map(|v| v.to_str().unwrap().to_owned());
                seen.lock()
                    .unwrap()
                    .push((parts.method, parts.uri.to_string(), body, auth));
                let path = parts.uri.path().to_owned();
                let mut response = Response::new(());
                if let Some(rest) = path.strip_prefix("/r/") {
                    let (status, location) = rest.split_once('/').unwrap();
                    *response.status_mut() = status.parse::<u16>().unwrap().try_into().unwrap();
                    let location = location.replace('|', "/");
                    response
                        .headers_mut()
                        .insert(LOCATION, location.parse().unwrap());
                }
                Ok::<_, BoxError>(response)
            }
        })
    }

    /// Sends `method uri` with a body and a token; returns the final status
    /// and every request the service saw.
    async fn send(
        method: Method,
        uri: &str,
        max: usize,
    ) -> (u16, Vec<(Method, String, Bytes, Option<String>)>) {
        let seen = Seen::default();
        let service =
            FollowRedirect::with_policy(redirecting(seen.clone()), same_origin_policy(max));
        let mut req = Request::new(Full::new(Bytes::from_static(b"{\"id\":1}")));
        *req.method_mut() = method;
        *req.uri_mut() = uri.parse::<Uri>().unwrap();
        req.headers_mut()
            .insert(AUTHORIZATION, "Bearer tok".parse().unwrap());
        let response = service.oneshot(req).await.unwrap();
        let seen = seen.lock().unwrap().clone();
        (response.status().as_u16(), seen)
    }

    #[tokio::test]
    async fn a_same_origin_307_is_followed_with_method_body_and_token() {
        let (status, seen) = send(Method::POST, "http://h/r/307/http:||h|next", 1).await;
        assert_eq!(status, 200);
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1].0, Method::POST);
        assert_eq!(seen[1].1, "http://h/next");
        assert_eq!(&seen[1].2[..], b"{\"id\":1}");
        assert_eq!(seen[1].3.as_deref(), Some("Bearer tok"));
    }

    #[tokio::test]
    async fn a_cross_origin_redirect_is_not_followed() {
        for target in ["http:||other|x", "https:||h|x", "http:||h:81|x"] {
            let (status, seen) = send(Method::GET, &format!("http://h/r/307/{target}"), 5).await;
            assert_eq!(status, 307, "{target}");
            assert_eq!(seen.len(), 1, "{target}");
        }
    }

    #[tokio::test]
    async fn a_target_with_userinfo_is_not_followed() {
        let (status, seen) = send(Method::GET, "http://h/r/307/http:||u:p@h|x", 5).await;
        assert_eq!(status, 307);
        assert_eq!(seen.len(), 1);
    }

    #[tokio::test]
    async fn moved_and_see_other_are_followed_for_get_only() {
        for code in [301, 302, 303] {
            let (status, seen) = send(Method::GET, &format!("http://h/r/{code}/|x"), 1).await;
            assert_eq!((status, seen.len()), (200, 2), "GET {code}");
            assert_eq!(seen[1].0, Method::GET);
            let (status, seen) = send(Method::POST, &format!("http://h/r/{code}/|x"), 1).await;
            assert_eq!((status, seen.len()), (code, 1), "POST {code}");
        }
        let (status, seen) = send(Method::POST, "http://h/r/308/|x", 1).await;
        assert_eq!((status, seen.len()), (200, 2));
        assert_eq!(seen[1].0, Method::POST);
    }

    #[tokio::test]
    async fn the_hop_limit_holds() {
        // Each hop redirects once more; `max` hops are followed, then the last
        // redirect is answered as it came.
        let (status, seen) = send(Method::GET, "http://h/r/307/|r|307||x", 1).await;
        assert_eq!(status, 307, "1 hop allowed, 2 redirects");
        assert_eq!(seen.len(), 2);
        let (status, seen) = send(Method::GET, "http://h/r/307/|r|307||x", 2).await;
        assert_eq!(status, 200);
        assert_eq!(seen.len(), 3);
        let (status, seen) = send(Method::GET, "http://h/r/307/|x", 0).await;
        assert_eq!((status, seen.len()), (307, 1), "0 hops allowed");
    }
}

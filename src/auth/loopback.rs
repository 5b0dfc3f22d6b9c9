//! The interactive [`Authorizer`]: show the authorization URL to a person and
//! receive the browser's redirect on a one-shot loopback listener (RFC 8252 §7.3).
//!
//! - The listener binds `127.0.0.1` (never `0.0.0.0`, never the name
//!   `localhost`) on an ephemeral port, or the configured one
//!   ([`bind`](LoopbackAuthorizer::bind)), or one remembered from an earlier
//!   login when it is free ([`bind_preferring`](LoopbackAuthorizer::bind_preferring));
//!   the redirect URI is `http://127.0.0.1:<port>/callback`. A redirect URI that
//!   stays the same across logins keeps the client's registration valid, at
//!   servers that require the exact URI registered.
//! - It accepts requests only while an authorization is pending, reads at most
//!   [`MAX_REQUEST_HEAD_BYTES`] of each, and answers `GET /callback` whose `state`
//!   equals the request's (compared in constant time) with a page saying what
//!   happened (authorized; denied or failed, naming a standard `error` code and
//!   never text from the request); then it closes, so later requests are
//!   refused. Other paths get `404`, a wrong or missing `state` `400`; neither
//!   ends the wait (a stray or forged request cannot abort a login), but at most
//!   [`MAX_REQUESTS`] are answered.
//! - The wait ends at the deadline (default [`DEFAULT_DEADLINE`]) with `timeout`.
//!
//! The listener is hand-written (a request line and headers, no body): it serves
//! exactly one `GET`, and the crate's `hyper` has no server feature.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use secrecy::{ExposeSecret, SecretString};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::authorize::{AuthorizationRequest, Authorizer, authorization_error_name};
use crate::error::{Error, ErrorKind, Result};

/// How long a person has to complete the authorization by default: 5 minutes.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(300);
/// The most bytes read of one request's head: 8 KiB.
pub const MAX_REQUEST_HEAD_BYTES: usize = 8 * 1024;
/// The most requests answered while waiting for the callback.
pub const MAX_REQUESTS: usize = 32;

type ShowUrl = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// See the [module docs](self).
pub struct LoopbackAuthorizer {
    listener: Mutex<Option<TcpListener>>,
    redirect_uri: String,
    deadline: Duration,
    show: ShowUrl,
}

impl fmt::Debug for LoopbackAuthorizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopbackAuthorizer")
            .field("redirect_uri", &self.redirect_uri)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl LoopbackAuthorizer {
    /// Binds `127.0.0.1:<port>` (`None`: an ephemeral port). Fails with
    /// `invalid_config`, naming the port, when it cannot be bound.
    pub async fn bind(port: Option<u16>) -> Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port.unwrap_or(0)))
            .await
            .map_err(|e| {
                let port = port.map(|p| format!(":{p}")).unwrap_or_default();
                Error::config(format!(
                    "the login listener cannot bind 127.0.0.1{port} ({})",
                    e.kind()
                ))
            })?;
        Self::from_listener(listener)
    }

    /// Binds `127.0.0.1:<port>` when it can, else an ephemeral port: for a port
    /// remembered from an earlier login, where a new port (and so a new redirect
    /// URI and registration) is better than no login. [`port`](Self::port) tells
    /// which was bound. Fails with `invalid_config` when neither can be.
    pub async fn bind_preferring(port: u16) -> Result<Self> {
        match TcpListener::bind(("127.0.0.1", port)).await {
            Ok(listener) => Self::from_listener(listener),
            Err(_) => Self::bind(None).await,
        }
    }

    fn from_listener(listener: TcpListener) -> Result<Self> {
        let port = listener
            .local_addr()
            .map_err(|_| Error::config("the login listener has no local address"))?
            .port();
        Ok(LoopbackAuthorizer {
            listener: Mutex::new(Some(listener)),
            redirect_uri: format!("http://127.0.0.1:{port}/callback"),
            deadline: DEFAULT_DEADLINE,
            show: Arc::new(|server, url| {
                eprintln!(
                    "smthrs-mcp: to authorize server \"{server}\", open this URL in a browser:\n{url}"
                );
            }),
        })
    }

    /// Sets the deadline. Default: [`DEFAULT_DEADLINE`].
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Replaces how the URL is shown (`show(server, url)`). Default: two lines on
    /// stderr.
    pub fn show_url(mut self, show: impl Fn(&str, &str) + Send + Sync + 'static) -> Self {
        self.show = Arc::new(show);
        self
    }

    /// The listener's port.
    pub fn port(&self) -> Option<u16> {
        self.listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(|l| l.local_addr().ok())
            .map(|a| a.port())
    }
}

const PAGE_OK: &str = "<!doctype html><title>Authorization received</title><p>Authorization received. You may close this window.</p>";
const PAGE_NO_CODE: &str = "<!doctype html><title>Not authorized</title><p>The authorization failed: the response carries no code. You may close this window.</p>";
const PAGE_BAD: &str = "<!doctype html><title>Not accepted</title><p>This request does not belong to the pending authorization.</p>";

/// The page for a callback whose `state` matched: what happened, in crate text
/// only. An `error` is named when it is a standard code
/// ([`authorization_error_name`]) and is `an unknown error` otherwise; nothing
/// from the query (`error_description`, `error_uri`, an unknown code) is
/// reflected, so nothing needs escaping. The chain still validates the response
/// (`iss`, then `error` or `code`) and reports the outcome.
fn callback_page(query: &str) -> std::borrow::Cow<'static, str> {
    let mut error = None;
    let mut code = false;
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        match &*k {
            "error" => error = Some(authorization_error_name(&v)),
            "code" => code = code || !v.is_empty(),
            _ => {}
        }
    }
    match error {
        Some("access_denied") => "<!doctype html><title>Not authorized</title><p>The authorization was denied (access_denied). You may close this window.</p>".into(),
        Some(name) => format!("<!doctype html><title>Not authorized</title><p>The authorization failed ({name}). You may close this window.</p>").into(),
        None if code => PAGE_OK.into(),
        None => PAGE_NO_CODE.into(),
    }
}

async fn respond(stream: &mut TcpStream, status: &str, body: &str) {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Reads the request head (bounded) and returns its request target, for `GET`.
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() >= MAX_REQUEST_HEAD_BYTES {
            return None;
        }
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        head.extend_from_slice(&buf[..n.min(MAX_REQUEST_HEAD_BYTES - head.len())]);
    }
    let line = head.split(|&b| b == b'\r').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    (method == "GET" && version.starts_with("HTTP/1.") && parts.next().is_none())
        .then(|| target.to_owned())
}

impl_authorizer!(LoopbackAuthorizer);

impl LoopbackAuthorizer {
    /// [`Authorizer::authorize`]: shows the URL and waits for the one callback.
    async fn run(&self, request: AuthorizationRequest<'_>) -> Result<SecretString> {
        let listener = self
            .listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Unauthorized,
                    "the login listener was already used (one authorization per login)",
                )
            })?;
        (self.show)(request.server(), request.url().expose_secret());
        let wait = async {
            for _ in 0..MAX_REQUESTS {
                let Ok((mut stream, _)) = listener.accept().await else {
                    continue;
                };
                let target =
                    tokio::time::timeout(Duration::from_secs(10), read_target(&mut stream))
                        .await
                        .ok()
                        .flatten();
                let Some(target) = target else {
                    respond(&mut stream, "400 Bad Request", PAGE_BAD).await;
                    continue;
                };
                let (path, query) = target.split_once('?').unwrap_or((&target, ""));
                if path != "/callback" {
                    respond(&mut stream, "404 Not Found", PAGE_BAD).await;
                    continue;
                }
                let state = url::form_urlencoded::parse(query.as_bytes())
                    .find(|(k, _)| k == "state")
                    .map(|(_, v)| v.into_owned());
                if !state.is_some_and(|s| request.state_matches(&s)) {
                    respond(&mut stream, "400 Bad Request", PAGE_BAD).await;
                    continue;
                }
                respond(&mut stream, "200 OK", &callback_page(query)).await;
                return Ok(SecretString::from(query.to_owned()));
            }
            Err(Error::new(
                ErrorKind::Unauthorized,
                "the login listener received too many requests that were not the authorization's redirect",
            ))
        };
        let outcome = tokio::time::timeout(self.deadline, wait).await;
        drop(listener);
        match outcome {
            Ok(result) => result,
            Err(_) => Err(Error::timeout(format!(
                "server \"{}\": the authorization was not completed before the deadline",
                request.server()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::http::AuthHttp;
    use crate::auth::policy::AddressPolicy;
    use crate::layer::EgressGrants;

    /// The request the chain would make for server `srv`.
    fn authorization_request<'a>(
        authorizer: &'a LoopbackAuthorizer,
        state: &'a SecretString,
        http: &'a AuthHttp,
    ) -> AuthorizationRequest<'a> {
        AuthorizationRequest {
            url: SecretString::from("http://127.0.0.1/authorize"),
            state,
            redirect_uri: authorizer.redirect_uri(),
            server: "srv",
            http,
        }
    }

    fn http() -> AuthHttp {
        crate::auth::http::tests::auth_http(EgressGrants::none(), AddressPolicy::public_only())
    }

    async fn get(port: u16, target: &str) -> Option<String> {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        s.write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).await.ok()?;
        out.lines().next().map(str::to_owned)
    }

    #[tokio::test]
    async fn wrong_state_and_paths_are_refused_then_the_callback_completes_and_the_listener_closes()
    {
        let authorizer = LoopbackAuthorizer::bind(None)
            .await
            .unwrap()
            .show_url(|_, _| {});
        let port = authorizer.port().unwrap();
        assert_eq!(
            authorizer.redirect_uri(),
            format!("http://127.0.0.1:{port}/callback")
        );
        let http = http();
        let state = SecretString::from("expected-state");
        let request = authorization_request(&authorizer, &state, &http);
        let browser = async {
            assert_eq!(
                get(port, "/callback?state=wrong&code=c").await.unwrap(),
                "HTTP/1.1 400 Bad Request"
            );
            assert_eq!(
                get(port, "/callback?code=c").await.unwrap(),
                "HTTP/1.1 400 Bad Request"
            );
            assert_eq!(
                get(port, "/favicon.ico").await.unwrap(),
                "HTTP/1.1 404 Not Found"
            );
            assert_eq!(
                get(port, "/callbackx?state=expected-state").await.unwrap(),
                "HTTP/1.1 404 Not Found"
            );
            assert_eq!(
                get(port, "/callback?state=expected-state&code=c0de")
                    .await
                    .unwrap(),
                "HTTP/1.1 200 OK"
            );
        };
        let (query, ()) = tokio::join!(authorizer.authorize(request), browser);
        assert_eq!(
            query.unwrap().expose_secret(),
            "state=expected-state&code=c0de"
        );
        // One-shot: the listener is closed, a second request is refused.
        assert!(TcpStream::connect(("127.0.0.1", port)).await.is_err());
        let again = authorization_request(&authorizer, &state, &http);
        let err = authorizer.authorize(again).await.unwrap_err();
        assert!(err.message().contains("already used"));
    }

    /// The whole response to one GET.
    async fn page(port: u16, target: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        s.write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    /// The page the browser sees for a callback carrying `rest` after the state.
    async fn page_for(rest: &str) -> String {
        let authorizer = LoopbackAuthorizer::bind(None)
            .await
            .unwrap()
            .show_url(|_, _| {});
        let port = authorizer.port().unwrap();
        let http = http();
        let state = SecretString::from("expected-state");
        let request = authorization_request(&authorizer, &state, &http);
        let target = format!("/callback?state=expected-state{rest}");
        let (query, page) = tokio::join!(authorizer.authorize(request), page(port, &target));
        // The chain validates the query (and reports the error) itself.
        assert!(query.is_ok());
        page
    }

    #[tokio::test]
    async fn the_page_says_what_happened_and_reflects_no_server_text() {
        let ok = page_for("&code=c0de").await;
        assert!(ok.starts_with("HTTP/1.1 200 OK"), "{ok}");
        assert!(ok.contains("<title>Authorization received</title>"), "{ok}");
        assert!(!ok.contains("c0de"), "{ok}");
        let hostile = "%3Cscript%3Ealert(1)%3C%2Fscript%3E";
        let denied = page_for(&format!("&error=access_denied&error_description={hostile}")).await;
        assert!(
            !denied.contains("<title>Authorization received"),
            "{denied}"
        );
        assert!(
            denied.contains("denied") && denied.contains("access_denied"),
            "{denied}"
        );
        assert!(
            !denied.contains("script") && !denied.contains("alert"),
            "{denied}"
        );
        let failed = page_for("&error=invalid_target").await;
        assert!(
            !failed.contains("<title>Authorization received"),
            "{failed}"
        );
        assert!(failed.contains("invalid_target"), "{failed}");
        let unknown = page_for(&format!("&error={hostile}")).await;
        assert!(
            !unknown.contains("<title>Authorization received"),
            "{unknown}"
        );
        assert!(unknown.contains("an unknown error"), "{unknown}");
        assert!(
            !unknown.contains("script") && !unknown.contains("alert"),
            "{unknown}"
        );
        let nothing = page_for("").await;
        assert!(
            !nothing.contains("<title>Authorization received"),
            "{nothing}"
        );
    }

    #[tokio::test]
    async fn a_taken_port_is_named_or_replaced_by_a_free_one() {
        let taken = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = taken.local_addr().unwrap().port();
        let err = LoopbackAuthorizer::bind(Some(port)).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidConfig);
        assert!(
            err.message()
                .contains(&format!("cannot bind 127.0.0.1:{port} (")),
            "{err}"
        );
        let moved = LoopbackAuthorizer::bind_preferring(port).await.unwrap();
        let other = moved.port().unwrap();
        assert_ne!(other, port);
        assert_eq!(
            moved.redirect_uri(),
            format!("http://127.0.0.1:{other}/callback")
        );
        // Free again: the preferred port is the one bound.
        drop(taken);
        let again = LoopbackAuthorizer::bind_preferring(port).await.unwrap();
        assert_eq!(again.port(), Some(port));
        assert_eq!(
            again.redirect_uri(),
            format!("http://127.0.0.1:{port}/callback")
        );
    }

    #[tokio::test]
    async fn the_deadline_ends_the_wait_with_timeout() {
        let authorizer = LoopbackAuthorizer::bind(None)
            .await
            .unwrap()
            .deadline(Duration::from_millis(50))
            .show_url(|_, _| {});
        let http = http();
        let state = SecretString::from("s");
        let request = authorization_request(&authorizer, &state, &http);
        let err = authorizer.authorize(request).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Timeout);
        assert!(err.message().contains("srv"));
    }

    #[tokio::test]
    async fn an_oversized_request_head_is_refused() {
        let authorizer = LoopbackAuthorizer::bind(None)
            .await
            .unwrap()
            .show_url(|_, _| {});
        let port = authorizer.port().unwrap();
        let http = http();
        let state = SecretString::from("s");
        let request = authorization_request(&authorizer, &state, &http);
        let browser = async {
            // A head that never ends within the bound (every byte is read: no reset).
            let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            let head = format!(
                "GET /callback?state=s&pad={}",
                "x".repeat(MAX_REQUEST_HEAD_BYTES)
            );
            s.write_all(&head.as_bytes()[..MAX_REQUEST_HEAD_BYTES])
                .await
                .unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).await.unwrap();
            assert!(out.starts_with("HTTP/1.1 400 Bad Request"), "{out}");
            assert_eq!(
                get(port, "/callback?state=s&code=c").await.unwrap(),
                "HTTP/1.1 200 OK"
            );
        };
        let (query, ()) = tokio::join!(authorizer.authorize(request), browser);
        assert!(query.is_ok());
    }
}

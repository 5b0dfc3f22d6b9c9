//! The OAuth chain against real third-party authorization-server software:
//! panva's `oidc-provider` (npm, pinned in `interop/package-lock.json`, installed
//! by `.ci/run` with `npm ci`), run by `interop/oidc/provider.mjs` together with a
//! small MCP resource server that checks every token with the provider's
//! introspection endpoint and every DPoP proof (signature, `htm`, `htu`, `iat`,
//! `ath`, `jti`, and the key's thumbprint against `cnf.jkt`).
//!
//! Covered: discovery (the provider serves only OpenID Connect discovery),
//! dynamic registration, the authorization code flow with PKCE S256 and resource
//! indicators, completed by a cookie-keeping user agent ([`Browser`]) through the
//! provider's interactions (which the script approves at once), DPoP with the
//! provider's nonces (it requires them on every token request), refresh with
//! rotation after a real expiry and after the resource server's 401, step-up on a
//! 403 `insufficient_scope` (which needed a library fix: the dynamic registration
//! now names the resource's `scopes_supported`, since oidc-provider refuses a
//! scope outside the registered ones), revocation at logout, and the client
//! credentials grant.
//!
//! Locally, without `interop/node_modules/oidc-provider`, the tests print a notice
//! and pass vacuously; under CI (`CI=true`) a missing peer is a failure.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Map, Value};
use smthrs_mcp::auth::{
    AuthorizationRequest, Authorizer, ClientCredentials, DpopMode, Logout, MemoryStore, OAuth,
    TokenStore,
};
use smthrs_mcp::transport::http::HttpTransport;
use smthrs_mcp::{Client, Error, ErrorKind};
use support::interop;
use support::peer_process;
use support::peer_process::HttpPeer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use url::Url;

const REDIRECT: &str = "http://127.0.0.1:8765/callback";
/// The introspecting client `interop/oidc/provider.mjs` pre-registers.
const RS_ID: &str = "resource-server";
const RS_SECRET: &str = "resource-server-fixture-secret";

/// `interop/oidc/provider.mjs`, when oidc-provider is installed.
fn script() -> Option<PathBuf> {
    let interop = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("interop");
    let found = interop
        .join("node_modules/oidc-provider/package.json")
        .exists()
        .then(|| interop.join("oidc/provider.mjs"));
    interop::require(
        found,
        "interop/node_modules/oidc-provider",
        "cd interop && npm ci",
    )
}

/// The provider (its port is the process's) and the resource server on another
/// port: two origins.
struct Peer {
    process: HttpPeer,
    rs_port: u16,
}

impl Peer {
    /// The MCP endpoint, `http://127.0.0.1:<rs-port>/mcp` (also the resource).
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.rs_port)
    }

    fn log(&self) -> String {
        self.process.log()
    }
}

/// The provider and resource server, access tokens living `ttl` seconds.
async fn start(script: &Path, ttl: u64) -> Peer {
    let script = script.to_path_buf();
    let rs_port = peer_process::free_port();
    let process = HttpPeer::start(
        move |port| {
            let mut command = std::process::Command::new("node");
            command
                .arg(script)
                .arg(port.to_string())
                .arg(rs_port.to_string())
                .arg(ttl.to_string());
            command
        },
        Duration::from_secs(30),
    )
    .await;
    Peer { process, rs_port }
}

fn issuer(peer: &Peer) -> String {
    format!("http://127.0.0.1:{}", peer.process.port)
}

fn transport(peer: &Peer, oauth: OAuth) -> HttpTransport {
    HttpTransport::builder("srv", peer.url().as_str())
        .oauth(oauth)
        .build()
        .unwrap()
}

fn login(store: Arc<MemoryStore>, dpop: DpopMode) -> OAuth {
    OAuth::new()
        .authorizer(Arc::new(Browser {
            redirect_uri: REDIRECT.into(),
        }))
        .store(store)
        .dpop(dpop)
}

/// A response read by [`request`].
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request to a loopback `http` URL (`Connection: close`), its
/// response read whole (chunked bodies decoded).
async fn request(method: &str, url: &Url, headers: &[(&str, &str)], body: &[u8]) -> Response {
    let host = url.host_str().unwrap();
    let port = url.port_or_known_default().unwrap();
    let mut stream = tokio::net::TcpStream::connect((host, port)).await.unwrap();
    let target = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut raw))
        .await
        .expect("the peer answers within 20 s")
        .unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete response head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        let mut decoded = Vec::new();
        let mut rest = &body[..];
        loop {
            let line = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let size = usize::from_str_radix(
                String::from_utf8_lossy(&rest[..line])
                    .split(';')
                    .next()
                    .unwrap()
                    .trim(),
                16,
            )
            .unwrap();
            if size == 0 {
                break;
            }
            decoded.extend_from_slice(&rest[line + 2..line + 2 + size]);
            rest = &rest[line + 2 + size + 2..];
        }
        body = decoded;
    }
    Response {
        status: status.parse().unwrap(),
        headers,
        body,
    }
}

/// The provider's introspection answer for `token`, asked as the resource server.
async fn introspect(peer: &Peer, token: &str) -> Value {
    let url = Url::parse(&format!("{}/token/introspection", issuer(peer))).unwrap();
    let body = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("token", token)
        .finish();
    let basic = base64_basic(RS_ID, RS_SECRET);
    let response = request(
        "POST",
        &url,
        &[
            ("Authorization", &basic),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        body.as_bytes(),
    )
    .await;
    assert_eq!(response.status, 200, "introspection answered");
    serde_json::from_slice(&response.body).unwrap()
}

fn base64_basic(id: &str, secret: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"))
    )
}

/// A user agent that keeps cookies and follows the provider's redirects (to its
/// interaction pages, which approve login and consent, and back to `/auth`) until
/// one leads to the redirect URI, whose query it returns.
struct Browser {
    redirect_uri: String,
}

impl Browser {
    async fn run(&self, request: AuthorizationRequest<'_>) -> smthrs_mcp::Result<SecretString> {
        let mut url = Url::parse(request.url().expose_secret()).unwrap();
        let mut jar: BTreeMap<String, String> = BTreeMap::new();
        for _ in 0..12 {
            let cookies = jar
                .iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join("; ");
            let mut headers = vec![];
            if !cookies.is_empty() {
                headers.push(("Cookie", cookies.as_str()));
            }
            let response = self::request("GET", &url, &headers, b"").await;
            for (name, value) in &response.headers {
                if !name.eq_ignore_ascii_case("set-cookie") {
                    continue;
                }
                let pair = value.split(';').next().unwrap_or("");
                if let Some((n, v)) = pair.split_once('=') {
                    if v.is_empty() {
                        jar.remove(n.trim());
                    } else {
                        jar.insert(n.trim().to_owned(), v.to_owned());
                    }
                }
            }
            let location = match (response.status, response.header("location")) {
                (300..=399, Some(location)) => location.to_owned(),
                (status, _) => {
                    return Err(Error::new(
                        ErrorKind::Unauthorized,
                        format!(
                            "{} answered HTTP {status} instead of redirecting",
                            url.path()
                        ),
                    ));
                }
            };
            let next = url.join(&location).unwrap();
            if next.as_str().starts_with(&self.redirect_uri) {
                return Ok(SecretString::from(next.query().unwrap_or("").to_owned()));
            }
            url = next;
        }
        Err(Error::new(ErrorKind::Unauthorized, "too many redirects"))
    }
}

impl Authorizer for Browser {
    fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    fn authorize<'a>(
        &'a self,
        request: AuthorizationRequest<'a>,
    ) -> BoxFuture<'a, smthrs_mcp::Result<SecretString>> {
        Box::pin(self.run(request))
    }
}

/// The stored access and refresh tokens of `store` (key `srv`). Tokens are
/// compared with `assert!`, never `assert_eq!`/`assert_ne!`, whose failure
/// message would print them.
fn stored(store: &MemoryStore) -> (String, Option<String>, bool) {
    let tokens = store.load("srv").unwrap().unwrap().tokens.unwrap().tokens;
    (
        tokens.access_token.expose_secret().to_owned(),
        tokens
            .refresh_token
            .as_ref()
            .map(|r| r.expose_secret().to_owned()),
        tokens.dpop_bound,
    )
}

/// The lines of the peer's log that start with `prefix`.
fn lines(peer: &Peer, prefix: &str) -> Vec<String> {
    peer.log()
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_owned)
        .collect()
}

/// `whoami` through the resource server: `(sub, client_id, token_type)`.
async fn whoami(client: &Client) -> (String, String, String) {
    let result = client.call_tool("whoami", Map::new()).await.unwrap();
    assert!(!result.is_error);
    let s = result.structured_content.clone().unwrap();
    let field = |k: &str| s[k].as_str().unwrap_or_default().to_owned();
    (field("sub"), field("client_id"), field("token_type"))
}

#[tokio::test]
async fn authorization_code_with_pkce_and_dynamic_registration() {
    let Some(script) = script() else {
        return;
    };
    let peer = start(&script, 3600).await;
    let store = Arc::new(MemoryStore::new());
    let client = Client::builder("srv")
        .connect(transport(&peer, login(store.clone(), DpopMode::Off)))
        .await
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", peer.log()));
    let names: Vec<String> = client
        .catalog()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert_eq!(names, ["whoami", "admin"]);

    // Registered dynamically at the provider, and the token was issued to that client.
    let auth = store.load("srv").unwrap().unwrap();
    let registration = auth.registration(&issuer(&peer)).expect("a registration");
    let (sub, client_id, token_type) = whoami(&client).await;
    assert_eq!(sub, "tester");
    assert_eq!(client_id, registration.client_id);
    assert_eq!(token_type, "Bearer");

    // An opaque token for the MCP resource only, with the resource's scope.
    let (access, refresh, dpop_bound) = stored(&store);
    assert!(!dpop_bound);
    let info = introspect(&peer, &access).await;
    assert_eq!(info["active"], true);
    assert_eq!(info["aud"], Value::from(peer.url()));
    assert!(
        info["scope"]
            .as_str()
            .unwrap()
            .split(' ')
            .any(|s| s == "mcp:tools")
    );
    assert!(info.get("cnf").is_none(), "not sender-constrained");
    assert!(refresh.is_some(), "a refresh token was issued");
    client.close().await;
}

#[tokio::test]
async fn dpop_bound_tokens_with_the_providers_nonces() {
    let Some(script) = script() else {
        return;
    };
    let peer = start(&script, 3600).await;
    let store = Arc::new(MemoryStore::new());
    // The provider requires a DPoP nonce on every token request: the flow only
    // completes if the library retries with the nonce it is handed.
    let client = Client::builder("srv")
        .connect(transport(&peer, login(store.clone(), DpopMode::Required)))
        .await
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", peer.log()));
    let (access, _, dpop_bound) = stored(&store);
    assert!(dpop_bound, "token_type DPoP");
    let info = introspect(&peer, &access).await;
    assert_eq!(info["active"], true);
    assert_eq!(info["token_type"], "DPoP");
    assert!(
        info["cnf"]["jkt"].as_str().is_some_and(|j| !j.is_empty()),
        "bound to a key"
    );
    // The provider refused the first proof at the token endpoint for want of its
    // nonce, and took the retry that carried it.
    let tokens = lines(&peer, "AS POST /token ");
    assert_eq!(
        tokens,
        ["AS POST /token 400 use_dpop_nonce", "AS POST /token 200"],
        "{}",
        peer.log()
    );
    // Every resource request carried a fresh, valid proof for that key (the
    // resource server refuses a missing, replayed or mismatched proof), with the
    // resource server's nonce, which it replaces every 3 proofs.
    for _ in 0..6 {
        let (_, _, token_type) = whoami(&client).await;
        assert_eq!(token_type, "DPoP");
    }
    assert!(!peer.log().contains("refused"), "{}", peer.log());
    let accepted = lines(&peer, "RS DPoP proof accepted").len();
    // initialize, its notification, tools/list, the 6 calls.
    assert!(accepted >= 9, "{accepted} accepted:\n{}", peer.log());
    let nonce_retries = lines(&peer, "RS use_dpop_nonce").len();
    assert!(
        (3..=1 + accepted / 3).contains(&nonce_retries),
        "the first proof and each replaced nonce: {nonce_retries} retries for {accepted} requests"
    );
    client.close().await;
}

#[tokio::test]
async fn an_expired_access_token_is_refreshed_and_the_rotated_refresh_token_stored() {
    let Some(script) = script() else {
        return;
    };
    const TTL: u64 = 3;
    let peer = start(&script, TTL).await;
    let store = Arc::new(MemoryStore::new());
    let client = Client::builder("srv")
        .connect(transport(&peer, login(store.clone(), DpopMode::Auto)))
        .await
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", peer.log()));
    let (access, refresh, dpop_bound) = stored(&store);
    let refresh = refresh.expect("a refresh token");
    assert!(dpop_bound, "Auto uses the DPoP the provider advertises");
    assert_eq!(introspect(&peer, &refresh).await["active"], true);

    // Past the access token's lifetime at the provider.
    tokio::time::sleep(Duration::from_secs(TTL + 1)).await;
    assert_eq!(introspect(&peer, &access).await["active"], false, "expired");
    let (_, _, token_type) = whoami(&client).await;
    assert_eq!(token_type, "DPoP");

    let (new_access, new_refresh, still_bound) = stored(&store);
    let new_refresh = new_refresh.expect("a refresh token is kept");
    assert!(new_access != access, "a new access token");
    assert!(
        new_refresh != refresh,
        "the rotated refresh token is stored"
    );
    assert!(still_bound);
    // One refresh at the token endpoint, no new authorization.
    let granted = lines(&peer, "AS POST /token 200").len();
    assert_eq!(granted, 2, "the code, then one refresh:\n{}", peer.log());
    assert_eq!(lines(&peer, "AS GET /auth ").len(), 1, "{}", peer.log());
    assert_eq!(introspect(&peer, &new_access).await["active"], true);
    assert_eq!(introspect(&peer, &new_refresh).await["active"], true);
    assert_eq!(
        introspect(&peer, &refresh).await["active"],
        false,
        "the provider consumed the old refresh token"
    );
    client.close().await;
}

#[tokio::test]
async fn a_token_the_resource_server_refuses_is_refreshed() {
    let Some(script) = script() else {
        return;
    };
    const TTL: u64 = 3;
    let peer = start(&script, TTL).await;
    let store = Arc::new(MemoryStore::new());
    let oauth = login(store.clone(), DpopMode::Auto);
    let client = Client::builder("srv")
        .connect(transport(&peer, oauth.clone()))
        .await
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", peer.log()));
    client.close().await;
    // The stored token claims a long life, so no refresh is due here: the
    // resource server's 401 (the provider says the token is no longer active)
    // must bring the refresh.
    let mut auth = store.load("srv").unwrap().unwrap();
    let tokens = &mut auth.tokens.as_mut().unwrap().tokens;
    tokens.expires_at = tokens.expires_at.map(|at| at + 3600);
    tokens.obtained_at = tokens.obtained_at.map(|at| at + 3600 - 10);
    store.save("srv", &auth).unwrap();
    let (access, refresh, _) = stored(&store);
    let refresh = refresh.expect("a refresh token");
    tokio::time::sleep(Duration::from_secs(TTL + 1)).await;

    let client = Client::builder("srv")
        .connect(transport(&peer, oauth))
        .await
        .unwrap_or_else(|e| panic!("connect again: {e}\n{}", peer.log()));
    let (sub, _, token_type) = whoami(&client).await;
    assert_eq!((sub.as_str(), token_type.as_str()), ("tester", "DPoP"));
    assert_eq!(
        lines(&peer, "RS inactive DPoP token").len(),
        1,
        "{}",
        peer.log()
    );
    // A refresh, not a new authorization.
    assert_eq!(lines(&peer, "AS GET /auth ").len(), 1, "{}", peer.log());
    let (new_access, new_refresh, _) = stored(&store);
    assert!(new_access != access, "a new access token");
    assert!(new_refresh.as_deref() != Some(refresh.as_str()), "rotated");
    assert_eq!(introspect(&peer, &refresh).await["active"], false);
    client.close().await;
}

#[tokio::test]
async fn insufficient_scope_steps_up_with_a_new_authorization() {
    let Some(script) = script() else {
        return;
    };
    let peer = start(&script, 3600).await;
    let store = Arc::new(MemoryStore::new());
    let client = Client::builder("srv")
        .connect(transport(&peer, login(store.clone(), DpopMode::Auto)))
        .await
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", peer.log()));
    let (access, _, _) = stored(&store);
    let scope = introspect(&peer, &access).await["scope"].clone();
    assert!(
        !scope.as_str().unwrap().split(' ').any(|s| s == "mcp:admin"),
        "first login asks what the challenge named: {scope}"
    );
    // `admin` needs mcp:admin: the resource server's 403 names it, the library
    // authorizes again with the union, and the call is retried.
    let result = client
        .call_tool("admin", Map::new())
        .await
        .unwrap_or_else(|e| panic!("step-up: {e}\n{}", peer.log()));
    assert!(!result.is_error);
    let granted = result.structured_content.unwrap()["scope"].clone();
    let granted: Vec<&str> = granted.as_str().unwrap().split(' ').collect();
    assert!(
        granted.contains(&"mcp:admin") && granted.contains(&"mcp:tools"),
        "{granted:?}"
    );
    assert_eq!(lines(&peer, "RS insufficient_scope").len(), 1);
    assert_eq!(lines(&peer, "AS GET /auth ").len(), 2, "{}", peer.log());
    let (new_access, _, _) = stored(&store);
    assert!(new_access != access, "a new access token");
    whoami(&client).await;
    client.close().await;
}

#[tokio::test]
async fn logout_revokes_at_the_providers_revocation_endpoint() {
    let Some(script) = script() else {
        return;
    };
    let peer = start(&script, 3600).await;
    let store = Arc::new(MemoryStore::new());
    let transport = transport(&peer, login(store.clone(), DpopMode::Auto));
    let client = Client::builder("srv")
        .connect(transport.clone())
        .await
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", peer.log()));
    whoami(&client).await;
    client.close().await;
    let (access, refresh, _) = stored(&store);
    let refresh = refresh.expect("a refresh token");
    assert_eq!(introspect(&peer, &access).await["active"], true);
    assert_eq!(introspect(&peer, &refresh).await["active"], true);

    let outcome = transport.logout().await.unwrap();
    assert!(matches!(outcome, Logout::Revoked), "{outcome:?}");
    // Both tokens, each accepted by the provider's revocation endpoint.
    assert_eq!(
        lines(&peer, "AS POST /token/revocation "),
        [
            "AS POST /token/revocation 200",
            "AS POST /token/revocation 200"
        ],
        "{}",
        peer.log()
    );
    assert_eq!(introspect(&peer, &access).await["active"], false);
    assert_eq!(introspect(&peer, &refresh).await["active"], false);
    assert!(store.load("srv").unwrap().unwrap().tokens.is_none());
}

#[tokio::test]
async fn client_credentials_grant() {
    let Some(script) = script() else {
        return;
    };
    let peer = start(&script, 3600).await;
    let store = Arc::new(MemoryStore::new());
    let oauth = OAuth::new()
        .client_credentials(ClientCredentials::Secret {
            client_id: "mcp-machine".into(),
            client_secret: SecretString::from("machine-fixture-secret"),
        })
        .store(store.clone());
    let client = Client::builder("srv")
        .connect(transport(&peer, oauth))
        .await
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", peer.log()));
    let (sub, client_id, token_type) = whoami(&client).await;
    assert_eq!(sub, "", "no end user");
    assert_eq!(client_id, "mcp-machine");
    assert_eq!(token_type, "DPoP");
    let (access, _, dpop_bound) = stored(&store);
    assert!(dpop_bound);
    let info = introspect(&peer, &access).await;
    assert_eq!(info["aud"], Value::from(peer.url()));
    client.close().await;
}

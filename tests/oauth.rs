//! OAuth 2.1 against the in-repo authorization server (`testkit/src/oauth_server.rs`)
//! on loopback: the flow, refresh and rotation, step-up, a change of
//! authorization server, the refusals of the egress and address policies, TLS,
//! and the CLI (`login`, two processes refreshing at once, `logout`).

mod support;

use std::sync::Arc;

use secrecy::{ExposeSecret, SecretString};
use serde_json::{Map, Value, json};
use smthrs_mcp::auth::store::StoredTokens;
use smthrs_mcp::auth::token::TokenSet;
use smthrs_mcp::auth::{FileStore, HeadlessAuthorizer, MemoryStore, OAuth, StoredAuth, TokenStore};
use smthrs_mcp::transport::http::HttpTransport;
use smthrs_mcp::{Client, EgressGrants, ErrorKind};
use smthrs_mcp_testkit::http_server;
use smthrs_mcp_testkit::http_server::{
    ConnectProxy, CountingListener, TestPki, TestServer, full, status, with_header,
};
use support::oauth_server;
use support::oauth_server::{OAuthServer, SplitServer};

fn headless() -> Arc<HeadlessAuthorizer> {
    Arc::new(HeadlessAuthorizer::new("http://127.0.0.1:8765/callback"))
}

async fn connect(url: &str, oauth: OAuth) -> smthrs_mcp::Result<Client> {
    let transport = HttpTransport::builder("srv", url).oauth(oauth).build()?;
    Client::builder("srv").connect(transport).await
}

fn log(server: &OAuthServer) -> Vec<String> {
    server.state.log.lock().unwrap().clone()
}

/// Logs in to `server` with the headless authorizer, keeping the tokens in `store`.
async fn connect_storing(server: &OAuthServer, store: Arc<dyn TokenStore>) -> Client {
    connect(
        &server.url(),
        OAuth::new().authorizer(headless()).store(store),
    )
    .await
    .unwrap()
}

/// Logs in to `server` with the headless authorizer and a fresh store.
async fn connect_headless(server: &OAuthServer) -> Client {
    connect(&server.url(), OAuth::new().authorizer(headless()))
        .await
        .unwrap()
}

/// The tokens `store` holds for `srv`.
fn stored_tokens(store: &dyn TokenStore) -> StoredTokens {
    store.load("srv").unwrap().unwrap().tokens.unwrap()
}

/// A first authorization for `read`, then a call that needs `write` (a step-up).
fn step_up_from_read_to_write(server: &OAuthServer) {
    *server.state.challenge_scope.lock().unwrap() = Some("read".into());
    *server.state.call_scopes.lock().unwrap() = vec!["write".into()];
}

#[tokio::test]
async fn the_flow_puts_the_token_on_every_request_and_a_refused_token_is_refreshed() {
    let server = OAuthServer::start().await;
    let store = Arc::new(MemoryStore::new());
    let oauth = OAuth::new().authorizer(headless()).store(store.clone());
    let client = connect(&server.url(), oauth.clone()).await.unwrap();
    assert_eq!(client.catalog().len(), 1);
    let log = log(&server);
    // One 401, then discovery, registration, authorization, token, and the retry.
    let first_mcp_after_token = log.iter().position(|l| l == "POST /token").unwrap();
    for needed in [
        "GET /.well-known/oauth-protected-resource/mcp",
        "GET /.well-known/oauth-authorization-server",
        "POST /register",
        "GET /authorize",
    ] {
        assert!(
            log[..first_mcp_after_token].contains(&needed.to_string()),
            "{needed}: {log:?}"
        );
    }
    // The access token is refused (expired at the server): one refresh, retried.
    server.state.expire_access_tokens();
    let result = client.call_tool("echo", Map::new()).await.unwrap();
    assert!(!result.is_error);
    assert_eq!(*server.state.refreshes.lock().unwrap(), 1);
    assert_eq!(*server.state.reuse_detected.lock().unwrap(), 0);
    // The rotated refresh token is the one stored.
    let stored = stored_tokens(&*store);
    let refresh = stored.tokens.refresh_token.unwrap();
    assert!(server.state.used.lock().unwrap().len() == 1);
    assert!(
        !server
            .state
            .used
            .lock()
            .unwrap()
            .contains(refresh.expose_secret())
    );
    client.close().await;
    // A second client with the same store sends the stored token: no new flow.
    let authorizations = log.iter().filter(|l| *l == "GET /authorize").count();
    let again = connect(&server.url(), oauth).await.unwrap();
    again.close().await;
    let log = self::log(&server);
    assert_eq!(
        log.iter().filter(|l| *l == "GET /authorize").count(),
        authorizations
    );
}

#[tokio::test]
async fn an_expiring_token_is_refreshed_before_it_is_sent() {
    let server = OAuthServer::start().await;
    // One second: no margin (a fifth of it is under a second), due once expired.
    *server.state.expires_in.lock().unwrap() = 1;
    let store = Arc::new(MemoryStore::new());
    let client = connect_storing(&server, store.clone()).await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let refreshes = *server.state.refreshes.lock().unwrap();
    client.call_tool("echo", Map::new()).await.unwrap();
    assert!(*server.state.refreshes.lock().unwrap() > refreshes);
    assert_eq!(*server.state.reuse_detected.lock().unwrap(), 0);
    client.close().await;
}

fn refreshes(server: &OAuthServer) -> u64 {
    *server.state.refreshes.lock().unwrap()
}

#[tokio::test]
async fn a_fresh_short_lived_token_is_not_refreshed_before_every_request() {
    let server = OAuthServer::start().await;
    // 20 s: inside the old fixed 30 s margin, so every request refreshed it.
    *server.state.expires_in.lock().unwrap() = 20;
    let store = Arc::new(MemoryStore::new());
    let client = connect_storing(&server, store.clone()).await;
    for _ in 0..5 {
        client.call_tool("echo", Map::new()).await.unwrap();
    }
    assert_eq!(refreshes(&server), 0);
    // The lifetime is kept with the token.
    let t = stored_tokens(&*store).tokens;
    let (obtained, expires) = (t.obtained_at.unwrap(), t.expires_at.unwrap());
    assert_eq!(expires - obtained, 20);
    assert!(!t.needs_refresh(obtained + 15));
    assert!(t.needs_refresh(obtained + 16));
    client.close().await;
}

#[tokio::test]
async fn a_token_stored_without_obtained_at_keeps_the_30_s_margin_until_its_first_refresh() {
    let server = OAuthServer::start().await;
    *server.state.expires_in.lock().unwrap() = 20;
    let (client_id, access, refresh) = server.state.seed(&[]);
    let store = Arc::new(MemoryStore::new());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // As an older version stored it: an expiry 20 s ahead, no `obtainedAt`.
    let old = json!({
        "registrations": [],
        "tokens": {
            "issuer": server.issuer(), "resource": format!("{}/mcp", server.issuer()),
            "tokenEndpoint": format!("{}/token", server.issuer()), "clientId": client_id,
            "accessToken": access, "refreshToken": refresh, "expiresAt": now + 20, "scopes": []
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.json");
    std::fs::write(&path, json!({ "srv": old }).to_string()).unwrap();
    let file = FileStore::new(&path);
    let loaded = file.load("srv").unwrap().unwrap();
    assert_eq!(loaded.tokens.as_ref().unwrap().tokens.obtained_at, None);
    store.save("srv", &loaded).unwrap();
    let oauth =
        OAuth::new()
            .store(store.clone())
            .pre_registered(smthrs_mcp::auth::PreRegisteredClient {
                client_id: client_id.clone(),
                client_secret: None,
                issuer: None,
            });
    let client = connect(&server.url(), oauth).await.unwrap();
    // Unknown lifetime, 20 s left: inside 30 s, refreshed before the first request;
    // the new token's lifetime is known, and it is not refreshed again.
    assert_eq!(refreshes(&server), 1);
    for _ in 0..5 {
        client.call_tool("echo", Map::new()).await.unwrap();
    }
    assert_eq!(refreshes(&server), 1);
    let t = stored_tokens(&*store).tokens;
    assert!(t.obtained_at.is_some());
    assert_eq!(*server.state.reuse_detected.lock().unwrap(), 0);
    client.close().await;
}

#[tokio::test]
async fn step_up_asks_for_the_union_of_scopes_and_retries_once() {
    let server = OAuthServer::start().await;
    step_up_from_read_to_write(&server);
    let client = connect_headless(&server).await;
    let result = client.call_tool("echo", Map::new()).await.unwrap();
    assert!(!result.is_error);
    let scopes = server.state.authorize_scopes.lock().unwrap().clone();
    assert_eq!(scopes, ["read", "read write"]);
    client.close().await;
}

#[tokio::test]
async fn a_step_up_stays_within_the_scope_registered_at_the_first_login() {
    // As oidc-provider does: the registration's `scope` bounds every later
    // authorization. The first login asks for the challenge's `read`; the
    // step-up for `write` (listed in the resource's scopes_supported) must not be
    // refused for a registration that named `read` only.
    let server = OAuthServer::start().await;
    *server.state.challenge_scope.lock().unwrap() = Some("read".into());
    *server.state.prm_scopes.lock().unwrap() = Some(vec!["read".into(), "write".into()]);
    *server.state.call_scopes.lock().unwrap() = vec!["write".into()];
    *server.state.enforce_registered_scope.lock().unwrap() = true;
    let client = connect_headless(&server).await;
    let result = client.call_tool("echo", Map::new()).await.unwrap();
    assert!(!result.is_error);
    // One registration, naming the resource's scopes; the first authorization
    // still asks only what the challenge named.
    assert_eq!(
        *server.state.register_scopes.lock().unwrap(),
        [Some("read write".to_owned())]
    );
    let scopes = server.state.authorize_scopes.lock().unwrap().clone();
    assert_eq!(scopes, ["read", "read write"]);
    client.close().await;
}

#[tokio::test]
async fn a_step_up_loop_stops() {
    let server = OAuthServer::start().await;
    *server.state.challenge_scope.lock().unwrap() = Some("admin".into());
    *server.state.call_scopes.lock().unwrap() = vec!["admin".into(), "unobtainable".into()];
    *server.state.withheld.lock().unwrap() = vec!["unobtainable".into()];
    let transport = headless_transport(&server);
    let client = Client::builder("srv")
        .connect(transport.clone())
        .await
        .unwrap();
    // One step-up (the scope was never asked for), still refused: unauthorized
    // (and, like any 401/403 the transport cannot resolve, the session ends).
    let err = client.call_tool("echo", Map::new()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthorized, "{err}");
    assert_eq!(server.state.authorize_scopes.lock().unwrap().len(), 2);
    // A new session of the same transport shares the chain: the next call asks
    // for nothing new, and is refused without another authorization.
    let client = Client::builder("srv").connect(transport).await.unwrap();
    let err = client.call_tool("echo", Map::new()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthorized, "{err}");
    assert!(err.message().contains("already requested"), "{err}");
    assert_eq!(server.state.authorize_scopes.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_new_authorization_server_gets_a_new_registration_and_never_the_old_id() {
    let server = OAuthServer::start().await;
    let other = OAuthServer::start().await;
    let store = Arc::new(MemoryStore::new());
    let client = connect_storing(&server, store.clone()).await;
    let first_id = stored_tokens(&*store).client_id;
    // PRM now names the other AS, and the server refuses the old token.
    *server.state.authorization_server.lock().unwrap() = Some(other.issuer());
    server.state.expire_access_tokens();
    let err = client.call_tool("echo", Map::new()).await;
    let seen_at_other = other.state.client_ids.lock().unwrap().clone();
    assert!(
        seen_at_other.iter().any(|s| s.starts_with("register:")),
        "{seen_at_other:?}"
    );
    assert!(
        seen_at_other.iter().all(|s| !s.ends_with(&first_id)),
        "{seen_at_other:?}"
    );
    // (`server` refuses other's token: the second refusal is unauthorized.)
    assert_eq!(err.unwrap_err().kind(), ErrorKind::Unauthorized);
    let stored = store.load("srv").unwrap().unwrap();
    assert_eq!(stored.registrations.len(), 2, "one registration per issuer");
}

#[tokio::test]
async fn without_an_authorizer_a_needed_login_fails_at_once_with_the_hint() {
    let server = OAuthServer::start().await;
    let err = connect(
        &server.url(),
        OAuth::new().login_hint("run `smthrs-mcp login srv`"),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthorized);
    assert!(err.message().contains("smthrs-mcp login srv"), "{err}");
    // No discovery was attempted: nobody could have acted on it.
    assert!(
        log(&server)
            .iter()
            .all(|l| l.contains("/mcp") && !l.contains("well-known")),
        "{:?}",
        log(&server)
    );
}

/// An MCP server whose PRM names `authorization_server`.
async fn naming(authorization_server: String) -> TestServer {
    TestServer::start(move |req: http_server::Recorded| {
        let issuer = authorization_server.clone();
        async move {
            if req.uri.path() == "/.well-known/oauth-protected-resource/mcp" {
                let base = format!("http://{}", req.header("host").unwrap());
                return full(
                    200,
                    "application/json",
                    json!({"resource": format!("{base}/mcp"), "authorization_servers": [issuer]})
                        .to_string(),
                );
            }
            with_header(
                status(401),
                "www-authenticate",
                "Bearer error=\"invalid_token\"",
            )
        }
    })
    .await
}

#[tokio::test]
async fn discovered_urls_outside_the_policy_are_refused_before_connecting() {
    // 1. The egress grants allow only the MCP origin: the AS (another port) is denied.
    let listener = CountingListener::start().await;
    let server = naming(format!("http://127.0.0.1:{}", listener.addr.port())).await;
    let url = server.url();
    let grants = EgressGrants::parse([format!("net:get|post:http://{}", server.addr)]).unwrap();
    let err = connect(
        &url,
        OAuth::new().authorizer(headless()).egress_grants(grants),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::EgressDenied, "{err}");
    assert_eq!(listener.accepted(), 0);
    // 2. Plain http to a non-loopback host, link-local (cloud metadata), a private
    //    address, a metadata host name: refused by the address policy.
    for issuer in [
        "http://as.example.com",
        "https://169.254.169.254",
        "https://10.0.0.1",
        "https://metadata.google.internal",
    ] {
        let server = naming(issuer.to_owned()).await;
        let err = connect(&server.url(), OAuth::new().authorizer(headless()))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::EgressDenied, "{issuer}: {err}");
        assert!(!err.message().contains(issuer), "{err}");
    }
}

#[tokio::test]
async fn the_whole_chain_over_tls() {
    let pki = TestPki::new();
    let server = OAuthServer::start_with(Some(pki.server_config.clone())).await;
    assert!(server.url().starts_with("https://localhost:"));
    let transport = HttpTransport::builder("srv", server.url())
        .add_root_certificate(pki.ca_der.clone())
        .tls_roots_only(true)
        .oauth(OAuth::new().authorizer(headless()))
        .build()
        .unwrap();
    call_echo_once(transport).await;
    assert!(log(&server).contains(&"POST /token".to_string()));
    // Without the root, the chain's own TLS fails (the MCP request fails first).
    let transport = headless_transport(&server);
    let err = Client::builder("srv").connect(transport).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Tls, "{err}");
}

/// Connects to a [`SplitServer`] through a recording `CONNECT` proxy (with
/// credentials), calls a tool, and returns the tunnel targets to the
/// authorization server's port, each checked to carry the proxy's credentials.
async fn through_a_proxy(proxy_resolves_names: bool) -> (Vec<String>, u16) {
    let pki = TestPki::new();
    let split = SplitServer::start(pki.server_config.clone()).await;
    let proxy = ConnectProxy::start().await;
    let transport = HttpTransport::builder("srv", split.url())
        .add_root_certificate(pki.ca_der.clone())
        .tls_roots_only(true)
        .proxy(format!("http://puser:ppass@{}", proxy.addr))
        .oauth_proxy_resolves_names(proxy_resolves_names)
        .oauth(OAuth::new().authorizer(headless()))
        .build()
        .unwrap();
    call_echo_once(transport).await;
    // The chain reached the authorization server's own listener.
    let at_as: Vec<String> = split
        .authorization
        .server
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.uri.path()))
        .collect();
    for step in [
        "GET /.well-known/oauth-authorization-server",
        "POST /register",
        "GET /authorize",
        "POST /token",
    ] {
        assert!(at_as.contains(&step.to_owned()), "{step}: {at_as:?}");
    }
    let tunnels = proxy.tunnels();
    // The MCP requests went through the proxy too.
    let mcp = format!("127.0.0.1:{}", split.resource.addr.port());
    assert!(
        tunnels.iter().any(|(target, _)| *target == mcp),
        "{tunnels:?}"
    );
    let as_port = split.authorization.server.addr.port();
    let mut to_as = Vec::new();
    for (target, auth) in tunnels {
        assert_eq!(auth.as_deref(), Some("Basic cHVzZXI6cHBhc3M="), "{target}");
        if target.ends_with(&format!(":{as_port}")) {
            to_as.push(target);
        }
    }
    (to_as, as_port)
}

/// With a proxy, the chain's requests (outside the MCP endpoint's origin) go
/// through it as the MCP requests do, but each tunnel's target is an address
/// resolved here and checked by the address policy, never the name: the proxy
/// does not resolve the authorization server's name (`localhost`). TLS still
/// verifies that name, and the proxy's credentials go in every `CONNECT`.
#[tokio::test]
async fn the_chains_requests_go_through_the_proxy_to_the_checked_address() {
    let (to_as, as_port) = through_a_proxy(false).await;
    assert!(to_as.contains(&format!("127.0.0.1:{as_port}")), "{to_as:?}");
    for target in &to_as {
        assert!(
            target.parse::<std::net::SocketAddr>().is_ok(),
            "a tunnel named the host, not an address: {target}"
        );
    }
}

/// `oauth_proxy_resolves_names`: the tunnels name the authorization server's
/// host, and the proxy resolves it.
#[tokio::test]
async fn with_the_opt_in_the_proxy_resolves_the_authorization_servers_name() {
    let (to_as, as_port) = through_a_proxy(true).await;
    assert!(!to_as.is_empty());
    for target in &to_as {
        assert_eq!(*target, format!("localhost:{as_port}"));
    }
}

// ----- the CLI -----

struct CliSetup {
    dir: tempfile::TempDir,
    config: std::path::PathBuf,
}

impl CliSetup {
    fn new(url: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("servers.json");
        std::fs::write(
            &config,
            json!([{"server": "srv", "url": url, "oauth": {}}]).to_string(),
        )
        .unwrap();
        CliSetup { dir, config }
    }

    fn state_home(&self) -> std::path::PathBuf {
        self.dir.path().join("state")
    }

    fn store(&self) -> FileStore {
        FileStore::new(self.state_home().join("smthrs-mcp").join("tokens.json"))
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut c = oauth_server::cli();
        c.arg("--mcp-config").arg(&self.config).args(args);
        c.env("XDG_STATE_HOME", self.state_home());
        c
    }

    /// Runs the CLI with `args`: (exit code, stdout, stderr).
    async fn run(&self, args: &[&str]) -> (i32, String, String) {
        oauth_server::run(self.command(args)).await
    }

    /// Stores `auth` in the token file, under its lock, as a login would.
    fn save_login(&self, auth: &StoredAuth) {
        let store = self.store();
        let _lock = store.lock("srv").unwrap();
        store.save("srv", auth).unwrap();
    }

    /// Rewrites the server file: `srv` at `url` with a pre-registered `client_id`.
    fn pre_register(&self, url: &str, client_id: &str) {
        std::fs::write(
            &self.config,
            json!([{"server": "srv", "url": url, "oauth": {"clientId": client_id}}]).to_string(),
        )
        .unwrap();
    }
}

/// `logout srv` succeeded (`stderr` is shown if not).
fn assert_logged_out(code: i32, stdout: &str, stderr: &str) {
    assert_eq!(
        (code, stdout.trim()),
        (0, "ok: logged out of srv"),
        "{stderr}"
    );
}

#[tokio::test]
async fn two_processes_refreshing_at_once_keep_the_rotating_token() {
    let server = OAuthServer::start().await;
    let setup = CliSetup::new(&server.url());
    let (client_id, _access, refresh) = server.state.seed(&[]);
    // A stored login whose access token has expired (and the server agrees).
    server.state.expire_access_tokens();
    let expired = TokenSet {
        expires_at: Some(1),
        ..oauth_server::token_set("expired", &refresh)
    };
    setup.save_login(&oauth_server::stored_login(
        &server, &client_id, expired, None,
    ));
    let store = setup.store();
    // The stored registration must be known for the refresh: a pre-registered id.
    setup.pre_register(&server.url(), &client_id);
    let (a, b) = tokio::join!(setup.run(&["tools"]), setup.run(&["tools"]));
    assert_eq!(a.0, 0, "first: {}", a.2);
    assert_eq!(b.0, 0, "second: {}", b.2);
    // Exactly one refresh: the second process waited for the lock, re-read the
    // store and used the rotated token; the family was never revoked.
    assert_eq!(*server.state.refreshes.lock().unwrap(), 1);
    assert_eq!(*server.state.reuse_detected.lock().unwrap(), 0);
    let stored = stored_tokens(&store);
    assert_ne!(
        stored.tokens.refresh_token.unwrap().expose_secret(),
        &refresh
    );
}

#[tokio::test]
async fn login_end_to_end_then_tools_then_logout() {
    let server = OAuthServer::start().await;
    let setup = CliSetup::new(&server.url());
    // Before login: tools fails at once, naming the command to run.
    let (code, _, stderr) = setup.run(&["tools"]).await;
    assert_eq!(code, 1, "{stderr}");
    let last = stderr.lines().last().unwrap();
    assert!(last.starts_with("smthrs-mcp: unauthorized: "), "{last}");
    assert!(last.contains("smthrs-mcp login srv"), "{last}");

    // With --diagnostics, the step that failed is reported (crate text only).
    let (code, _, stderr) = setup.run(&["--diagnostics", "tools"]).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(
            "diagnostic: oauth-step: server \"srv\": authorization: failed: unauthorized: "
        ),
        "{stderr}"
    );

    // The browser: GET the authorization URL, follow its redirect to the
    // listener (on 127.0.0.1); the login succeeds.
    let (_, stdout, rest) =
        oauth_server::login_with_browser(setup.command(&["--diagnostics", "login", "srv"])).await;
    // All of stderr: every step of the login, reported without a secret.
    for step in [
        "protected-resource-metadata",
        "registration",
        "authorization",
        "token",
    ] {
        let line = format!("diagnostic: oauth-step: server \"srv\": {step}: ok");
        assert!(rest.contains(&line), "{step}: {rest:?}");
    }
    assert!(
        rest.iter()
            .all(|l| !l.contains("at-") && !l.contains("code-")),
        "{rest:?}"
    );
    assert_eq!(stdout.trim(), "ok: logged in to srv");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(setup.store().path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let (code, stdout, stderr) = setup.run(&["tools"]).await;
    assert_eq!(code, 0, "{stderr}");
    let tools: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(tools[0]["name"], "mcp/srv/echo");
    // The server file holds no token.
    assert!(
        !std::fs::read_to_string(&setup.config)
            .unwrap()
            .contains("at-")
    );
    let (code, stdout, _) = setup.run(&["logout", "srv"]).await;
    assert_eq!((code, stdout.trim()), (0, "ok: logged out of srv"));
    let (code, _, stderr) = setup.run(&["tools"]).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("smthrs-mcp login srv"), "{stderr}");
}

// ----- issue 30 §3: what a real OpenID provider and a real SDK server do -----

fn authorize_prompts(server: &OAuthServer) -> Vec<String> {
    server.state.authorize_prompts.lock().unwrap().clone()
}

#[tokio::test]
async fn an_openid_provider_grants_offline_access_because_consent_is_prompted() {
    // OpenID Connect Core §11: without prompt=consent the provider may drop
    // offline_access, and then issues no refresh token.
    let server = OAuthServer::start().await;
    *server.state.oidc.lock().unwrap() = true;
    *server.state.challenge_scope.lock().unwrap() = Some("read".into());
    let store = Arc::new(MemoryStore::new());
    let client = connect_storing(&server, store.clone()).await;
    assert_eq!(
        *server.state.authorize_scopes.lock().unwrap(),
        ["read offline_access"]
    );
    assert_eq!(authorize_prompts(&server), ["consent"]);
    let stored = stored_tokens(&*store);
    assert!(stored.tokens.refresh_token.is_some(), "no refresh token");
    // So a refused token is refreshed, without a person.
    server.state.expire_access_tokens();
    client.call_tool("echo", Map::new()).await.unwrap();
    assert_eq!(*server.state.refreshes.lock().unwrap(), 1);
    assert_eq!(server.state.authorize_scopes.lock().unwrap().len(), 1);
    client.close().await;
    // Without offline_access (a plain OAuth server lists none), no prompt.
    let plain = OAuthServer::start().await;
    *plain.state.challenge_scope.lock().unwrap() = Some("read".into());
    let client = connect_headless(&plain).await;
    client.close().await;
    assert_eq!(*plain.state.authorize_scopes.lock().unwrap(), ["read"]);
    assert_eq!(authorize_prompts(&plain), [""]);
}

#[tokio::test]
async fn a_step_up_challenge_without_scope_falls_back_to_the_resource_metadata_scopes() {
    let server = OAuthServer::start().await;
    step_up_from_read_to_write(&server);
    *server.state.step_up_without_scope.lock().unwrap() = true;
    *server.state.prm_scopes.lock().unwrap() = Some(vec!["read".into(), "write".into()]);
    let client = connect_headless(&server).await;
    let result = client.call_tool("echo", Map::new()).await.unwrap();
    assert!(!result.is_error);
    assert_eq!(
        *server.state.authorize_scopes.lock().unwrap(),
        ["read", "read write"]
    );
    client.close().await;
}

/// A CLI setup whose token file holds a live login (pre-registered client id)
/// granted `scopes`.
fn logged_in(server: &OAuthServer, scopes: &[&str]) -> CliSetup {
    let setup = CliSetup::new(&server.url());
    let (client_id, access, refresh) = server.state.seed(scopes);
    let tokens = TokenSet {
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        ..oauth_server::token_set(&access, &refresh)
    };
    let revocation = Some(format!("{}/revoke", server.issuer()));
    setup.save_login(&oauth_server::stored_login(
        server, &client_id, tokens, revocation,
    ));
    setup.pre_register(&server.url(), &client_id);
    setup
}

#[tokio::test]
async fn a_step_up_without_a_new_scope_names_the_login_command() {
    // The challenge names no scope and the resource metadata lists none: nothing
    // new can be asked for, and the CLI says what to run (cli-contract.md).
    let server = OAuthServer::start().await;
    *server.state.call_scopes.lock().unwrap() = vec!["write".into()];
    *server.state.step_up_without_scope.lock().unwrap() = true;
    let setup = logged_in(&server, &["read"]);
    let (code, _, stderr) = setup.run(&["call", "mcp/srv/echo"]).await;
    assert_eq!(code, 1, "{stderr}");
    let last = stderr.lines().last().unwrap();
    assert!(last.starts_with("smthrs-mcp: unauthorized: "), "{last}");
    assert!(last.contains("smthrs-mcp login srv"), "{last}");
    // With scopes to fall back to, the CLI (no person) names it too.
    *server.state.prm_scopes.lock().unwrap() = Some(vec!["read".into(), "write".into()]);
    let (code, _, stderr) = setup.run(&["call", "mcp/srv/echo"]).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr
            .lines()
            .last()
            .unwrap()
            .contains("smthrs-mcp login srv"),
        "{stderr}"
    );
    assert!(server.state.authorize_scopes.lock().unwrap().is_empty());
}

/// A transport to `server` with OAuth and the headless authorizer.
fn headless_transport(server: &OAuthServer) -> HttpTransport {
    HttpTransport::builder("srv", server.url())
        .oauth(OAuth::new().authorizer(headless()))
        .build()
        .unwrap()
}

/// Connects over `transport`, calls `echo`, and closes the session.
async fn call_echo_once(transport: HttpTransport) {
    let client = Client::builder("srv").connect(transport).await.unwrap();
    client.call_tool("echo", Map::new()).await.unwrap();
    client.close().await;
}

/// Connects with a fresh store and the headless authorizer; the error.
async fn refused(server: &OAuthServer) -> smthrs_mcp::Error {
    connect(&server.url(), OAuth::new().authorizer(headless()))
        .await
        .unwrap_err()
}

fn assert_named(err: &smthrs_mcp::Error, code: &str) {
    assert_eq!(err.kind(), ErrorKind::Unauthorized, "{err}");
    let shown = if code.starts_with("made_up") {
        "an unknown error"
    } else {
        code
    };
    let text = format!("{err} {err:?}");
    assert!(text.contains(&format!("({shown})")), "{code}: {text}");
    assert!(
        !text.contains("remote-text") && !text.contains("made_up"),
        "{text}"
    );
}

#[tokio::test]
async fn every_standard_authorization_error_is_named_and_no_server_text_surfaces() {
    let server = OAuthServer::start().await;
    // RFC 6749 §4.1.2.1 and RFC 8707 §2.
    for code in [
        "invalid_request",
        "unauthorized_client",
        "access_denied",
        "unsupported_response_type",
        "invalid_scope",
        "server_error",
        "temporarily_unavailable",
        "invalid_target",
        "made_up_by_the_server",
    ] {
        *server.state.authorize_error.lock().unwrap() = Some(code.into());
        let err = refused(&server).await;
        assert_named(&err, code);
        assert!(err.message().contains("authoriz"), "{err}");
    }
    assert!(!log(&server).contains(&"POST /token".to_string()));
}

#[tokio::test]
async fn every_standard_token_error_is_named_and_no_server_text_surfaces() {
    let server = OAuthServer::start().await;
    // RFC 6749 §5.2 and RFC 8707 §2.
    for code in [
        "invalid_request",
        "invalid_client",
        "invalid_grant",
        "unauthorized_client",
        "unsupported_grant_type",
        "invalid_scope",
        "invalid_target",
        "made_up_by_the_server",
    ] {
        *server.state.token_error.lock().unwrap() = Some(code.into());
        let err = refused(&server).await;
        assert_named(&err, code);
        assert!(err.message().contains("token endpoint"), "{err}");
    }
}

#[tokio::test]
async fn a_registration_refused_for_its_scope_is_retried_once_without_it() {
    let server = OAuthServer::start().await;
    *server.state.challenge_scope.lock().unwrap() = Some("read".into());
    *server.state.register_refuses_scope.lock().unwrap() = true;
    let client = connect_headless(&server).await;
    client.close().await;
    assert_eq!(
        *server.state.register_scopes.lock().unwrap(),
        [Some("read".to_owned()), None]
    );
    // The scope is still requested where it belongs: on the authorization.
    assert_eq!(*server.state.authorize_scopes.lock().unwrap(), ["read"]);
}

#[tokio::test]
async fn a_refused_registration_names_the_step_and_a_known_code_only() {
    let server = OAuthServer::start().await;
    *server.state.challenge_scope.lock().unwrap() = Some("read".into());
    // RFC 7591 §3.2.2, and one made up.
    for (code, attempts) in [
        ("invalid_client_metadata", 2),
        ("invalid_redirect_uri", 1),
        ("invalid_software_statement", 1),
        ("unapproved_software_statement", 1),
        ("made_up_by_the_server", 2),
    ] {
        server.state.register_scopes.lock().unwrap().clear();
        *server.state.register_error.lock().unwrap() = Some(code.into());
        let err = refused(&server).await;
        assert_named(&err, code);
        assert!(err.message().contains("regist"), "{err}");
        // Retried once without scope, unless the code names another field.
        assert_eq!(
            server.state.register_scopes.lock().unwrap().len(),
            attempts,
            "{code}"
        );
    }
    assert!(!log(&server).contains(&"GET /authorize".to_string()));
}

/// Keeps the `Debug` rendering and name of every diagnostic event.
#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<(String, String)>>);

impl smthrs_mcp::DiagnosticObserver for Recorder {
    fn observe(&self, event: smthrs_mcp::DiagnosticEvent) {
        self.0
            .lock()
            .unwrap()
            .push((event.name().to_owned(), format!("{event:?}")));
    }
}

impl Recorder {
    /// The OAuth steps seen, as `step outcome` (from their `Debug`).
    fn steps(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(name, _)| name == "oauth-step")
            .map(|(_, debug)| debug.clone())
            .collect()
    }

    fn take(&self) -> Vec<String> {
        let steps = self.steps();
        self.0.lock().unwrap().clear();
        steps
    }
}

fn saw(steps: &[String], step: &str, outcome: &str) -> bool {
    steps.iter().any(|d| {
        d.contains(&format!("step: \"{step}\"")) && d.contains(&format!("outcome: \"{outcome}\""))
    })
}

#[tokio::test]
async fn the_observer_sees_every_step_of_the_chain_and_no_secret() {
    let server = OAuthServer::start().await;
    step_up_from_read_to_write(&server);
    let recorder = Arc::new(Recorder::default());
    let transport = headless_transport(&server);
    let client = Client::builder("srv")
        .diagnostics(recorder.clone())
        .connect(transport)
        .await
        .unwrap();
    let mut all = Vec::new();
    let steps = recorder.take();
    for step in [
        "protected-resource-metadata",
        "authorization-server-metadata",
        "registration",
        "authorization",
        "token",
    ] {
        assert!(saw(&steps, step, "ok"), "{step}: {steps:#?}");
    }
    all.extend(steps);
    // Step-up (403 insufficient_scope).
    client.call_tool("echo", Map::new()).await.unwrap();
    let steps = recorder.take();
    assert!(saw(&steps, "step-up", "ok"), "{steps:#?}");
    all.extend(steps);
    // A refused token is refreshed.
    server.state.expire_access_tokens();
    client.call_tool("echo", Map::new()).await.unwrap();
    let steps = recorder.take();
    assert!(saw(&steps, "refresh", "ok"), "{steps:#?}");
    all.extend(steps);
    // Failures: the refresh and then the new authorization's token request.
    server.state.expire_access_tokens();
    *server.state.token_error.lock().unwrap() = Some("invalid_grant".into());
    assert!(client.call_tool("echo", Map::new()).await.is_err());
    let steps = recorder.take();
    assert!(saw(&steps, "refresh", "failed"), "{steps:#?}");
    assert!(saw(&steps, "token", "failed"), "{steps:#?}");
    all.extend(steps);
    // No token, code, state or server text reached the observer.
    for debug in &all {
        assert!(!debug.contains("remote-text"), "{debug}");
        assert!(
            !debug.contains("state") && !debug.contains("verifier"),
            "{debug}"
        );
        for n in 1..200 {
            for secret in [format!("at-{n}"), format!("rt-{n}"), format!("code-{n}")] {
                assert!(!debug.contains(&secret), "{debug}");
            }
        }
    }
}

/// `oauth.tokenStore: "keyring"` in a build without the `keyring` feature: the
/// server file is refused (`invalid_config`, the field named), saying which
/// feature is missing, and the CLI's `login` and `tools` stop there (usage, 2).
#[cfg(not(feature = "keyring"))]
#[tokio::test]
async fn a_keyring_token_store_without_the_feature_is_refused_naming_it() {
    let text = json!([{"server": "srv", "url": "https://mcp.example/mcp",
                       "oauth": {"tokenStore": "keyring"}}])
    .to_string();
    let err = smthrs_mcp::config::decode_server_file(&text).unwrap_err();
    assert_eq!(err.field(), Some("tokenStore"));
    let err: smthrs_mcp::Error = err.into();
    assert_eq!(err.kind(), ErrorKind::InvalidConfig);
    assert!(err.message().contains("`keyring` feature"), "{err}");
    let setup = CliSetup::new("https://mcp.example/mcp");
    std::fs::write(&setup.config, &text).unwrap();
    for args in [&["login", "srv"][..], &["tools"], &["logout", "srv"]] {
        let (code, _, stderr) = setup.run(args).await;
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains("`keyring` feature"), "{args:?}: {stderr}");
    }
    // "file" is the default, spelled out.
    let text = json!([{"server": "srv", "url": "https://mcp.example/mcp",
                       "oauth": {"tokenStore": "file"}}])
    .to_string();
    assert!(smthrs_mcp::config::decode_server_file(&text).is_ok());
}

// ----- issue 34: revocation at logout, registration reuse, the remembered port -----

/// A transport with OAuth (`oauth` plus the headless authorizer at `redirect`)
/// to `server`, and a connected-then-closed session: a stored login.
async fn logged_in_transport(
    server: &OAuthServer,
    store: Arc<MemoryStore>,
    redirect: &str,
    oauth: OAuth,
) -> HttpTransport {
    let oauth = oauth
        .authorizer(Arc::new(HeadlessAuthorizer::new(redirect)))
        .store(store);
    oauth_server::transport_after_login(server, oauth).await
}

const REDIRECT: &str = "http://127.0.0.1:8765/callback";

fn revocations(server: &OAuthServer) -> Vec<oauth_server::RevocationSeen> {
    server.state.revocations.lock().unwrap().clone()
}

#[tokio::test]
async fn logout_revokes_the_refresh_then_the_access_token_with_the_registrations_auth() {
    for (method, auth) in [
        ("client_secret_basic", "basic"),
        ("client_secret_post", "post"),
        ("none", "none"),
    ] {
        let server = OAuthServer::start().await;
        *server.state.register_auth_method.lock().unwrap() = Some(method.into());
        let store = Arc::new(MemoryStore::new());
        let transport = logged_in_transport(&server, store.clone(), REDIRECT, OAuth::new()).await;
        let stored = store.load("srv").unwrap().unwrap();
        let held = stored.tokens.clone().unwrap();
        assert_eq!(
            held.revocation_endpoint,
            Some(format!("{}/revoke", server.issuer())),
            "kept with the tokens"
        );
        let access = held.tokens.access_token.expose_secret().to_owned();
        let refresh = held
            .tokens
            .refresh_token
            .as_ref()
            .unwrap()
            .expose_secret()
            .to_owned();
        assert!(server.state.is_live(&access) && server.state.is_live(&refresh));
        let metadata_fetches = log(&server)
            .iter()
            .filter(|l| l.contains("well-known"))
            .count();

        oauth_server::assert_revoked(&transport, method).await;
        let seen = revocations(&server);
        let expected = |token: &str, hint: &str| oauth_server::RevocationSeen {
            token: token.to_owned(),
            hint: Some(hint.to_owned()),
            client_id: held.client_id.clone(),
            auth: auth.to_owned(),
            authenticated: true,
            assertion: None,
        };
        assert_eq!(
            seen,
            [
                expected(&refresh, "refresh_token"),
                expected(&access, "access_token")
            ],
            "{method}"
        );
        assert!(!server.state.is_live(&access) && !server.state.is_live(&refresh));
        // No discovery: the endpoint came from the store.
        assert_eq!(
            log(&server)
                .iter()
                .filter(|l| l.contains("well-known"))
                .count(),
            metadata_fetches
        );
        // Forgotten; the registration is kept for the next login.
        let after = store.load("srv").unwrap().unwrap();
        assert!(after.tokens.is_none());
        assert_eq!(after.registrations.len(), 1);
        // Nothing left: nothing sent.
        let again = transport.logout().await.unwrap();
        assert!(
            matches!(again, smthrs_mcp::auth::Logout::NothingStored),
            "{again:?}"
        );
        assert_eq!(revocations(&server).len(), 2);
        // A session on the same transport needs a new authorization, which
        // reuses the registration.
        let client = Client::builder("srv").connect(transport).await.unwrap();
        client.close().await;
        assert_eq!(server.state.registrations(), 1, "{method}");
        assert_eq!(
            log(&server)
                .iter()
                .filter(|l| *l == "GET /authorize")
                .count(),
            2
        );
    }
}

#[tokio::test]
async fn a_refusing_authorization_server_still_gets_its_tokens_forgotten() {
    for (status, error, named) in [
        (
            400,
            "unsupported_token_type",
            "HTTP 400 (unsupported_token_type)",
        ),
        (400, "made_up_code", "HTTP 400 (an unknown error)"),
        (503, "temporarily_unavailable", "HTTP 503"),
    ] {
        let server = OAuthServer::start().await;
        *server.state.revoke_error.lock().unwrap() = Some((status, error.into()));
        let store = Arc::new(MemoryStore::new());
        let transport = logged_in_transport(&server, store.clone(), REDIRECT, OAuth::new()).await;
        let held = stored_tokens(&*store);
        let outcome = transport.logout().await.unwrap();
        let smthrs_mcp::auth::Logout::NotRevoked(err) = outcome else {
            panic!("{error}: {outcome:?}");
        };
        assert_eq!(err.kind(), ErrorKind::Unauthorized, "{err}");
        assert!(err.message().contains("server \"srv\""), "{err}");
        assert!(err.message().contains("refresh token"), "{err}");
        assert!(err.message().contains(named), "{err}");
        assert!(!err.message().contains(oauth_server::REMOTE_TEXT), "{err}");
        assert!(
            !err.message()
                .contains(held.tokens.access_token.expose_secret())
        );
        // An answer from the server: the access token was sent too.
        let hints: Vec<_> = revocations(&server).into_iter().map(|r| r.hint).collect();
        assert_eq!(
            hints,
            [Some("refresh_token".into()), Some("access_token".into())]
        );
        assert!(store.load("srv").unwrap().unwrap().tokens.is_none());
    }
    // A client the server does not authenticate (invalid_client): forgotten too.
    let server = OAuthServer::start().await;
    let store = Arc::new(MemoryStore::new());
    let transport = logged_in_transport(&server, store.clone(), REDIRECT, OAuth::new()).await;
    server.state.registered.lock().unwrap().clear();
    let outcome = transport.logout().await.unwrap();
    let smthrs_mcp::auth::Logout::NotRevoked(err) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(err.message().contains("HTTP 401 (invalid_client)"), "{err}");
    assert!(store.load("srv").unwrap().unwrap().tokens.is_none());
}

#[tokio::test]
async fn without_a_revocation_endpoint_the_tokens_are_forgotten_here_only() {
    let server = OAuthServer::start().await;
    *server.state.no_revocation.lock().unwrap() = true;
    let store = Arc::new(MemoryStore::new());
    let transport = logged_in_transport(&server, store.clone(), REDIRECT, OAuth::new()).await;
    let held = stored_tokens(&*store);
    assert!(held.revocation_endpoint.is_none());
    let outcome = transport.logout().await.unwrap();
    assert!(
        matches!(outcome, smthrs_mcp::auth::Logout::NotOffered),
        "{outcome:?}"
    );
    assert!(revocations(&server).is_empty());
    assert!(store.load("srv").unwrap().unwrap().tokens.is_none());
    // Still valid at the server: that is what NotOffered says.
    assert!(
        server
            .state
            .is_live(held.tokens.access_token.expose_secret())
    );
    // A transport without OAuth has nothing to log out of.
    let plain = HttpTransport::builder("plain", server.url())
        .build()
        .unwrap();
    let err = plain.logout().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidConfig, "{err}");
    assert!(err.message().contains("plain"), "{err}");
}

#[tokio::test]
async fn a_revocation_endpoint_the_policy_refuses_gets_nothing() {
    // 1. The egress grants allow only the server's origin: a revocation endpoint
    //    on another port is refused before connecting.
    let listener = CountingListener::start().await;
    let server = OAuthServer::start().await;
    *server.state.revocation_endpoint.lock().unwrap() =
        Some(format!("http://127.0.0.1:{}/revoke", listener.addr.port()));
    let grants =
        EgressGrants::parse([format!("net:get|post:http://{}", server.server.addr)]).unwrap();
    let store = Arc::new(MemoryStore::new());
    let transport = logged_in_transport(
        &server,
        store.clone(),
        REDIRECT,
        OAuth::new().egress_grants(grants),
    )
    .await;
    let outcome = transport.logout().await.unwrap();
    let smthrs_mcp::auth::Logout::NotRevoked(err) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(err.kind(), ErrorKind::EgressDenied, "{err}");
    assert_eq!(listener.accepted(), 0);
    assert!(store.load("srv").unwrap().unwrap().tokens.is_none());
    // 2. The address policy: a private address, cloud metadata, plain http off
    //    loopback. Nothing is sent anywhere, and the URL is not named.
    for endpoint in [
        "https://10.0.0.1/revoke",
        "https://169.254.169.254/revoke",
        "http://as.example.com/revoke",
    ] {
        let server = OAuthServer::start().await;
        *server.state.revocation_endpoint.lock().unwrap() = Some(endpoint.into());
        let store = Arc::new(MemoryStore::new());
        let transport = logged_in_transport(&server, store.clone(), REDIRECT, OAuth::new()).await;
        let outcome = transport.logout().await.unwrap();
        let smthrs_mcp::auth::Logout::NotRevoked(err) = outcome else {
            panic!("{endpoint}: {outcome:?}");
        };
        assert_eq!(err.kind(), ErrorKind::EgressDenied, "{endpoint}: {err}");
        assert!(err.message().contains("revocation endpoint"), "{err}");
        assert!(!err.message().contains(endpoint), "{err}");
        assert!(revocations(&server).is_empty());
        assert!(store.load("srv").unwrap().unwrap().tokens.is_none());
    }
}

#[tokio::test]
async fn one_registration_per_authorization_server_and_redirect_uri() {
    let server = OAuthServer::start().await;
    // As servers that compare redirect URIs exactly.
    *server.state.exact_redirect_uris.lock().unwrap() = true;
    let store = Arc::new(MemoryStore::new());
    // A login abandoned after registering (the person denies): the registration
    // is kept all the same.
    *server.state.authorize_error.lock().unwrap() = Some("access_denied".into());
    let oauth = |redirect: &str| {
        OAuth::new()
            .authorizer(Arc::new(HeadlessAuthorizer::new(redirect)))
            .store(store.clone())
    };
    let err = connect(&server.url(), oauth(REDIRECT)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthorized, "{err}");
    assert_eq!(server.state.registrations(), 1);
    *server.state.authorize_error.lock().unwrap() = None;
    // Logins with the same redirect URI reuse it.
    for _ in 0..2 {
        let client = connect(&server.url(), oauth(REDIRECT)).await.unwrap();
        client.close().await;
        let mut stored = store.load("srv").unwrap().unwrap();
        stored.tokens = None;
        store.save("srv", &stored).unwrap();
    }
    assert_eq!(server.state.registrations(), 1);
    // Another redirect URI: a registration of its own; both are kept, and each
    // is reused for its URI.
    let other = "http://127.0.0.1:8766/callback";
    let client = connect(&server.url(), oauth(other)).await.unwrap();
    client.close().await;
    assert_eq!(server.state.registrations(), 2);
    let stored = store.load("srv").unwrap().unwrap();
    assert_eq!(stored.registrations.len(), 2);
    let ids: Vec<String> = [REDIRECT, other]
        .iter()
        .map(|uri| {
            stored
                .registration_for_redirect(&server.issuer(), uri)
                .unwrap()
                .client_id
                .clone()
        })
        .collect();
    assert_ne!(ids[0], ids[1]);
    for redirect in [REDIRECT, other] {
        let mut stored = store.load("srv").unwrap().unwrap();
        stored.tokens = None;
        store.save("srv", &stored).unwrap();
        let client = connect(&server.url(), oauth(redirect)).await.unwrap();
        client.close().await;
    }
    assert_eq!(server.state.registrations(), 2);
    // Every authorization used the client registered for its redirect URI.
    let authorized: Vec<String> = server
        .state
        .client_ids
        .lock()
        .unwrap()
        .iter()
        .filter_map(|c| c.strip_prefix("authorize:").map(str::to_owned))
        .collect();
    assert_eq!(
        authorized,
        [&ids[0], &ids[0], &ids[0], &ids[1], &ids[0], &ids[1]].map(String::clone)
    );
}

// ----- the CLI: the remembered port, reuse, logout -----

/// Runs `login srv` and acts as the browser: (the redirect URI's port, stdout,
/// every other stderr line).
async fn cli_login(setup: &CliSetup) -> (u16, String, Vec<String>) {
    oauth_server::login_with_browser(setup.command(&["login", "srv"])).await
}

#[tokio::test]
async fn the_second_cli_login_binds_the_remembered_port_and_registers_nothing() {
    let server = OAuthServer::start().await;
    *server.state.exact_redirect_uris.lock().unwrap() = true;
    let setup = CliSetup::new(&server.url());
    let (first, stdout, _) = cli_login(&setup).await;
    assert_eq!(stdout.trim(), "ok: logged in to srv");
    assert_eq!(server.state.registrations(), 1);
    assert_eq!(
        setup.store().load("srv").unwrap().unwrap().redirect_port,
        Some(first)
    );
    let (second, stdout, stderr) = cli_login(&setup).await;
    assert_eq!(stdout.trim(), "ok: logged in to srv");
    assert_eq!(second, first, "{stderr:?}");
    assert!(stderr.iter().all(|l| !l.contains("note")), "{stderr:?}");
    assert_eq!(server.state.registrations(), 1, "no second registration");
    assert_eq!(
        log(&server)
            .iter()
            .filter(|l| *l == "GET /authorize")
            .count(),
        2
    );
    // Logout revokes (refresh, then access), forgets, keeps the registration
    // and the port for the next login.
    let held = stored_tokens(&setup.store());
    let (code, stdout, stderr) = setup.run(&["logout", "srv"]).await;
    assert_logged_out(code, &stdout, &stderr);
    assert!(!stderr.contains("note"), "{stderr}");
    let seen = revocations(&server);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(
        (seen[0].token.as_str(), seen[0].hint.as_deref()),
        (
            held.tokens.refresh_token.as_ref().unwrap().expose_secret(),
            Some("refresh_token")
        )
    );
    assert_eq!(
        (seen[1].token.as_str(), seen[1].hint.as_deref()),
        (
            held.tokens.access_token.expose_secret(),
            Some("access_token")
        )
    );
    assert!(
        seen.iter()
            .all(|r| r.authenticated && r.client_id == held.client_id)
    );
    let after = setup.store().load("srv").unwrap().unwrap();
    assert!(after.tokens.is_none());
    assert_eq!(
        (after.registrations.len(), after.redirect_port),
        (1, Some(first))
    );
    let (code, _, stderr) = setup.run(&["tools"]).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("smthrs-mcp login srv"), "{stderr}");
    // And the login after the logout still registers nothing.
    let (third, _, _) = cli_login(&setup).await;
    assert_eq!(third, first);
    assert_eq!(server.state.registrations(), 1);
}

#[tokio::test]
async fn a_taken_remembered_port_moves_the_login_to_a_new_one() {
    let server = OAuthServer::start().await;
    *server.state.exact_redirect_uris.lock().unwrap() = true;
    let setup = CliSetup::new(&server.url());
    let (first, _, _) = cli_login(&setup).await;
    let squatter = tokio::net::TcpListener::bind(("127.0.0.1", first))
        .await
        .unwrap();
    let (second, stdout, stderr) = cli_login(&setup).await;
    assert_eq!(stdout.trim(), "ok: logged in to srv");
    assert_ne!(second, first);
    let note = stderr
        .iter()
        .find(|l| l.starts_with("smthrs-mcp: note: "))
        .unwrap_or_else(|| panic!("{stderr:?}"));
    assert!(note.contains(&format!("port {first}")), "{note}");
    assert!(note.contains(&format!("port {second}")), "{note}");
    assert!(note.contains("oauth.redirectPort"), "{note}");
    // The new redirect URI has its own registration, and is remembered.
    assert_eq!(server.state.registrations(), 2);
    let stored = setup.store().load("srv").unwrap().unwrap();
    assert_eq!(stored.redirect_port, Some(second));
    assert_eq!(stored.registrations.len(), 2);
    drop(squatter);
}

#[tokio::test]
async fn a_taken_configured_port_is_an_error_naming_it_and_the_field() {
    let server = OAuthServer::start().await;
    let setup = CliSetup::new(&server.url());
    let squatter = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let port = squatter.local_addr().unwrap().port();
    std::fs::write(
        &setup.config,
        json!([{"server": "srv", "url": server.url(), "oauth": {"redirectPort": port}}])
            .to_string(),
    )
    .unwrap();
    let (code, _, stderr) = setup.run(&["login", "srv"]).await;
    assert_eq!(code, 1, "{stderr}");
    let last = stderr.lines().last().unwrap();
    assert!(
        last.starts_with(&format!(
            "smthrs-mcp: invalid_config: server \"srv\": the login listener cannot bind 127.0.0.1:{port} ("
        )),
        "{last}"
    );
    assert!(last.contains("oauth.redirectPort"), "{last}");
    assert_eq!(server.state.registrations(), 0);
    // A configured port is never remembered in place of the configuration.
    assert!(
        setup
            .store()
            .load("srv")
            .unwrap()
            .is_none_or(|s| s.redirect_port.is_none())
    );
}

#[tokio::test]
async fn cli_logout_notes_a_failed_or_absent_revocation_and_forgets_anyway() {
    // Refused at the server.
    let server = OAuthServer::start().await;
    *server.state.revoke_error.lock().unwrap() = Some((400, "invalid_request".into()));
    let setup = logged_in(&server, &["read"]);
    let (code, stdout, stderr) = setup.run(&["logout", "srv"]).await;
    assert_logged_out(code, &stdout, &stderr);
    let note = stderr.lines().last().unwrap();
    assert!(
        note.starts_with("smthrs-mcp: note: the tokens were forgotten here but not revoked (unauthorized: server \"srv\": "),
        "{note}"
    );
    assert!(note.contains("HTTP 400 (invalid_request)"), "{note}");
    assert!(!stderr.contains(oauth_server::REMOTE_TEXT), "{stderr}");
    assert!(
        !stderr.contains("at-") && !stderr.contains("rt-"),
        "{stderr}"
    );
    assert_eq!(revocations(&server).len(), 2);
    assert!(setup.store().load("srv").unwrap().unwrap().tokens.is_none());
    // Not offered (the stored tokens name no endpoint).
    let server = OAuthServer::start().await;
    let setup = logged_in(&server, &["read"]);
    let store = setup.store();
    {
        let _lock = store.lock("srv").unwrap();
        let mut stored = store.load("srv").unwrap().unwrap();
        stored.tokens.as_mut().unwrap().revocation_endpoint = None;
        store.save("srv", &stored).unwrap();
    }
    let (code, stdout, stderr) = setup.run(&["logout", "srv"]).await;
    assert_logged_out(code, &stdout, &stderr);
    assert_eq!(
        stderr.trim(),
        "smthrs-mcp: note: server \"srv\": the authorization server offers no token revocation; the tokens were forgotten here only"
    );
    assert!(revocations(&server).is_empty());
    assert!(store.load("srv").unwrap().unwrap().tokens.is_none());
    // Revoked: the pre-registered public client, by its id.
    let server = OAuthServer::start().await;
    let setup = logged_in(&server, &["read"]);
    let (code, stdout, stderr) = setup.run(&["logout", "srv"]).await;
    assert_logged_out(code, &stdout, &stderr);
    assert_eq!(stderr, "");
    let seen = revocations(&server);
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter().all(|r| r.auth == "none" && r.authenticated),
        "{seen:?}"
    );
    // Nothing stored: nothing sent, nothing noted.
    let (code, stdout, stderr) = setup.run(&["logout", "srv"]).await;
    assert_eq!(
        (code, stdout.trim(), stderr.as_str()),
        (0, "ok: logged out of srv", "")
    );
    assert_eq!(revocations(&server).len(), 2);
}

#[tokio::test]
async fn a_machine_clients_token_is_revoked_with_its_own_credentials() {
    use smthrs_mcp::auth::ClientCredentials;
    // A secret: HTTP Basic, as at the token endpoint. No refresh token was
    // issued, so only the access token is revoked.
    let server = OAuthServer::start().await;
    *server.state.register_auth_method.lock().unwrap() = Some("client_secret_basic".into());
    server
        .state
        .register("machine", Some("machine-secret"), "client_secret_basic");
    let store = Arc::new(MemoryStore::new());
    let oauth = OAuth::new()
        .client_credentials(ClientCredentials::Secret {
            client_id: "machine".into(),
            client_secret: SecretString::from("machine-secret"),
        })
        .store(store.clone());
    let transport = oauth_server::transport_after_login(&server, oauth).await;
    let held = stored_tokens(&*store);
    assert!(held.tokens.refresh_token.is_none());
    oauth_server::assert_revoked(&transport, "machine").await;
    assert_eq!(
        revocations(&server),
        [oauth_server::RevocationSeen {
            token: held.tokens.access_token.expose_secret().to_owned(),
            hint: Some("access_token".into()),
            client_id: "machine".into(),
            auth: "basic".into(),
            authenticated: true,
            assertion: None,
        }]
    );
    assert!(
        !server
            .state
            .is_live(held.tokens.access_token.expose_secret())
    );

    // A key: a fresh client assertion (RFC 7523) for the issuer.
    let server = OAuthServer::start().await;
    server.state.register("robot", None, "private_key_jwt");
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let oauth = OAuth::new()
        .client_credentials(ClientCredentials::PrivateKeyJwt {
            client_id: "robot".into(),
            private_key_pem: SecretString::from(key.serialize_pem()),
        })
        .store(Arc::new(MemoryStore::new()));
    let transport = oauth_server::transport_after_login(&server, oauth).await;
    oauth_server::assert_revoked(&transport, "robot").await;
    let seen = revocations(&server);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        (seen[0].auth.as_str(), seen[0].client_id.as_str()),
        ("jwt", "robot")
    );
    let public = jsonwebtoken::DecodingKey::from_ec_pem(key.public_key_pem().as_bytes()).unwrap();
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    validation.set_audience(&[server.issuer()]);
    validation.set_issuer(&["robot"]);
    let claims =
        jsonwebtoken::decode::<Value>(seen[0].assertion.as_deref().unwrap(), &public, &validation)
            .unwrap()
            .claims;
    assert_eq!(claims["sub"], "robot");
}

// ----- DPoP (RFC 9449) -----

/// A server advertising DPoP (RS256 and ES256).
async fn dpop_server() -> OAuthServer {
    let server = OAuthServer::start().await;
    *server.state.dpop_algs.lock().unwrap() = Some(vec!["RS256".into(), "ES256".into()]);
    server
}

/// Connects to `server` with the headless authorizer in DPoP `mode`.
async fn connect_dpop(
    server: &OAuthServer,
    mode: smthrs_mcp::auth::DpopMode,
) -> smthrs_mcp::Result<Client> {
    connect(
        &server.url(),
        OAuth::new().authorizer(headless()).dpop(mode),
    )
    .await
}

/// Every DPoP proof the server was shown verified.
fn assert_no_dpop_failures(server: &OAuthServer) {
    let failures = server.state.dpop_failures.lock().unwrap().clone();
    assert!(failures.is_empty(), "{failures:?}");
}

fn verified(server: &OAuthServer, what: &str) -> usize {
    server
        .state
        .dpop_verified
        .lock()
        .unwrap()
        .iter()
        .filter(|v| *v == what)
        .count()
}

fn count(server: &OAuthServer, line: &str) -> usize {
    log(server).iter().filter(|l| *l == line).count()
}

#[tokio::test]
async fn dpop_binds_the_tokens_and_a_second_process_uses_the_stored_key() {
    let server = dpop_server().await;
    let setup = CliSetup::new(&server.url());
    let store = Arc::new(setup.store());
    let client = connect_storing(&server, store.clone()).await;
    client.call_tool("echo", Map::new()).await.unwrap();
    // The server verified every proof: the token request's and one per MCP
    // request (signature with the JWK, htm, htu, ath, fresh jti, iat, key).
    assert_no_dpop_failures(&server);
    assert_eq!(verified(&server, "token"), 1);
    let mcp_before = verified(&server, "mcp");
    assert!(mcp_before >= 3, "{mcp_before}");
    // A refused token is refreshed with a proof by the same key (the refresh
    // token is bound too).
    server.state.expire_access_tokens();
    client.call_tool("echo", Map::new()).await.unwrap();
    assert_eq!(*server.state.refreshes.lock().unwrap(), 1);
    assert_eq!(verified(&server, "token"), 2);
    assert_no_dpop_failures(&server);
    client.close().await;
    let stored = store.load("srv").unwrap().unwrap();
    assert!(stored.tokens.as_ref().unwrap().tokens.dpop_bound);
    assert_eq!(stored.dpop_keys.len(), 1);
    assert_eq!(stored.dpop_keys[0].issuer, server.issuer());
    let raw = std::fs::read_to_string(setup.state_home().join("smthrs-mcp/tokens.json")).unwrap();
    let raw: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(raw["srv"]["tokens"]["tokenType"], "DPoP", "{raw}");
    assert!(raw["srv"]["dpopKeys"][0]["pkcs8"].is_string(), "{raw}");

    // Another process (the CLI, no authorizer) uses the stored token with the
    // stored key, then refreshes the bound refresh token with it.
    let authorizations = count(&server, "GET /authorize");
    let (code, stdout, stderr) = setup.run(&["tools"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("echo"), "{stdout}");
    server.state.expire_access_tokens();
    let (code, _, stderr) = setup.run(&["tools"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(*server.state.refreshes.lock().unwrap(), 2);
    assert_eq!(count(&server, "GET /authorize"), authorizations);
    assert_no_dpop_failures(&server);
    assert!(verified(&server, "mcp") > mcp_before);
    // The key never left the store: no process printed it.
    let key = stored.dpop_keys[0].pkcs8.expose_secret().to_owned();
    assert!(!stdout.contains(&key) && !stderr.contains(&key));
    // Logout forgets the key with the tokens: the next login proves possession
    // of a new one.
    let (code, _, stderr) = setup.run(&["logout", "srv"]).await;
    assert_eq!(code, 0, "{stderr}");
    let stored = store.load("srv").unwrap().unwrap();
    assert!(stored.tokens.is_none());
    assert!(stored.dpop_keys.is_empty());
}

#[tokio::test]
async fn dpop_nonces_of_the_token_endpoint_and_the_mcp_server_are_retried_once() {
    let server = dpop_server().await;
    *server.state.dpop_as_nonce.lock().unwrap() = Some("as-nonce-1".into());
    *server.state.dpop_rs_nonce.lock().unwrap() = Some("rs-nonce-1".into());
    let client = connect_headless(&server).await;
    client.call_tool("echo", Map::new()).await.unwrap();
    let challenges = server.state.dpop_nonce_challenges.lock().unwrap().clone();
    // One challenge each: the nonce is then kept for the origin.
    assert_eq!(challenges, ["token", "mcp"], "{challenges:?}");
    assert_no_dpop_failures(&server);
    assert_eq!(count(&server, "GET /authorize"), 1);
    // A new nonce at the MCP server: one retry, no new authorization or token.
    *server.state.dpop_rs_nonce.lock().unwrap() = Some("rs-nonce-2".into());
    client.call_tool("echo", Map::new()).await.unwrap();
    assert_eq!(server.state.dpop_nonce_challenges.lock().unwrap().len(), 3);
    assert_eq!(count(&server, "POST /token"), 2);
    assert_eq!(count(&server, "GET /authorize"), 1);
    client.close().await;
}

#[tokio::test]
async fn a_dpop_nonce_over_the_bound_is_a_typed_error_and_never_shown() {
    let server = dpop_server().await;
    *server.state.dpop_rs_nonce.lock().unwrap() = Some("wanted".into());
    let long = "n".repeat(smthrs_mcp::auth::dpop::MAX_NONCE_BYTES + 1);
    *server.state.dpop_rs_nonce_header.lock().unwrap() = Some(long.clone());
    let err = refused(&server).await;
    assert_eq!(err.kind(), ErrorKind::ProtocolError, "{err}");
    let text = format!("{err} {err:?}");
    assert!(
        text.contains("1025 bytes") && text.contains("1024"),
        "{text}"
    );
    assert!(!text.contains(&long[..64]), "{text}");
    // One nonce challenge, no retry, no second authorization.
    assert_eq!(server.state.dpop_nonce_challenges.lock().unwrap().len(), 1);
    assert_eq!(count(&server, "GET /authorize"), 1);

    // A server that keeps asking for a nonce it never accepts: one retry, then
    // `unauthorized`, never a new authorization.
    let server = dpop_server().await;
    *server.state.dpop_rs_nonce.lock().unwrap() = Some("wanted".into());
    *server.state.dpop_rs_nonce_header.lock().unwrap() = Some("not-the-one".into());
    let err = refused(&server).await;
    assert_eq!(err.kind(), ErrorKind::Unauthorized, "{err}");
    assert!(err.message().contains("nonce again"), "{err}");
    assert_eq!(server.state.dpop_nonce_challenges.lock().unwrap().len(), 2);
    assert_eq!(count(&server, "GET /authorize"), 1);
    assert_eq!(count(&server, "POST /token"), 1);

    // The same at the token endpoint: no retry with it, a typed error.
    let server = dpop_server().await;
    *server.state.dpop_as_nonce.lock().unwrap() = Some("wanted".into());
    *server.state.dpop_as_nonce_header.lock().unwrap() = Some(long.clone());
    let err = refused(&server).await;
    assert_eq!(err.kind(), ErrorKind::ProtocolError, "{err}");
    let text = format!("{err} {err:?}");
    assert!(
        text.contains("token endpoint") && text.contains("1025 bytes"),
        "{text}"
    );
    assert!(
        !text.contains(&long[..64]) && !text.contains("remote-text"),
        "{text}"
    );
    assert_eq!(count(&server, "POST /token"), 1);

    // A nonce challenge without a nonce, after the endpoint gave one earlier:
    // not retried with the old nonce, a typed error.
    let server = dpop_server().await;
    *server.state.dpop_as_nonce.lock().unwrap() = Some("first".into());
    let client = connect_headless(&server).await;
    let before = count(&server, "POST /token");
    *server.state.dpop_as_nonce.lock().unwrap() = Some("second".into());
    *server.state.dpop_as_nonce_header.lock().unwrap() = Some(String::new());
    server.state.expire_access_tokens();
    let err = client.call_tool("echo", Map::new()).await.unwrap_err();
    assert!(
        err.message()
            .contains("asked for a DPoP nonce and sent no DPoP-Nonce"),
        "{err}"
    );
    assert_eq!(*server.state.refreshes.lock().unwrap(), 0);
    // Two token requests, each sent once: the refresh, then the new
    // authorization's code exchange (a retry with the stale nonce would double
    // both).
    assert_eq!(
        count(&server, "POST /token") - before,
        2,
        "{:?}",
        log(&server)
    );
    client.close().await;
}

#[tokio::test]
async fn token_type_and_mode_mismatches() {
    // A DPoP token to a request without a proof (DPoP not advertised): refused.
    let server = OAuthServer::start().await;
    *server.state.dpop_type_without_proof.lock().unwrap() = true;
    let err = refused(&server).await;
    assert_eq!(err.kind(), ErrorKind::Unauthorized, "{err}");
    assert!(err.message().contains("without a DPoP proof"), "{err}");

    // A Bearer answer to a proof: accepted and sent as Bearer (Auto) ...
    let server = dpop_server().await;
    *server.state.dpop_bearer_answer.lock().unwrap() = true;
    let store = Arc::new(MemoryStore::new());
    let client = connect_storing(&server, store.clone()).await;
    client.call_tool("echo", Map::new()).await.unwrap();
    client.close().await;
    assert_eq!(verified(&server, "token"), 1);
    assert_eq!(verified(&server, "mcp"), 0);
    assert_no_dpop_failures(&server);
    assert!(!stored_tokens(&*store).tokens.dpop_bound);
    // ... and refused when DPoP is required.
    let err = connect_dpop(&server, smthrs_mcp::auth::DpopMode::Required)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthorized, "{err}");
    assert!(
        err.message().contains("Bearer") && err.message().contains("OAuth::dpop"),
        "{err}"
    );

    // Required, but the server does not advertise ES256: refused before any token request.
    let server = OAuthServer::start().await;
    *server.state.dpop_algs.lock().unwrap() = Some(vec!["RS256".into()]);
    let err = connect_dpop(&server, smthrs_mcp::auth::DpopMode::Required)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthorized, "{err}");
    assert!(err.message().contains("OAuth::dpop"), "{err}");
    assert_eq!(count(&server, "POST /token"), 0);

    // Off: no proof even where DPoP is advertised; a Bearer token.
    let server = dpop_server().await;
    let client = connect_dpop(&server, smthrs_mcp::auth::DpopMode::Off)
        .await
        .unwrap();
    client.call_tool("echo", Map::new()).await.unwrap();
    client.close().await;
    assert_eq!(verified(&server, "token") + verified(&server, "mcp"), 0);
    assert!(server.state.dpop_bound.lock().unwrap().is_empty());
}

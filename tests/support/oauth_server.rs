//! The OAuth test server (the test kit's `oauth_server`: an MCP server protected by
//! OAuth and its authorization server) and the helpers the OAuth test files share
//! on top of it: a stored login ([`stored_login`], [`token_set`]), a transport that
//! finds it, the revocation check, and the CLI's `login` run against a stand-in
//! browser ([`login_with_browser`]).

pub use smthrs_mcp_testkit::oauth_server::*;

/// The tokens of a stored login: `access` and `refresh`, no expiry, no known
/// lifetime, no scope, not DPoP-bound (struct update syntax changes the rest).
pub fn token_set(access: &str, refresh: &str) -> smthrs_mcp::auth::token::TokenSet {
    smthrs_mcp::auth::token::TokenSet {
        access_token: secrecy::SecretString::from(access),
        refresh_token: Some(secrecy::SecretString::from(refresh)),
        expires_at: None,
        obtained_at: None,
        scopes: vec![],
        dpop_bound: false,
    }
}

/// A stored login at `server` (its issuer, resource and token endpoint) of
/// `client_id` holding `tokens`, revoked at `revocation_endpoint`; no
/// registration, remembered port or DPoP key.
pub fn stored_login(
    server: &OAuthServer,
    client_id: &str,
    tokens: smthrs_mcp::auth::token::TokenSet,
    revocation_endpoint: Option<String>,
) -> smthrs_mcp::auth::StoredAuth {
    smthrs_mcp::auth::StoredAuth {
        tokens: Some(smthrs_mcp::auth::store::StoredTokens {
            issuer: server.issuer(),
            resource: format!("{}/mcp", server.issuer()),
            token_endpoint: format!("{}/token", server.issuer()),
            client_id: client_id.to_owned(),
            tokens,
            revocation_endpoint,
        }),
        ..Default::default()
    }
}

/// A transport to `server` with `oauth`, after one connected-then-closed
/// session: a stored login.
pub async fn transport_after_login(
    server: &OAuthServer,
    oauth: smthrs_mcp::auth::OAuth,
) -> smthrs_mcp::transport::http::HttpTransport {
    let transport = smthrs_mcp::transport::http::HttpTransport::builder("srv", server.url())
        .oauth(oauth)
        .build()
        .unwrap();
    let client = smthrs_mcp::Client::builder("srv")
        .connect(transport.clone())
        .await
        .unwrap();
    client.close().await;
    transport
}

/// Logs out over `transport`: the tokens were revoked (`what` names the case).
pub async fn assert_revoked(transport: &smthrs_mcp::transport::http::HttpTransport, what: &str) {
    let outcome = transport.logout().await.unwrap();
    assert!(
        matches!(outcome, smthrs_mcp::auth::Logout::Revoked),
        "{what}: {outcome:?}"
    );
}

/// A command running the crate's CLI, without the environment's proxy
/// variables, killed when dropped.
pub fn cli() -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_smthrs-mcp"));
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ] {
        c.env_remove(var);
    }
    c.kill_on_drop(true);
    c
}

/// A finished process's (exit code, or -1 without one; stdout; stderr).
pub fn outputs(out: std::process::Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `c` to its end: (exit code, or -1 without one; stdout; stderr).
pub async fn run(mut c: tokio::process::Command) -> (i32, String, String) {
    outputs(c.output().await.unwrap())
}

/// One GET without following redirects: (status, Location).
pub async fn browser_get(url: &str) -> (u16, Option<String>) {
    let uri: http::Uri = url.parse().unwrap();
    let host = uri.authority().unwrap().as_str().to_owned();
    let tcp = tokio::net::TcpStream::connect(&host).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(conn);
    let req = http::Request::get(uri.path_and_query().unwrap().as_str())
        .header("host", host)
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    let location = resp
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned());
    (resp.status().as_u16(), location)
}

/// Runs a CLI `login` command as a person would: reads the authorization URL
/// it prints on stderr, GETs it, and follows the redirect (checked to go to the
/// URL's loopback `redirect_uri`) to the CLI's listener (checked to answer 200).
/// The login must succeed. Returns the redirect URI's port, the stdout, and
/// every other line of the stderr.
pub async fn login_with_browser(mut login: tokio::process::Command) -> (u16, String, Vec<String>) {
    use tokio::io::{AsyncBufReadExt, BufReader};
    login
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = login.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut stderr = Vec::new();
    let url = loop {
        let Some(line) = lines.next_line().await.unwrap() else {
            let out = child.wait_with_output().await.unwrap();
            panic!("no URL printed: {stderr:?} {out:?}");
        };
        if line.starts_with("http") {
            break line;
        }
        stderr.push(line);
    };
    let redirect = url::Url::parse(&url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "redirect_uri")
        .map(|(_, v)| v.into_owned())
        .unwrap();
    assert!(redirect.starts_with("http://127.0.0.1:"), "{redirect}");
    let location = browser_get(&url).await.1.expect("a redirect");
    assert!(location.starts_with(&redirect), "{location}");
    assert_eq!(browser_get(&location).await.0, 200);
    let out = child.wait_with_output().await.unwrap();
    while let Some(line) = lines.next_line().await.unwrap() {
        stderr.push(line);
    }
    assert!(out.status.success(), "{stderr:?}");
    (
        url::Url::parse(&redirect).unwrap().port().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

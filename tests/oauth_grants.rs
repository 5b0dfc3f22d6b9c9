//! The JWT bearer grants against the in-repo authorization server and identity
//! provider (`testkit/src/oauth_server.rs`) on loopback: workload identity
//! (SEP-1933) and enterprise-managed authorization (SEP-990), their refusals
//! (no retry, no other grant), the token file's bounds and rotation, the
//! configuration conflicts, and the CLI's server-file fields.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use secrecy::SecretString;
use serde_json::{Map, json};
use smthrs_mcp::auth::{
    AssertionSource, ClientCredentials, EnterpriseManaged, HeadlessAuthorizer, OAuth,
    PreRegisteredClient, WorkloadIdentity,
};
use smthrs_mcp::transport::http::HttpTransport;
use smthrs_mcp::{Client, ErrorKind};
use smthrs_mcp_testkit::http_server;
use support::oauth_server;
use support::oauth_server::{Idp, OAuthServer, REMOTE_TEXT};

async fn connect(url: &str, oauth: OAuth) -> smthrs_mcp::Result<Client> {
    let transport = HttpTransport::builder("srv", url).oauth(oauth).build()?;
    Client::builder("srv").connect(transport).await
}

fn log(server: &OAuthServer) -> Vec<String> {
    server.state.log.lock().unwrap().clone()
}

fn count(server: &OAuthServer, line: &str) -> usize {
    log(server).iter().filter(|l| *l == line).count()
}

/// An authorization server offering the jwt-bearer grant to `client`.
async fn jwt_bearer_server(client: (&str, Option<&str>)) -> OAuthServer {
    let server = OAuthServer::start().await;
    *server.state.jwt_bearer.lock().unwrap() = true;
    *server.state.jwt_client.lock().unwrap() =
        Some((client.0.to_owned(), client.1.map(str::to_owned)));
    if client.1.is_some() {
        *server.state.auth_methods.lock().unwrap() = Some(vec!["client_secret_basic".into()]);
    }
    server
}

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

fn wif(file: &Path) -> OAuth {
    OAuth::new().workload_identity(WorkloadIdentity::new("agent", AssertionSource::file(file)))
}

/// Makes `idp` an identity provider that exchanges `id_token` for an ID-JAG
/// naming `as_client` at `auth`; its own client is `idp-client`, with
/// `client_secret` when given.
fn serve_idp(
    idp: &OAuthServer,
    auth: &OAuthServer,
    client_secret: Option<&str>,
    id_token: &str,
    as_client: &str,
) {
    *idp.state.idp.lock().unwrap() = Some(Idp {
        client_id: "idp-client".into(),
        client_secret: client_secret.map(str::to_owned),
        id_token: id_token.into(),
        audience: auth.issuer(),
        resource: format!("{}/mcp", auth.issuer()),
        as_client_id: as_client.into(),
    });
}

/// An enterprise-managed grant: the ID token `id_token` exchanged at `idp`'s
/// `/idp/token` (as `idp-client`) for an ID-JAG for `as_client`.
fn enterprise_grant(idp: &OAuthServer, id_token: &str, as_client: &str) -> EnterpriseManaged {
    EnterpriseManaged::new(
        format!("{}/idp/token", idp.issuer()),
        "idp-client",
        AssertionSource::value(SecretString::from(id_token)),
        as_client,
    )
}

/// Connects to `auth` with the enterprise-managed `grant`.
async fn connect_enterprise(
    auth: &OAuthServer,
    grant: EnterpriseManaged,
) -> smthrs_mcp::Result<Client> {
    connect(&auth.url(), OAuth::new().enterprise_managed(grant)).await
}

/// `err` is `unauthorized`, and its message says `saying`.
fn assert_unauthorized(err: &smthrs_mcp::Error, saying: &str) {
    assert_eq!(err.kind(), ErrorKind::Unauthorized, "{err}");
    assert!(err.message().contains(saying), "{err}");
}

fn assert_no_code_flow(server: &OAuthServer) {
    let log = log(server);
    for never in ["POST /register", "GET /authorize"] {
        assert!(!log.contains(&never.to_owned()), "{never}: {log:?}");
    }
}

#[tokio::test]
async fn workload_identity_presents_the_file_and_reads_it_again_after_rotation() {
    let server = jwt_bearer_server(("agent", None)).await;
    *server.state.wif_assertions.lock().unwrap() = vec!["wif.one".into(), "wif.two".into()];
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "token", "wif.one\n");
    let client = connect(&server.url(), wif(&file)).await.unwrap();
    assert_eq!(client.catalog().len(), 1);
    assert_eq!(*server.state.assertions.lock().unwrap(), ["wif.one"]);
    assert!(
        server
            .state
            .client_ids
            .lock()
            .unwrap()
            .contains(&"token:agent".to_owned())
    );
    assert_no_code_flow(&server);
    // The platform rotates the file; the token is refused: the new one is read.
    write(dir.path(), "token", "  wif.two  ");
    server.state.expire_access_tokens();
    let result = client.call_tool("echo", Map::new()).await.unwrap();
    assert!(!result.is_error);
    assert_eq!(
        *server.state.assertions.lock().unwrap(),
        ["wif.one", "wif.two"]
    );
    client.close().await;
}

#[tokio::test]
async fn enterprise_managed_exchanges_the_id_token_then_presents_the_id_jag() {
    let auth = jwt_bearer_server(("mcp-client", Some("as secret&x"))).await;
    // The IdP is another origin (another loopback server).
    let idp = OAuthServer::start().await;
    serve_idp(
        &idp,
        &auth,
        Some("idp-secret"),
        "id.token.one",
        "mcp-client",
    );
    let grant = enterprise_grant(&idp, "id.token.one", "mcp-client")
        .idp_client_secret(SecretString::from("idp-secret"))
        .client_secret(SecretString::from("as secret&x"));
    let client = connect_enterprise(&auth, grant).await.unwrap();
    assert_eq!(client.catalog().len(), 1);
    assert_eq!(idp.state.idp_requests.lock().unwrap().len(), 1);
    assert!(
        idp.state.idp_mismatches.lock().unwrap().is_empty(),
        "{:?}",
        idp.state.idp_mismatches.lock().unwrap()
    );
    let assertions = auth.state.assertions.lock().unwrap().clone();
    assert_eq!(assertions.len(), 1);
    assert!(assertions[0].starts_with("idjag."), "{assertions:?}");
    assert_no_code_flow(&auth);
    client.close().await;

    // The same with a public IdP client and a wrong ID token: the IdP names what
    // was wrong (the fixture checks every parameter), the chain stops there.
    serve_idp(&idp, &auth, None, "another", "mcp-client");
    let grant = enterprise_grant(&idp, "id.token.one", "mcp-client")
        .client_secret(SecretString::from("as secret&x"));
    let tokens_before = count(&auth, "POST /token");
    let err = connect_enterprise(&auth, grant).await.unwrap_err();
    assert_unauthorized(&err, "(invalid_request)");
    assert_eq!(*idp.state.idp_mismatches.lock().unwrap(), ["subject_token"]);
    assert_eq!(count(&auth, "POST /token"), tokens_before);
}

/// A refresh token from a JWT bearer grant is refreshed as the client it was
/// issued to (no registration holds that client), so the tokens outlive the
/// assertion: here the workload's token file and the user's ID token are gone.
#[tokio::test]
async fn tokens_from_a_jwt_bearer_grant_are_refreshed_after_the_assertion_is_gone() {
    // Workload identity: a public client.
    let server = jwt_bearer_server(("agent", None)).await;
    *server.state.jwt_bearer_refresh.lock().unwrap() = true;
    *server.state.wif_assertions.lock().unwrap() = vec!["wif.one".into()];
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "token", "wif.one");
    let client = connect(&server.url(), wif(&file)).await.unwrap();
    std::fs::remove_file(&file).unwrap();
    server.state.expire_access_tokens();
    let result = client.call_tool("echo", Map::new()).await.unwrap();
    assert!(!result.is_error);
    assert_eq!(*server.state.refreshes.lock().unwrap(), 1);
    assert_eq!(
        *server.state.refresh_clients.lock().unwrap(),
        [("agent".to_owned(), None, "none".to_owned())]
    );
    assert_eq!(*server.state.assertions.lock().unwrap(), ["wif.one"]);
    client.close().await;

    // Enterprise-managed: the client's own secret, and no new token exchange.
    let auth = jwt_bearer_server(("mcp-client", Some("as secret&x"))).await;
    *auth.state.jwt_bearer_refresh.lock().unwrap() = true;
    let idp = OAuthServer::start().await;
    serve_idp(&idp, &auth, None, "id.token.one", "mcp-client");
    let id_token = write(dir.path(), "id_token", "id.token.one");
    let grant = EnterpriseManaged::new(
        format!("{}/idp/token", idp.issuer()),
        "idp-client",
        AssertionSource::file(&id_token),
        "mcp-client",
    )
    .client_secret(SecretString::from("as secret&x"));
    let client = connect_enterprise(&auth, grant).await.unwrap();
    assert_eq!(idp.state.idp_requests.lock().unwrap().len(), 1);
    std::fs::remove_file(&id_token).unwrap();
    auth.state.expire_access_tokens();
    let result = client.call_tool("echo", Map::new()).await.unwrap();
    assert!(!result.is_error);
    assert_eq!(
        *auth.state.refresh_clients.lock().unwrap(),
        [(
            "mcp-client".to_owned(),
            Some("as secret&x".to_owned()),
            "basic".to_owned()
        )]
    );
    assert_eq!(idp.state.idp_requests.lock().unwrap().len(), 1);
    assert_eq!(auth.state.assertions.lock().unwrap().len(), 1);
    client.close().await;
}

#[tokio::test]
async fn an_authorization_server_without_the_jwt_bearer_grant_is_refused_before_any_request() {
    let server = OAuthServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "token", "wif.one");
    let err = connect(&server.url(), wif(&file)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthorized);
    assert!(
        err.message().contains("does not list the JWT bearer grant")
            && err.message().contains("grant_types_supported"),
        "{err}"
    );
    assert_eq!(count(&server, "POST /token"), 0);
    // Enterprise: not even the exchange at the IdP.
    let idp = OAuthServer::start().await;
    let grant = enterprise_grant(&idp, "id", "c");
    let err = connect_enterprise(&server, grant).await.unwrap_err();
    assert!(err.message().contains("grant_types_supported"), "{err}");
    assert!(idp.state.idp_requests.lock().unwrap().is_empty());
    assert_eq!(count(&server, "POST /token"), 0);
}

#[tokio::test]
async fn an_idp_refusal_or_a_wrong_token_type_is_final_and_shows_no_server_text() {
    let auth = jwt_bearer_server(("c", None)).await;
    let idp = OAuthServer::start().await;
    let grant = || enterprise_grant(&idp, "id", "c");
    *idp.state.idp_error.lock().unwrap() = Some("invalid_grant".into());
    let err = connect_enterprise(&auth, grant()).await.unwrap_err();
    assert_unauthorized(
        &err,
        "the identity provider refused the token exchange: HTTP 400 (invalid_grant)",
    );
    assert!(!err.to_string().contains(REMOTE_TEXT));
    assert_eq!(idp.state.idp_requests.lock().unwrap().len(), 1, "no retry");
    assert_eq!(count(&auth, "POST /token"), 0, "no other grant");
    assert_no_code_flow(&auth);

    // An unknown code is not echoed.
    *idp.state.idp_error.lock().unwrap() = Some("<b>custom</b>".into());
    let err = connect_enterprise(&auth, grant()).await.unwrap_err();
    assert!(err.message().contains("(an unknown error)"), "{err}");
    assert!(!err.message().contains("custom"), "{err}");

    // A token of another type is no ID-JAG.
    *idp.state.idp_error.lock().unwrap() = None;
    serve_idp(&idp, &auth, None, "id", "c");
    *idp.state.idp_issued_token_type.lock().unwrap() =
        Some("urn:ietf:params:oauth:token-type:access_token".into());
    let err = connect_enterprise(&auth, grant()).await.unwrap_err();
    assert_unauthorized(
        &err,
        "the identity provider's answer issued a token type other than an ID-JAG (issued_token_type)",
    );
    assert_eq!(idp.state.idp_requests.lock().unwrap().len(), 3);
    assert_eq!(count(&auth, "POST /token"), 0);
}

#[tokio::test]
async fn a_refused_assertion_is_not_retried_and_no_other_grant_follows() {
    let server = jwt_bearer_server(("agent", None)).await;
    let dir = tempfile::tempdir().unwrap();
    // Not an assertion the server accepts: invalid_grant.
    let file = write(dir.path(), "token", "wif.unknown");
    let err = connect(&server.url(), wif(&file)).await.unwrap_err();
    assert_unauthorized(&err, "the token endpoint refused the grant (invalid_grant)");
    assert!(!err.to_string().contains(REMOTE_TEXT));
    assert_eq!(count(&server, "POST /token"), 1);
    assert_no_code_flow(&server);
    // Another client id: invalid_client, named as the client's refusal.
    *server.state.wif_assertions.lock().unwrap() = vec!["wif.unknown".into()];
    *server.state.jwt_client.lock().unwrap() = Some(("someone-else".into(), None));
    let err = connect(&server.url(), wif(&file)).await.unwrap_err();
    assert!(
        err.message()
            .contains("the token endpoint refused the client (invalid_client)"),
        "{err}"
    );
    assert_eq!(count(&server, "POST /token"), 2);
}

#[tokio::test]
async fn a_missing_empty_or_oversized_token_file_fails_before_any_token_request() {
    let server = jwt_bearer_server(("agent", None)).await;
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent");
    let err = connect(&server.url(), wif(&missing)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidConfig);
    assert!(
        err.message().contains(&format!(
            "the workload identity token file {} cannot be read",
            missing.display()
        )),
        "{err}"
    );
    let empty = write(dir.path(), "empty", " \n");
    let err = connect(&server.url(), wif(&empty)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidConfig);
    assert!(err.message().ends_with("is empty"), "{err}");
    // One byte over the bound.
    let big = write(dir.path(), "big", &"x".repeat(65));
    let oauth = OAuth::new().workload_identity(WorkloadIdentity::new(
        "agent",
        AssertionSource::file(&big).max_bytes(64),
    ));
    let err = connect(&server.url(), oauth).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidConfig);
    assert!(
        err.message()
            .contains("holds 65 bytes, more than the bound of 64 bytes")
            && err.message().contains("maxTokenBytes")
            && err.message().contains("AssertionSource::max_bytes"),
        "{err}"
    );
    assert!(!err.message().contains("xxxx"), "{err}");
    // At the bound: read.
    *server.state.wif_assertions.lock().unwrap() = vec!["x".repeat(64)];
    let at = write(dir.path(), "at", &"x".repeat(64));
    let oauth = OAuth::new().workload_identity(WorkloadIdentity::new(
        "agent",
        AssertionSource::file(&at).max_bytes(64),
    ));
    connect(&server.url(), oauth).await.unwrap().close().await;
    assert_eq!(count(&server, "POST /token"), 1);
}

#[test]
fn a_jwt_bearer_grant_beside_another_way_to_a_token_is_refused_at_build() {
    let wif = || {
        WorkloadIdentity::new(
            "agent",
            AssertionSource::value(SecretString::from("assertion")),
        )
    };
    let enterprise = || {
        EnterpriseManaged::new(
            "https://idp.example/token",
            "i",
            AssertionSource::env("ID_TOKEN"),
            "c",
        )
    };
    let build = |oauth: OAuth| {
        HttpTransport::builder("srv", "https://mcp.example/mcp")
            .oauth(oauth)
            .build()
            .unwrap_err()
    };
    for (oauth, conflict) in [
        (
            OAuth::new()
                .workload_identity(wif())
                .enterprise_managed(enterprise()),
            "workload identity and enterprise-managed authorization are exclusive",
        ),
        (
            OAuth::new()
                .workload_identity(wif())
                .client_credentials(ClientCredentials::Secret {
                    client_id: "c".into(),
                    client_secret: SecretString::from("s"),
                }),
            "workload identity and client credentials are exclusive",
        ),
        (
            OAuth::new()
                .enterprise_managed(enterprise())
                .authorizer(Arc::new(HeadlessAuthorizer::new("http://127.0.0.1:9/cb"))),
            "enterprise-managed authorization and an authorizer (the authorization code flow) are exclusive",
        ),
        (
            OAuth::new()
                .enterprise_managed(enterprise())
                .pre_registered(PreRegisteredClient {
                    client_id: "c".into(),
                    client_secret: None,
                    issuer: None,
                }),
            "enterprise-managed authorization and a pre-registered client are exclusive",
        ),
        (
            OAuth::new().workload_identity(WorkloadIdentity::new(
                "agent",
                AssertionSource::value(SecretString::from(" ")),
            )),
            "the workload identity token is empty",
        ),
        (
            OAuth::new().enterprise_managed(EnterpriseManaged::new(
                "idp.example/token",
                "i",
                AssertionSource::env("ID_TOKEN"),
                "c",
            )),
            "the identity provider's token endpoint is not a valid URL",
        ),
    ] {
        let err = build(oauth);
        assert_eq!(err.kind(), ErrorKind::InvalidConfig);
        assert!(
            err.message()
                .starts_with(&format!("server \"srv\": {conflict}")),
            "{err}"
        );
    }
}

#[tokio::test]
async fn the_exchange_passes_the_egress_grants_the_address_policy_the_cap_and_no_redirect() {
    let auth = jwt_bearer_server(("c", None)).await;
    let idp = OAuthServer::start().await;
    let grant = |endpoint: String| {
        EnterpriseManaged::new(
            endpoint,
            "idp-client",
            AssertionSource::value(SecretString::from("id")),
            "c",
        )
    };
    let idp_endpoint = format!("{}/idp/token", idp.issuer());
    // Grants admitting only the MCP server's origin: the IdP is never reached.
    let only_mcp =
        smthrs_mcp::EgressGrants::parse([format!("net:get|post:{}", auth.issuer())]).unwrap();
    let oauth = OAuth::new()
        .enterprise_managed(grant(idp_endpoint.clone()))
        .egress_grants(only_mcp);
    let err = connect(&auth.url(), oauth).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::EgressDenied, "{err}");
    assert!(idp.state.idp_requests.lock().unwrap().is_empty());
    // Plain http off loopback: refused before connecting.
    let err = connect(
        &auth.url(),
        OAuth::new().enterprise_managed(grant("http://idp.example/token".into())),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::EgressDenied, "{err}");
    assert!(
        err.message().contains("http is allowed only on loopback"),
        "{err}"
    );
    // An answer over 64 KiB.
    serve_idp(&idp, &auth, None, "id", "c");
    *idp.state.idp_issued_token_type.lock().unwrap() = Some("x".repeat(64 * 1024));
    let err = connect(
        &auth.url(),
        OAuth::new().enterprise_managed(grant(idp_endpoint)),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ProtocolError, "{err}");
    assert!(err.message().contains("larger than 65536 bytes"), "{err}");
    // A redirect is not followed.
    let redirecting = http_server::TestServer::start(|_req| async move {
        http_server::with_header(
            http_server::status(307),
            "location",
            "http://127.0.0.1:9/elsewhere",
        )
    })
    .await;
    let endpoint = redirecting.url().replace("/mcp", "/token");
    let err = connect(
        &auth.url(),
        OAuth::new().enterprise_managed(grant(endpoint)),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthorized, "{err}");
    assert!(
        err.message()
            .contains("answered with a redirect (not followed)"),
        "{err}"
    );
    assert_eq!(count(&auth, "POST /token"), 0);
}

#[tokio::test]
async fn logout_revokes_an_enterprise_token_with_the_clients_own_credentials() {
    let auth = jwt_bearer_server(("mcp-client", Some("as-secret"))).await;
    auth.state
        .register("mcp-client", Some("as-secret"), "client_secret_basic");
    let idp = OAuthServer::start().await;
    serve_idp(&idp, &auth, None, "id", "mcp-client");
    let grant =
        enterprise_grant(&idp, "id", "mcp-client").client_secret(SecretString::from("as-secret"));
    let oauth = OAuth::new().enterprise_managed(grant);
    let transport = oauth_server::transport_after_login(&auth, oauth).await;
    oauth_server::assert_revoked(&transport, "enterprise").await;
    let seen = auth.state.revocations.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "an access token only: {seen:?}");
    assert_eq!(
        (
            seen[0].client_id.as_str(),
            seen[0].auth.as_str(),
            seen[0].authenticated
        ),
        ("mcp-client", "basic", true)
    );
}

/// Keeps the `Debug` rendering of every `oauth-step` event.
#[derive(Default)]
struct Steps(std::sync::Mutex<Vec<String>>);

impl smthrs_mcp::DiagnosticObserver for Steps {
    fn observe(&self, event: smthrs_mcp::DiagnosticEvent) {
        if event.name() == "oauth-step" {
            self.0.lock().unwrap().push(format!("{event:?}"));
        }
    }
}

impl Steps {
    fn saw(&self, step: &str, outcome: &str) -> bool {
        self.0.lock().unwrap().iter().any(|d| {
            d.contains(&format!("step: \"{step}\""))
                && d.contains(&format!("outcome: \"{outcome}\""))
        })
    }
}

#[tokio::test]
async fn the_observer_sees_the_exchange_and_the_grant_and_no_token() {
    let auth = jwt_bearer_server(("c", None)).await;
    let idp = OAuthServer::start().await;
    serve_idp(&idp, &auth, None, "id.token.seen", "c");
    let grant = enterprise_grant(&idp, "id.token.seen", "c");
    let steps = Arc::new(Steps::default());
    let transport = HttpTransport::builder("srv", auth.url())
        .oauth(OAuth::new().enterprise_managed(grant))
        .build()
        .unwrap();
    let client = Client::builder("srv")
        .diagnostics(steps.clone())
        .connect(transport)
        .await
        .unwrap();
    assert!(
        steps.saw("token-exchange", "ok"),
        "{:?}",
        steps.0.lock().unwrap()
    );
    assert!(
        steps.saw("jwt-bearer", "ok"),
        "{:?}",
        steps.0.lock().unwrap()
    );
    // The ID-JAG is refused now: the grant fails, once, and says so.
    auth.state.expire_access_tokens();
    *auth.state.token_error.lock().unwrap() = Some("invalid_grant".into());
    assert!(client.call_tool("echo", Map::new()).await.is_err());
    assert!(
        steps.saw("jwt-bearer", "failed"),
        "{:?}",
        steps.0.lock().unwrap()
    );
    for debug in steps.0.lock().unwrap().iter() {
        assert!(
            !debug.contains("id.token.seen") && !debug.contains("idjag."),
            "{debug}"
        );
        assert!(!debug.contains(REMOTE_TEXT), "{debug}");
    }
    client.close().await;
}

// ----- the CLI -----

/// The CLI with the server file `config`, its state under `state`, and `args`.
fn cli(config: &Path, state: &Path, args: &[&str]) -> tokio::process::Command {
    let mut c = oauth_server::cli();
    c.arg("--mcp-config").arg(config).args(args);
    c.env("XDG_STATE_HOME", state);
    c
}

#[tokio::test]
async fn the_cli_uses_workload_identity_and_enterprise_from_the_server_file() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    // Workload identity from a token file.
    let server = jwt_bearer_server(("agent", None)).await;
    *server.state.wif_assertions.lock().unwrap() = vec!["wif.cli".into()];
    let token = write(dir.path(), "wif-token", "wif.cli\n");
    let config = dir.path().join("wif.json");
    std::fs::write(
        &config,
        json!([{"server": "srv", "url": server.url(), "oauth": {"clientId": "agent",
            "workloadIdentity": {"tokenFile": token}}}])
        .to_string(),
    )
    .unwrap();
    let (code, stdout, stderr) = oauth_server::run(cli(&config, &state, &["tools"])).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("echo"), "{stdout}");
    assert_eq!(*server.state.assertions.lock().unwrap(), ["wif.cli"]);
    // `login` has nothing to do for such an entry.
    let (code, _, stderr) = oauth_server::run(cli(&config, &state, &["login", "srv"])).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("no login is needed"), "{stderr}");

    // Enterprise: the ID token from an environment variable, the secrets too.
    let auth = jwt_bearer_server(("mcp-client", Some("as-secret"))).await;
    let idp = OAuthServer::start().await;
    serve_idp(
        &idp,
        &auth,
        Some("idp-secret"),
        "id.token.cli",
        "mcp-client",
    );
    let config = dir.path().join("enterprise.json");
    std::fs::write(
        &config,
        json!([{"server": "srv", "url": auth.url(), "oauth": {"clientId": "mcp-client",
            "clientSecretEnv": "TEST_AS_SECRET", "enterprise": {
                "idpTokenEndpoint": format!("{}/idp/token", idp.issuer()),
                "idpClientId": "idp-client", "idpClientSecretEnv": "TEST_IDP_SECRET",
                "idTokenEnv": "TEST_ID_TOKEN"}}}])
        .to_string(),
    )
    .unwrap();
    let mut c = cli(&config, &state, &["call", "mcp/srv/echo", "--args", "{}"]);
    c.env("TEST_AS_SECRET", "as-secret")
        .env("TEST_IDP_SECRET", "idp-secret")
        .env("TEST_ID_TOKEN", "id.token.cli");
    let (code, _, stderr) = oauth_server::run(c).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(idp.state.idp_mismatches.lock().unwrap().is_empty());
    assert_eq!(auth.state.assertions.lock().unwrap().len(), 1);
    // The ID token's variable unset: an error naming it, nothing sent.
    let mut c = cli(&config, &state, &["call", "mcp/srv/echo", "--args", "{}"]);
    c.env("TEST_AS_SECRET", "as-secret")
        .env("TEST_IDP_SECRET", "idp-secret")
        .env_remove("TEST_ID_TOKEN");
    // A fresh state directory: no stored token.
    c.env("XDG_STATE_HOME", dir.path().join("state2"));
    let (code, _, stderr) = oauth_server::run(c).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("the ID token in environment variable TEST_ID_TOKEN is unset"),
        "{stderr}"
    );
    assert_eq!(idp.state.idp_requests.lock().unwrap().len(), 1);
}

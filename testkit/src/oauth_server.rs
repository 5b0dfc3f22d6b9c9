//! An MCP server protected by OAuth and its authorization server, on one loopback
//! hyper server (optionally TLS), for the OAuth tests.
//!
//! - MCP at `/mcp`: `initialize`, notifications, `tools/list` (one tool `echo`),
//!   `tools/call`; every request needs `Authorization: Bearer <a live token>`, else
//!   `401` with `resource_metadata`; `tools/call` needs the scopes in
//!   `call_scopes`, else `403 insufficient_scope`.
//! - PRM at `/.well-known/oauth-protected-resource/mcp` naming `issuer()` (or
//!   another issuer set with `set_authorization_server`).
//! - The authorization server: RFC 8414 metadata, DCR at `/register`, `/authorize`
//!   (no person: `302` to the redirect URI with `code`, `state`, `iss`), `/token`
//!   (authorization code with PKCE check, refresh with rotation: a refresh token
//!   used twice revokes every token of its family, as real servers do).
//! - Knobs for what real providers do: an OpenID provider (`oidc`: metadata only at
//!   `/.well-known/openid-configuration`, and, as OpenID Connect Core §11 allows, a
//!   refresh token only for `offline_access` requested with `prompt=consent`), a
//!   step-up challenge without `scope`, PRM `scopes_supported`, refusals at the
//!   authorization, token and registration endpoints (with server-authored text
//!   that must never surface).
//! - Clients as registered (`registered`): dynamic registrations may be handed a
//!   secret and `client_secret_basic` or `client_secret_post`
//!   (`register_auth_method`), which `/token` and `/revoke` then require; with
//!   `exact_redirect_uris`, `/authorize` refuses a redirect URI the client did
//!   not register (as servers that compare them exactly do).
//! - `/revoke` (RFC 7009, advertised as `revocation_endpoint` unless
//!   `no_revocation`; another URL with `revocation_endpoint`): checks the client
//!   authentication, revokes the token (a refresh token with its whole family),
//!   and records every request in `revocations`; `revoke_error` refuses.
//! - DPoP (RFC 9449), off unless `dpop_algs` is set: metadata lists the algs; a
//!   token request with a `DPoP` proof gets a `DPoP` token bound to the proof's
//!   key (access and refresh token), and every use of a bound token must carry a
//!   proof that verifies (signature with its JWK, `typ`, `alg`, `htm`, `htu`,
//!   `ath`, a `jti` never seen, `iat` within 60 s, the key bound to the token,
//!   the nonce when one is required); each failure is recorded in
//!   `dpop_failures`. Knobs: nonces required by the token endpoint and the MCP
//!   server, a Bearer answer to a proof, a DPoP type without a proof, a raw
//!   `DPoP-Nonce` to send on the MCP server's nonce challenge.
//!
//! The helpers the OAuth test files share on top of it (a stored login, the CLI's
//! `login` against a stand-in browser) need the library under test, so they live
//! in the tests' support module (`tests/support/oauth_server.rs`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use base64::Engine;
use http::Response;
use serde_json::{Value, json};
use sha2::Digest;

use crate::http_server::{Body, Recorded, TestServer, full, status, with_header};

/// (code challenge, granted scopes, client id, a refresh token is issued).
type Pending = (String, Vec<String>, String, bool);

/// A client the server knows.
#[derive(Clone, Debug)]
pub struct KnownClient {
    pub redirect_uris: Vec<String>,
    pub secret: Option<String>,
    /// `none`, `client_secret_basic` or `client_secret_post`.
    pub method: String,
}

/// One request to `/revoke`, as received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RevocationSeen {
    pub token: String,
    pub hint: Option<String>,
    pub client_id: String,
    /// `basic`, `post` or `none`: how the client authenticated.
    pub auth: String,
    /// The client authentication matched its registration.
    pub authenticated: bool,
    /// The client assertion, for `jwt`.
    pub assertion: Option<String>,
}

#[derive(Default)]
pub struct AsState {
    pub base: OnceLock<String>,
    /// The issuer PRM names (default: this server).
    pub authorization_server: Mutex<Option<String>>,
    /// Scope in the 401 challenge.
    pub challenge_scope: Mutex<Option<String>>,
    /// Scopes `tools/call` needs.
    pub call_scopes: Mutex<Vec<String>>,
    /// Scopes never granted, whatever is asked.
    pub withheld: Mutex<Vec<String>>,
    /// `expires_in` of issued access tokens.
    pub expires_in: Mutex<u64>,
    pub live: Mutex<HashMap<String, Vec<String>>>,
    /// Refresh token -> (family, scopes); used ones are kept in `used`.
    refresh: Mutex<HashMap<String, (u64, Vec<String>)>>,
    pub used: Mutex<HashSet<String>>,
    families: Mutex<HashMap<u64, Vec<String>>>,
    /// code -> (challenge, scopes, client id).
    pending: Mutex<HashMap<String, Pending>>,
    counter: Mutex<u64>,
    pub log: Mutex<Vec<String>>,
    /// `client_id` of every registration, authorization and token request.
    pub client_ids: Mutex<Vec<String>>,
    pub authorize_scopes: Mutex<Vec<String>>,
    pub refreshes: Mutex<u64>,
    pub reuse_detected: Mutex<u64>,
    /// Behave as an OpenID provider (see the module docs).
    pub oidc: Mutex<bool>,
    /// The `prompt` of every authorization request (empty when absent).
    pub authorize_prompts: Mutex<Vec<String>>,
    /// `403 insufficient_scope` challenges name no scope.
    pub step_up_without_scope: Mutex<bool>,
    /// PRM `scopes_supported`.
    pub prm_scopes: Mutex<Option<Vec<String>>>,
    /// `/authorize` redirects with this `error` (and an `error_description`).
    pub authorize_error: Mutex<Option<String>>,
    /// `/token` answers 400 with this `error` (and an `error_description`).
    pub token_error: Mutex<Option<String>>,
    /// `/register` refuses a body carrying `scope` (400 `invalid_client_metadata`).
    pub register_refuses_scope: Mutex<bool>,
    /// `/register` refuses every body with this `error`.
    pub register_error: Mutex<Option<String>>,
    /// The `scope` of every registration request (`None` when absent).
    pub register_scopes: Mutex<Vec<Option<String>>>,
    /// `/authorize` refuses (`invalid_scope`) a scope outside the one the client
    /// registered with, when it registered one (oidc-provider does this for the
    /// scopes it knows: a registration's `scope` bounds every later request).
    pub enforce_registered_scope: Mutex<bool>,
    /// The `scope` of each dynamic registration that carried one, by client id.
    pub registered_scopes: Mutex<HashMap<String, Vec<String>>>,
    /// The MCP resource's base when it has an origin of its own
    /// ([`SplitServer`]); default: `base`.
    pub resource_base: OnceLock<String>,
    /// Clients by id: dynamic registrations and seeded ones.
    pub registered: Mutex<HashMap<String, KnownClient>>,
    /// Dynamic registrations get a secret and this method (`client_secret_basic`
    /// or `client_secret_post`), which the metadata then lists.
    pub register_auth_method: Mutex<Option<String>>,
    /// `/authorize` refuses a redirect URI the client did not register.
    pub exact_redirect_uris: Mutex<bool>,
    /// The metadata names no revocation endpoint.
    pub no_revocation: Mutex<bool>,
    /// The revocation endpoint the metadata names instead of `/revoke`.
    pub revocation_endpoint: Mutex<Option<String>>,
    /// `/revoke` answers this status with this `error` (and an
    /// `error_description`).
    pub revoke_error: Mutex<Option<(u16, String)>>,
    /// Every request to `/revoke`.
    pub revocations: Mutex<Vec<RevocationSeen>>,
    /// DPoP: `dpop_signing_alg_values_supported` (DPoP is off when `None`).
    pub dpop_algs: Mutex<Option<Vec<String>>>,
    /// DPoP: the nonce the token endpoint requires (`use_dpop_nonce` otherwise).
    pub dpop_as_nonce: Mutex<Option<String>>,
    /// DPoP: the nonce the MCP server requires (`use_dpop_nonce` otherwise).
    pub dpop_rs_nonce: Mutex<Option<String>>,
    /// DPoP: the `DPoP-Nonce` sent with the MCP server's nonce challenge, when
    /// not `dpop_rs_nonce` itself.
    pub dpop_rs_nonce_header: Mutex<Option<String>>,
    /// DPoP: the `DPoP-Nonce` sent with the token endpoint's nonce challenge,
    /// when not `dpop_as_nonce` itself (empty: no header at all).
    pub dpop_as_nonce_header: Mutex<Option<String>>,
    /// DPoP: answer a proof with a Bearer token.
    pub dpop_bearer_answer: Mutex<bool>,
    /// DPoP: answer `token_type: DPoP` to a request without a proof.
    pub dpop_type_without_proof: Mutex<bool>,
    /// DPoP: token (access or refresh) -> the thumbprint of the key it is bound to.
    pub dpop_bound: Mutex<HashMap<String, String>>,
    /// DPoP: every `jti` seen.
    pub dpop_jtis: Mutex<HashSet<String>>,
    /// DPoP: why a proof was refused, one entry per refusal.
    pub dpop_failures: Mutex<Vec<String>>,
    /// DPoP: `token` or `mcp`, one entry per proof that verified.
    pub dpop_verified: Mutex<Vec<String>>,
    /// DPoP: `token` or `mcp`, one entry per nonce challenge sent.
    pub dpop_nonce_challenges: Mutex<Vec<String>>,
    // ----- JWT bearer grants (RFC 7523) and the IdP token exchange (RFC 8693) -----
    /// The metadata lists the jwt-bearer grant, and `/token` serves it.
    pub jwt_bearer: Mutex<bool>,
    /// The jwt-bearer grant also issues a refresh token.
    pub jwt_bearer_refresh: Mutex<bool>,
    /// How each refresh request authenticated: (client id, secret, method).
    pub refresh_clients: Mutex<Vec<(String, Option<String>, String)>>,
    /// `token_endpoint_auth_methods_supported` (default `["none"]`).
    pub auth_methods: Mutex<Option<Vec<String>>>,
    /// The client the jwt-bearer grant must authenticate as: (id, secret); with a
    /// secret, by HTTP Basic only.
    pub jwt_client: Mutex<Option<(String, Option<String>)>>,
    /// Assertions the jwt-bearer grant accepts as they are (workload identity).
    pub wif_assertions: Mutex<Vec<String>>,
    /// Every assertion presented to the jwt-bearer grant, in order.
    pub assertions: Mutex<Vec<String>>,
    /// This server as an enterprise IdP: `/idp/token` serves the exchange.
    pub idp: Mutex<Option<Idp>>,
    /// `/idp/token` answers 400 with this `error` (and an `error_description`).
    pub idp_error: Mutex<Option<String>>,
    /// `/idp/token` names this `issued_token_type` instead of the ID-JAG's.
    pub idp_issued_token_type: Mutex<Option<String>>,
    /// The form of every `/idp/token` request.
    pub idp_requests: Mutex<Vec<HashMap<String, String>>>,
    /// Parameters an `/idp/token` request got wrong (named, never the values).
    pub idp_mismatches: Mutex<Vec<String>>,
}

/// What the IdP expects of a token exchange, and whom its ID-JAGs are for.
#[derive(Clone, Debug)]
pub struct Idp {
    /// This client at the IdP.
    pub client_id: String,
    pub client_secret: Option<String>,
    /// The user's ID token.
    pub id_token: String,
    /// The authorization server the ID-JAG is for (its issuer).
    pub audience: String,
    /// The protected resource.
    pub resource: String,
    /// The client the ID-JAG names at the authorization server.
    pub as_client_id: String,
}

/// grant -> (audience, resource, client id at the AS).
type IssuedGrants = HashMap<String, (String, String, String)>;

/// The ID-JAGs every IdP of this process issued: grant -> (audience, resource,
/// client id at the AS). Shared, so an AS on one server accepts what the IdP on
/// another issued for it, and nothing else.
fn issued_grants() -> &'static Mutex<IssuedGrants> {
    static ISSUED: OnceLock<Mutex<IssuedGrants>> = OnceLock::new();
    ISSUED.get_or_init(Default::default)
}

/// The JWT bearer grant type (RFC 7523).
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The ID-JAG token type of the enterprise-managed authorization extension.
pub const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// The IdP's token exchange: every parameter checked, an ID-JAG for the AS.
fn idp_token(state: &AsState, f: HashMap<String, String>) -> Response<Body> {
    state.idp_requests.lock().unwrap().push(f.clone());
    if let Some(error) = state.idp_error.lock().unwrap().clone() {
        return json_response(
            400,
            json!({"error": error, "error_description": REMOTE_TEXT}),
        );
    }
    let Some(idp) = state.idp.lock().unwrap().clone() else {
        return status(404);
    };
    let expect = |name: &str, value: Option<&str>| {
        (f.get(name).map(String::as_str) != value).then(|| name.to_owned())
    };
    let wrong: Vec<String> = [
        expect(
            "grant_type",
            Some("urn:ietf:params:oauth:grant-type:token-exchange"),
        ),
        expect("requested_token_type", Some(ID_JAG)),
        expect("subject_token", Some(&idp.id_token)),
        expect(
            "subject_token_type",
            Some("urn:ietf:params:oauth:token-type:id_token"),
        ),
        expect("audience", Some(&idp.audience)),
        expect("resource", Some(&idp.resource)),
        expect("client_id", Some(&idp.client_id)),
        expect("client_secret", idp.client_secret.as_deref()),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !wrong.is_empty() {
        state.idp_mismatches.lock().unwrap().extend(wrong);
        return json_response(
            400,
            json!({"error": "invalid_request", "error_description": REMOTE_TEXT}),
        );
    }
    let grant = format!(
        "idjag.{}.{}",
        state.base().rsplit(':').next().unwrap_or(""),
        state.next()
    );
    issued_grants().lock().unwrap().insert(
        grant.clone(),
        (
            idp.audience.clone(),
            idp.resource.clone(),
            idp.as_client_id.clone(),
        ),
    );
    let issued = state
        .idp_issued_token_type
        .lock()
        .unwrap()
        .clone()
        .unwrap_or(ID_JAG.to_owned());
    json_response(
        200,
        json!({"access_token": grant, "issued_token_type": issued,
        "token_type": "N_A", "expires_in": 300}),
    )
}

/// The jwt-bearer grant at the AS: the client and the assertion checked.
fn jwt_bearer_grant(
    state: &AsState,
    req: &Recorded,
    f: &HashMap<String, String>,
) -> Response<Body> {
    if !*state.jwt_bearer.lock().unwrap() {
        return json_response(400, json!({"error": "unsupported_grant_type"}));
    }
    let (client, secret, auth) = client_auth(req, f);
    let basic = auth == "basic";
    if let Some((id, expected)) = state.jwt_client.lock().unwrap().clone()
        && (client != id || secret != expected || (expected.is_some() && !basic))
    {
        return json_response(
            401,
            json!({"error": "invalid_client", "error_description": REMOTE_TEXT}),
        );
    }
    let assertion = f.get("assertion").cloned().unwrap_or_default();
    state.assertions.lock().unwrap().push(assertion.clone());
    let base = state.base();
    let resource = f.get("resource").cloned().unwrap_or_default();
    let accepted = state.wif_assertions.lock().unwrap().contains(&assertion)
        || issued_grants()
            .lock()
            .unwrap()
            .get(&assertion)
            .is_some_and(|(aud, res, id)| *aud == base && *res == resource && *id == client);
    if !accepted {
        return json_response(
            400,
            json!({"error": "invalid_grant", "error_description": REMOTE_TEXT}),
        );
    }
    let scopes: Vec<String> = f
        .get("scope")
        .map(|s| s.split(' ').map(str::to_owned).collect())
        .unwrap_or_default();
    let family = state.next();
    let refresh = *state.jwt_bearer_refresh.lock().unwrap();
    json_response(200, state.issue_with(family, &scopes, refresh))
}

/// Server-authored text planted in every refusal: it must never surface.
pub const REMOTE_TEXT: &str = "remote-text<script>alert(1)</script>";

impl AsState {
    fn next(&self) -> u64 {
        let mut c = self.counter.lock().unwrap();
        *c += 1;
        *c
    }

    pub fn base(&self) -> String {
        self.base.get().cloned().unwrap()
    }

    /// The MCP resource's base: [`Self::resource_base`], or `base`.
    pub fn resource(&self) -> String {
        self.resource_base
            .get()
            .cloned()
            .unwrap_or_else(|| self.base())
    }

    fn issue(&self, family: u64, scopes: &[String]) -> Value {
        self.issue_with(family, scopes, true)
    }

    fn issue_with(&self, family: u64, scopes: &[String], with_refresh: bool) -> Value {
        let n = self.next();
        let access = format!("at-{n}");
        let refresh = format!("rt-{n}");
        self.live
            .lock()
            .unwrap()
            .insert(access.clone(), scopes.to_vec());
        self.refresh
            .lock()
            .unwrap()
            .insert(refresh.clone(), (family, scopes.to_vec()));
        self.families
            .lock()
            .unwrap()
            .entry(family)
            .or_default()
            .push(access.clone());
        let mut issued = json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": *self.expires_in.lock().unwrap(),
            "refresh_token": refresh,
            "scope": scopes.join(" "),
        });
        if !with_refresh {
            issued.as_object_mut().unwrap().remove("refresh_token");
        }
        issued
    }

    /// Makes every access token invalid (as if expired), keeping refresh tokens.
    pub fn expire_access_tokens(&self) {
        self.live.lock().unwrap().clear();
    }

    /// The number of dynamic registrations made.
    pub fn registrations(&self) -> usize {
        self.client_ids
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.starts_with("register:"))
            .count()
    }

    /// True while `token` (access or refresh) is valid.
    pub fn is_live(&self, token: &str) -> bool {
        self.live.lock().unwrap().contains_key(token)
            || (self.refresh.lock().unwrap().contains_key(token)
                && !self.used.lock().unwrap().contains(token))
    }

    /// Ends a token family: its access tokens and every refresh token of it.
    fn revoke_family(&self, family: u64) {
        for access in self
            .families
            .lock()
            .unwrap()
            .remove(&family)
            .unwrap_or_default()
        {
            self.live.lock().unwrap().remove(&access);
        }
        self.refresh.lock().unwrap().retain(|_, v| v.0 != family);
    }

    /// Makes `client_id` a client the server knows (no redirect URI),
    /// authenticating with `method` and `secret`.
    pub fn register(&self, client_id: &str, secret: Option<&str>, method: &str) {
        self.registered.lock().unwrap().insert(
            client_id.to_owned(),
            KnownClient {
                redirect_uris: vec![],
                secret: secret.map(str::to_owned),
                method: method.to_owned(),
            },
        );
    }

    /// Registers a client and issues tokens without a browser, for tests that
    /// start from a stored login: returns (client_id, access, refresh).
    pub fn seed(&self, scopes: &[&str]) -> (String, String, String) {
        let client = format!("client-{}", self.next());
        self.register(&client, None, "none");
        let scopes: Vec<String> = scopes.iter().map(|s| s.to_string()).collect();
        let family = self.next();
        let t = self.issue(family, &scopes);
        (
            client,
            t["access_token"].as_str().unwrap().to_owned(),
            t["refresh_token"].as_str().unwrap().to_owned(),
        )
    }
}

/// The running server: its hyper server and the state its routes share.
pub struct OAuthServer {
    pub server: TestServer,
    pub state: Arc<AsState>,
}

fn form(body: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

fn json_response(code: u16, v: Value) -> Response<Body> {
    full(code, "application/json", v.to_string())
}

/// How a token or revocation request authenticated: (client id, secret, `basic`,
/// `post`, `jwt` (a client assertion, its text in place of the secret) or
/// `none`).
fn client_auth(req: &Recorded, f: &HashMap<String, String>) -> (String, Option<String>, String) {
    if let Some(basic) = req
        .header("authorization")
        .and_then(|v| v.strip_prefix("Basic "))
    {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(basic)
            .unwrap_or_default();
        let text = String::from_utf8(decoded).unwrap_or_default();
        let (id, secret) = text.split_once(':').unwrap_or((&text, ""));
        let decode = |s: &str| {
            url::form_urlencoded::parse(format!("v={s}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        };
        return (decode(id), Some(decode(secret)), "basic".into());
    }
    let id = f.get("client_id").cloned().unwrap_or_default();
    if f.get("client_assertion_type").map(String::as_str)
        == Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
    {
        return (id, f.get("client_assertion").cloned(), "jwt".into());
    }
    match f.get("client_secret") {
        Some(secret) => (id, Some(secret.clone()), "post".into()),
        None => (id, None, "none".into()),
    }
}

/// True when the authentication matches what `client` registered.
fn authenticates(client: &KnownClient, secret: &Option<String>, auth: &str) -> bool {
    let expected = match client.method.as_str() {
        "client_secret_basic" => "basic",
        "client_secret_post" => "post",
        // The test verifies the assertion itself.
        "private_key_jwt" => return auth == "jwt" && secret.is_some(),
        _ => "none",
    };
    auth == expected && (expected == "none" || *secret == client.secret)
}

fn unauthorized(state: &AsState, code: u16, error: &str, scope: Option<String>) -> Response<Body> {
    let mut challenge = format!(
        "Bearer error=\"{error}\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
        state.resource()
    );
    let omitted = code == 403 && *state.step_up_without_scope.lock().unwrap();
    if let Some(scope) = scope.filter(|_| !omitted) {
        challenge.push_str(&format!(", scope=\"{scope}\""));
    }
    with_header(status(code), "www-authenticate", &challenge)
}

fn handle(state: &AsState, req: Recorded) -> Response<Body> {
    let base = state.base();
    let path = req.uri.path().to_owned();
    let query: HashMap<String, String> = req
        .uri
        .query()
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .collect()
        })
        .unwrap_or_default();
    state
        .log
        .lock()
        .unwrap()
        .push(format!("{} {path}", req.method));
    match (req.method.as_str(), path.as_str()) {
        ("GET", "/.well-known/oauth-protected-resource/mcp") => {
            let issuer = state
                .authorization_server
                .lock()
                .unwrap()
                .clone()
                .unwrap_or(base.clone());
            let mut prm = json!({"resource": format!("{}/mcp", state.resource()), "authorization_servers": [issuer]});
            if let Some(scopes) = state.prm_scopes.lock().unwrap().clone() {
                prm["scopes_supported"] = json!(scopes);
            }
            json_response(200, prm)
        }
        (
            "GET",
            "/.well-known/oauth-authorization-server" | "/.well-known/openid-configuration",
        ) => {
            let oidc = *state.oidc.lock().unwrap();
            if oidc != (path == "/.well-known/openid-configuration") {
                return status(404);
            }
            let mut methods = vec!["none".to_owned()];
            methods.extend(state.register_auth_method.lock().unwrap().clone());
            let mut metadata = json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": methods,
                "authorization_response_iss_parameter_supported": true,
            });
            if *state.jwt_bearer.lock().unwrap() {
                metadata["grant_types_supported"] = json!(["authorization_code", JWT_BEARER]);
            }
            if let Some(methods) = state.auth_methods.lock().unwrap().clone() {
                metadata["token_endpoint_auth_methods_supported"] = json!(methods);
            }
            if !*state.no_revocation.lock().unwrap() {
                metadata["revocation_endpoint"] = json!(
                    state
                        .revocation_endpoint
                        .lock()
                        .unwrap()
                        .clone()
                        .unwrap_or(format!("{base}/revoke"))
                );
            }
            if let Some(algs) = state.dpop_algs.lock().unwrap().clone() {
                metadata["dpop_signing_alg_values_supported"] = json!(algs);
            }
            if oidc {
                metadata["scopes_supported"] = json!(["openid", "offline_access", "read", "write"]);
                metadata["jwks_uri"] = json!(format!("{base}/jwks"));
                metadata["subject_types_supported"] = json!(["public"]);
                metadata["id_token_signing_alg_values_supported"] = json!(["RS256"]);
            }
            json_response(200, metadata)
        }
        ("POST", "/register") => {
            let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
            assert_eq!(body["application_type"], "native");
            state
                .register_scopes
                .lock()
                .unwrap()
                .push(body["scope"].as_str().map(str::to_owned));
            let refused = state.register_error.lock().unwrap().clone().or_else(|| {
                (*state.register_refuses_scope.lock().unwrap() && body.get("scope").is_some())
                    .then(|| "invalid_client_metadata".to_owned())
            });
            if let Some(error) = refused {
                return json_response(
                    400,
                    json!({"error": error, "error_description": REMOTE_TEXT}),
                );
            }
            let id = format!(
                "client-{}-{}",
                base.rsplit(':').next().unwrap_or(""),
                state.next()
            );
            state
                .client_ids
                .lock()
                .unwrap()
                .push(format!("register:{id}"));
            let method = state
                .register_auth_method
                .lock()
                .unwrap()
                .clone()
                .unwrap_or("none".into());
            let secret = (method != "none").then(|| format!("secret-{id}"));
            let redirect_uris: Vec<String> = body["redirect_uris"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|u| u.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            state.registered.lock().unwrap().insert(
                id.clone(),
                KnownClient {
                    redirect_uris: redirect_uris.clone(),
                    secret: secret.clone(),
                    method: method.clone(),
                },
            );
            if let Some(scope) = body["scope"].as_str() {
                state
                    .registered_scopes
                    .lock()
                    .unwrap()
                    .insert(id.clone(), scope.split(' ').map(str::to_owned).collect());
            }
            let mut answer = json!({
                "client_id": id,
                "token_endpoint_auth_method": method,
                "redirect_uris": redirect_uris,
            });
            if let Some(secret) = secret {
                answer["client_secret"] = json!(secret);
            }
            json_response(201, answer)
        }
        ("GET", "/authorize") => {
            let client = query.get("client_id").cloned().unwrap_or_default();
            state
                .client_ids
                .lock()
                .unwrap()
                .push(format!("authorize:{client}"));
            assert_eq!(
                query.get("code_challenge_method").map(String::as_str),
                Some("S256")
            );
            assert!(
                query.get("resource").is_some_and(|r| r.ends_with("/mcp")),
                "resource on the authorization request"
            );
            if *state.exact_redirect_uris.lock().unwrap() {
                let registered = state.registered.lock().unwrap().get(&client).cloned();
                let redirect = query.get("redirect_uri").cloned().unwrap_or_default();
                if !registered.is_some_and(|c| c.redirect_uris.contains(&redirect)) {
                    // Never redirect to an unregistered URI (RFC 6749 §4.1.2.1).
                    return full(400, "text/plain", "redirect_uri is not registered");
                }
            }
            let withheld = state.withheld.lock().unwrap().clone();
            let scopes: Vec<String> = query
                .get("scope")
                .map(|s| {
                    s.split(' ')
                        .map(str::to_owned)
                        .filter(|s| !withheld.contains(s))
                        .collect()
                })
                .unwrap_or_default();
            state
                .authorize_scopes
                .lock()
                .unwrap()
                .push(query.get("scope").cloned().unwrap_or_default());
            let prompt = query.get("prompt").cloned().unwrap_or_default();
            state.authorize_prompts.lock().unwrap().push(prompt.clone());
            let mut location = url::Url::parse(&query["redirect_uri"]).unwrap();
            let outside_registration = *state.enforce_registered_scope.lock().unwrap()
                && state
                    .registered_scopes
                    .lock()
                    .unwrap()
                    .get(&client)
                    .is_some_and(|allowed| {
                        query
                            .get("scope")
                            .is_some_and(|s| s.split(' ').any(|s| !allowed.iter().any(|a| a == s)))
                    });
            let error = state
                .authorize_error
                .lock()
                .unwrap()
                .clone()
                .or_else(|| outside_registration.then(|| "invalid_scope".to_owned()));
            if let Some(error) = error {
                location
                    .query_pairs_mut()
                    .append_pair("error", &error)
                    .append_pair("error_description", REMOTE_TEXT)
                    .append_pair("state", &query["state"])
                    .append_pair("iss", &base);
                return with_header(status(302), "location", location.as_str());
            }
            // OpenID Connect Core §11: offline access only with consent prompted.
            let with_refresh = !*state.oidc.lock().unwrap()
                || (scopes.iter().any(|s| s == "offline_access") && prompt == "consent");
            let code = format!("code-{}", state.next());
            state.pending.lock().unwrap().insert(
                code.clone(),
                (
                    query["code_challenge"].clone(),
                    scopes,
                    client,
                    with_refresh,
                ),
            );
            location
                .query_pairs_mut()
                .append_pair("code", &code)
                .append_pair("state", &query["state"])
                .append_pair("iss", &base);
            with_header(status(302), "location", location.as_str())
        }
        ("POST", "/token") => {
            let f = form(&req.body);
            assert!(
                f.get("resource").is_some_and(|r| r.ends_with("/mcp")),
                "resource on every token request"
            );
            let (client, secret, auth) = client_auth(&req, &f);
            state
                .client_ids
                .lock()
                .unwrap()
                .push(format!("token:{client}"));
            // A client registered with a secret must authenticate as registered.
            let known = state.registered.lock().unwrap().get(&client).cloned();
            if let Some(known) = known.filter(|k| k.method != "none")
                && !authenticates(&known, &secret, &auth)
            {
                return json_response(401, json!({"error": "invalid_client"}));
            }
            if let Some(error) = state.token_error.lock().unwrap().clone() {
                return json_response(
                    400,
                    json!({"error": error, "error_description": REMOTE_TEXT}),
                );
            }
            let jkt = match dpop_token_request(state, &req, &f) {
                Ok(jkt) => jkt,
                Err(refusal) => return *refusal,
            };
            if f.get("grant_type").map(String::as_str) == Some("refresh_token") {
                state.refresh_clients.lock().unwrap().push((
                    client.clone(),
                    secret.clone(),
                    auth.to_string(),
                ));
                let bound = state
                    .dpop_bound
                    .lock()
                    .unwrap()
                    .get(&f["refresh_token"])
                    .cloned();
                if bound.is_some() && bound != jkt {
                    return dpop_refusal(state, "a bound refresh token without its key's proof");
                }
            }
            if f.get("grant_type").map(String::as_str) == Some("client_credentials")
                && !state
                    .registered
                    .lock()
                    .unwrap()
                    .get(&client)
                    .is_some_and(|k| authenticates(k, &secret, &auth))
            {
                return json_response(401, json!({"error": "invalid_client"}));
            }
            if f.get("grant_type").map(String::as_str) == Some(JWT_BEARER) {
                return jwt_bearer_grant(state, &req, &f);
            }
            let (code, mut answer) = token_answer(state, &f);
            if code == 200 {
                bind_answer(state, &mut answer, jkt);
            }
            json_response(code, answer)
        }
        ("POST", "/idp/token") => idp_token(state, form(&req.body)),
        ("POST", "/revoke") => {
            let f = form(&req.body);
            let (client_id, secret, auth) = client_auth(&req, &f);
            let known = state.registered.lock().unwrap().get(&client_id).cloned();
            let authenticated = known.is_some_and(|k| authenticates(&k, &secret, &auth));
            let token = f.get("token").cloned().unwrap_or_default();
            let hint = f.get("token_type_hint").cloned();
            state.revocations.lock().unwrap().push(RevocationSeen {
                token: token.clone(),
                hint: hint.clone(),
                client_id,
                assertion: (auth == "jwt").then(|| secret.clone()).flatten(),
                auth,
                authenticated,
            });
            if !authenticated {
                return json_response(
                    401,
                    json!({"error": "invalid_client", "error_description": REMOTE_TEXT}),
                );
            }
            if let Some((code, error)) = state.revoke_error.lock().unwrap().clone() {
                return json_response(
                    code,
                    json!({"error": error, "error_description": REMOTE_TEXT}),
                );
            }
            // RFC 7009 §2.1: revoking a refresh token ends its grant.
            let family = state.refresh.lock().unwrap().remove(&token).map(|f| f.0);
            if let Some(family) = family {
                state.revoke_family(family);
            }
            state.live.lock().unwrap().remove(&token);
            status(200)
        }
        (_, "/mcp") => {
            if let Err(refusal) = dpop_resource_request(state, &req) {
                return *refusal;
            }
            mcp(state, req)
        }
        _ => status(404),
    }
}

fn token_answer(state: &AsState, f: &HashMap<String, String>) -> (u16, Value) {
    match f.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let Some((challenge, scopes, _client, with_refresh)) =
                state.pending.lock().unwrap().remove(&f["code"])
            else {
                return (400, json!({"error": "invalid_grant"}));
            };
            let digest = sha2::Sha256::digest(f["code_verifier"].as_bytes());
            if base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest) != challenge {
                return (400, json!({"error": "invalid_grant"}));
            }
            let family = state.next();
            (200, state.issue_with(family, &scopes, with_refresh))
        }
        Some("refresh_token") => {
            let token = f["refresh_token"].clone();
            *state.refreshes.lock().unwrap() += 1;
            if !state.used.lock().unwrap().insert(token.clone()) {
                // Reuse of a rotated token: revoke the family.
                *state.reuse_detected.lock().unwrap() += 1;
                let family = state.refresh.lock().unwrap().get(&token).map(|f| f.0);
                if let Some(family) = family {
                    state.revoke_family(family);
                }
                return (
                    400,
                    json!({"error": "invalid_grant", "error_description": "remote-reuse-text"}),
                );
            }
            let Some((family, scopes)) = state.refresh.lock().unwrap().get(&token).cloned() else {
                return (400, json!({"error": "invalid_grant"}));
            };
            (200, state.issue(family, &scopes))
        }
        Some("client_credentials") => {
            let scopes: Vec<String> = f
                .get("scope")
                .map(|s| s.split(' ').map(str::to_owned).collect())
                .unwrap_or_default();
            let family = state.next();
            (200, state.issue_with(family, &scopes, false))
        }
        _ => (400, json!({"error": "unsupported_grant_type"})),
    }
}

fn mcp(state: &AsState, req: Recorded) -> Response<Body> {
    let token = req
        .header("authorization")
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("DPoP "))
        })
        .map(str::to_owned);
    let scopes = token
        .as_ref()
        .and_then(|t| state.live.lock().unwrap().get(t).cloned());
    let Some(scopes) = scopes else {
        let scope = state.challenge_scope.lock().unwrap().clone();
        return unauthorized(state, 401, "invalid_token", scope);
    };
    if req.method != http::Method::POST {
        return status(405);
    }
    let msg: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let id = msg.get("id").cloned();
    let result = match msg["method"].as_str().unwrap_or("") {
        "initialize" => json!({
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "oauth-test", "version": "1"},
        }),
        "tools/list" => {
            json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
        }
        "tools/call" => {
            let needed = state.call_scopes.lock().unwrap().clone();
            if !needed.iter().all(|s| scopes.contains(s)) {
                return unauthorized(state, 403, "insufficient_scope", Some(needed.join(" ")));
            }
            json!({"content": [{"type": "text", "text": "ok"}], "isError": false})
        }
        _ => return status(202),
    };
    match id {
        Some(id) => json_response(200, json!({"jsonrpc": "2.0", "id": id, "result": result})),
        None => status(202),
    }
}

impl OAuthServer {
    pub async fn start() -> Self {
        Self::start_with(None).await
    }

    /// With `tls`, the server speaks https on `localhost`.
    pub async fn start_with(tls: Option<rustls::ServerConfig>) -> Self {
        let state = Arc::new(AsState::default());
        *state.expires_in.lock().unwrap() = 3600;
        let s = state.clone();
        let handler = move |req: Recorded| {
            let s = s.clone();
            async move { handle(&s, req) }
        };
        let server = match tls {
            Some(config) => TestServer::start_tls(handler, config).await,
            None => TestServer::start(handler).await,
        };
        let url = server.url();
        let base = url.strip_suffix("/mcp").unwrap().to_owned();
        state.base.set(base).unwrap();
        OAuthServer { server, state }
    }

    pub fn url(&self) -> String {
        self.server.url()
    }

    pub fn issuer(&self) -> String {
        self.state.base()
    }
}

// ----- the resource and its authorization server on two origins -----

/// One authorization server state served over TLS on two listeners: the MCP
/// resource at `https://127.0.0.1:<port>/mcp` and its authorization server
/// (issuer, metadata, registration, authorization, tokens) at
/// `https://localhost:<other port>`, so every request of the chain leaves the
/// MCP endpoint's origin. Both listeners serve every path; each records what
/// reached it.
pub struct SplitServer {
    pub resource: TestServer,
    pub authorization: OAuthServer,
}

impl SplitServer {
    pub async fn start(tls: rustls::ServerConfig) -> Self {
        let authorization = OAuthServer::start_with(Some(tls.clone())).await;
        let s = authorization.state.clone();
        let handler = move |req: Recorded| {
            let s = s.clone();
            async move { handle(&s, req) }
        };
        let resource = TestServer::start_tls(handler, tls).await;
        let base = format!("https://127.0.0.1:{}", resource.addr.port());
        authorization.state.resource_base.set(base).unwrap();
        SplitServer {
            resource,
            authorization,
        }
    }

    /// The MCP endpoint: `https://127.0.0.1:<port>/mcp`.
    pub fn url(&self) -> String {
        format!("{}/mcp", self.authorization.state.resource())
    }
}
// ----- DPoP (RFC 9449) -----

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn unb64(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .ok()
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// The RFC 7638 thumbprint of an EC P-256 JWK.
pub fn jwk_thumbprint(jwk: &Value) -> String {
    let canonical = format!(
        r#"{{"crv":"P-256","kty":"EC","x":{},"y":{}}}"#,
        jwk["x"], jwk["y"]
    );
    b64(&sha2::Sha256::digest(canonical.as_bytes()))
}

/// Verifies one proof as a server must (RFC 9449 §4.3); the thumbprint of its
/// key, or why it is refused.
pub fn verify_proof(
    state: &AsState,
    headers: &http::HeaderMap,
    method: &str,
    htu: &str,
    access_token: Option<&str>,
) -> Result<(String, Option<String>), String> {
    let mut proofs = headers.get_all("dpop").iter();
    let proof = proofs.next().ok_or("no DPoP proof")?;
    if proofs.next().is_some() {
        return Err("several DPoP proofs".into());
    }
    let proof = proof.to_str().map_err(|_| "a proof that is not text")?;
    let parts: Vec<&str> = proof.split('.').collect();
    if parts.len() != 3 {
        return Err("a proof that is not a JWS".into());
    }
    let decode = |p: &str| -> Result<Value, String> {
        serde_json::from_slice(&unb64(p).ok_or("not base64url")?).map_err(|e| e.to_string())
    };
    let header = decode(parts[0])?;
    let claims = decode(parts[1])?;
    if header["typ"] != "dpop+jwt" || header["alg"] != "ES256" {
        return Err(format!("typ/alg: {header}"));
    }
    let jwk = &header["jwk"];
    if jwk["kty"] != "EC" || jwk["crv"] != "P-256" || jwk.get("d").is_some() {
        return Err(format!("jwk: {jwk}"));
    }
    let mut point = vec![4u8];
    for c in ["x", "y"] {
        point.extend(unb64(jwk[c].as_str().ok_or("jwk coordinate")?).ok_or("jwk coordinate")?);
    }
    let signature = unb64(parts[2]).ok_or("signature encoding")?;
    ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, &point)
        .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
        .map_err(|_| "the signature does not verify with the proof's jwk")?;
    let jti = claims["jti"].as_str().ok_or("no jti")?;
    if jti.len() < 16 || !state.dpop_jtis.lock().unwrap().insert(jti.to_owned()) {
        return Err("a jti seen before (or too short)".into());
    }
    if claims["htm"] != method {
        return Err(format!("htm {} for {method}", claims["htm"]));
    }
    if claims["htu"] != htu {
        return Err(format!("htu {} for {htu}", claims["htu"]));
    }
    let iat = claims["iat"].as_i64().ok_or("no iat")?;
    if (now() - iat).abs() > 60 {
        return Err("iat outside the window".into());
    }
    match access_token {
        Some(token) if claims["ath"] != b64(&sha2::Sha256::digest(token.as_bytes())) => {
            return Err("ath does not match the token".into());
        }
        Some(_) => {}
        None if claims.get("ath").is_some() => return Err("ath on a token request".into()),
        None => {}
    }
    let nonce = claims["nonce"].as_str().map(str::to_owned);
    Ok((jwk_thumbprint(jwk), nonce))
}

fn dpop_refusal(state: &AsState, why: &str) -> Response<Body> {
    state.dpop_failures.lock().unwrap().push(why.to_owned());
    json_response(400, json!({"error": "invalid_dpop_proof"}))
}

/// The token endpoint's DPoP checks: `Ok(Some(jkt))` for a valid proof,
/// `Ok(None)` without one (or with DPoP off), or the refusal to send.
fn dpop_token_request(
    state: &AsState,
    req: &Recorded,
    _form: &HashMap<String, String>,
) -> Result<Option<String>, Box<Response<Body>>> {
    if state.dpop_algs.lock().unwrap().is_none() || req.headers.get("dpop").is_none() {
        return Ok(None);
    }
    let htu = format!("{}/token", state.base());
    let (jkt, nonce) = verify_proof(state, &req.headers, "POST", &htu, None)
        .map_err(|why| Box::new(dpop_refusal(state, &format!("token: {why}"))))?;
    if let Some(wanted) = state.dpop_as_nonce.lock().unwrap().clone()
        && nonce.as_deref() != Some(wanted.as_str())
    {
        state
            .dpop_nonce_challenges
            .lock()
            .unwrap()
            .push("token".into());
        let refusal = json_response(
            400,
            json!({"error": "use_dpop_nonce", "error_description": REMOTE_TEXT}),
        );
        let sent = state
            .dpop_as_nonce_header
            .lock()
            .unwrap()
            .clone()
            .unwrap_or(wanted);
        if sent.is_empty() {
            return Err(Box::new(refusal));
        }
        return Err(Box::new(with_header(refusal, "dpop-nonce", &sent)));
    }
    state.dpop_verified.lock().unwrap().push("token".into());
    Ok(Some(jkt))
}

/// Makes an issued answer DPoP-bound to `jkt` (or says DPoP without a proof,
/// when the knob says so).
fn bind_answer(state: &AsState, answer: &mut Value, jkt: Option<String>) {
    match jkt {
        Some(jkt) if !*state.dpop_bearer_answer.lock().unwrap() => {
            answer["token_type"] = json!("DPoP");
            let mut bound = state.dpop_bound.lock().unwrap();
            for t in ["access_token", "refresh_token"] {
                if let Some(token) = answer[t].as_str() {
                    bound.insert(token.to_owned(), jkt.clone());
                }
            }
        }
        None if *state.dpop_type_without_proof.lock().unwrap() => {
            answer["token_type"] = json!("DPoP");
        }
        _ => {}
    }
}

fn dpop_challenge(state: &AsState, error: &str) -> Response<Body> {
    let challenge = format!(
        "DPoP error=\"{error}\", algs=\"ES256\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
        state.base()
    );
    with_header(status(401), "www-authenticate", &challenge)
}

/// The MCP server's DPoP checks for a request carrying a bound token.
fn dpop_resource_request(state: &AsState, req: &Recorded) -> Result<(), Box<Response<Body>>> {
    let Some(auth) = req.header("authorization") else {
        return Ok(());
    };
    let (scheme, token) = auth.split_once(' ').unwrap_or((auth, ""));
    let bound = state.dpop_bound.lock().unwrap().get(token).cloned();
    let fail = |why: String| {
        state.dpop_failures.lock().unwrap().push(why);
        Box::new(dpop_challenge(state, "invalid_token"))
    };
    let Some(bound) = bound else {
        if scheme.eq_ignore_ascii_case("dpop") {
            return Err(fail("mcp: the DPoP scheme with an unbound token".into()));
        }
        return Ok(());
    };
    if scheme != "DPoP" {
        return Err(fail(format!("mcp: a bound token sent as {scheme}")));
    }
    let htu = format!("{}/mcp", state.base());
    let (jkt, nonce) = verify_proof(state, &req.headers, req.method.as_str(), &htu, Some(token))
        .map_err(|why| fail(format!("mcp: {why}")))?;
    if jkt != bound {
        return Err(fail("mcp: the proof's key is not the token's".into()));
    }
    if let Some(wanted) = state.dpop_rs_nonce.lock().unwrap().clone()
        && nonce.as_deref() != Some(wanted.as_str())
    {
        state
            .dpop_nonce_challenges
            .lock()
            .unwrap()
            .push("mcp".into());
        let sent = state
            .dpop_rs_nonce_header
            .lock()
            .unwrap()
            .clone()
            .unwrap_or(wanted);
        return Err(Box::new(with_header(
            dpop_challenge(state, "use_dpop_nonce"),
            "dpop-nonce",
            &sent,
        )));
    }
    state.dpop_verified.lock().unwrap().push("mcp".into());
    Ok(())
}

//! Everything the conformance client does for the `auth/*` scenarios: the
//! transport with OAuth, configured from `MCP_CONFORMANCE_SCENARIO` and
//! `MCP_CONFORMANCE_CONTEXT`.
//!
//! - The authorization step is the library's [`HeadlessAuthorizer`]: the suite's
//!   mock authorization server answers the authorization URL with a `302` to the
//!   redirect URI, which the client reads without following.
//! - The Client ID Metadata Document URL is the one the suite expects,
//!   `https://conformance-test.local/client-metadata.json` (used only where the
//!   server advertises CIMD).
//! - `auth/pre-registration`: the context's `client_id`/`client_secret`.
//! - `auth/client-credentials-basic`: the client credentials grant with the
//!   context's secret; `auth/client-credentials-jwt`: with an ES256 assertion
//!   signed with the context's `private_key_pem`.
//! - `auth/2025-03-26-*`: the 2025-03-26 discovery switch.
//! - `auth/enterprise-managed-authorization`: enterprise-managed authorization
//!   with the context's IdP token endpoint, IdP client id and ID token, and the
//!   client's id and secret at the authorization server; no authorizer.
//! - `auth/wif-jwt-bearer`: workload identity with the context's `client_id` and
//!   `valid_jwt`; no authorizer.
//!
//! Tokens live in memory for the one run. The client never sends a bearer token
//! from the environment.

use std::sync::Arc;

use secrecy::SecretString;
use serde_json::{Map, Value};
use smthrs_mcp::auth::{
    AssertionSource, ClientCredentials, EnterpriseManaged, HeadlessAuthorizer, OAuth,
    PreRegisteredClient, WorkloadIdentity,
};
use smthrs_mcp::transport::http::HttpTransport;
use smthrs_mcp::{Client, Error};

use super::Failure;

/// The Client ID Metadata Document URL the suite compares `client_id` with.
pub const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The redirect URI registered and sent (nothing listens there: the client reads
/// the mock's `302` itself).
pub const REDIRECT_URI: &str = "http://localhost:3000/callback";

fn context() -> Map<String, Value> {
    std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|v| match v {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .unwrap_or_default()
}

fn field(context: &Map<String, Value>, name: &str) -> Option<String> {
    context.get(name).and_then(Value::as_str).map(str::to_owned)
}

/// The OAuth configuration for `scenario`.
pub fn oauth(scenario: &str) -> OAuth {
    let context = context();
    let id = field(&context, "client_id");
    let secret = field(&context, "client_secret").map(SecretString::from);
    // The JWT bearer grants replace the authorization code flow: no authorizer.
    if let Some(oauth) = jwt_bearer(scenario, &context, id.clone(), secret.clone()) {
        return oauth;
    }
    let mut oauth = OAuth::new()
        .client_name("smthrs-mcp conformance client")
        .client_metadata_url(CLIENT_METADATA_URL)
        .authorizer(Arc::new(HeadlessAuthorizer::new(REDIRECT_URI)))
        .legacy_discovery(scenario.starts_with("auth/2025-03-26-"));
    match scenario {
        "auth/client-credentials-basic" => {
            if let (Some(client_id), Some(client_secret)) = (id, secret) {
                oauth = oauth.client_credentials(ClientCredentials::Secret {
                    client_id,
                    client_secret,
                });
            }
        }
        "auth/client-credentials-jwt" => {
            if let (Some(client_id), Some(pem)) = (id, field(&context, "private_key_pem")) {
                oauth = oauth.client_credentials(ClientCredentials::PrivateKeyJwt {
                    client_id,
                    private_key_pem: SecretString::from(pem),
                });
            }
        }
        _ => {
            if let Some(client_id) = id {
                oauth = oauth.pre_registered(PreRegisteredClient {
                    client_id,
                    client_secret: secret,
                    issuer: None,
                });
            }
        }
    }
    oauth
}

/// The OAuth configuration of the two JWT bearer scenarios, `None` for the others
/// (or when the context lacks what they need).
fn jwt_bearer(
    scenario: &str,
    context: &Map<String, Value>,
    id: Option<String>,
    secret: Option<SecretString>,
) -> Option<OAuth> {
    let oauth = OAuth::new().client_name("smthrs-mcp conformance client");
    match scenario {
        "auth/enterprise-managed-authorization" => {
            let mut grant = EnterpriseManaged::new(
                field(context, "idp_token_endpoint")?,
                field(context, "idp_client_id")?,
                AssertionSource::value(SecretString::from(field(context, "idp_id_token")?)),
                id?,
            );
            if let Some(secret) = secret {
                grant = grant.client_secret(secret);
            }
            Some(oauth.enterprise_managed(grant))
        }
        "auth/wif-jwt-bearer" => Some(oauth.workload_identity(WorkloadIdentity::new(
            id?,
            AssertionSource::value(SecretString::from(field(context, "valid_jwt")?)),
        ))),
        _ => None,
    }
}

/// The transport the client connects with: Streamable HTTP with OAuth.
pub fn transport(server: &str, url: &str, scenario: &str) -> Result<HttpTransport, Error> {
    HttpTransport::builder(server, url)
        .oauth(oauth(scenario))
        .build()
}

/// After connecting in an auth scenario: call the first tool (the suite's
/// `test-tool`), so a scope step-up on `tools/call` happens.
pub async fn exercise(client: &Client) -> Result<(), Failure> {
    let Some(tool) = client
        .catalog()
        .tools()
        .first()
        .map(|t| t.name().to_owned())
    else {
        return Ok(());
    };
    super::call(client, &tool, Value::Object(Map::new())).await
}

//! The `oauth` object of an HTTP entry: opts the server into OAuth 2.1.
//!
//! ```json
//! { "server": "tracker", "url": "https://mcp.tracker.example/mcp",
//!   "oauth": { "clientId": "smthrs-cli", "clientSecretEnv": "TRACKER_CLIENT_SECRET",
//!              "issuer": "https://auth.tracker.example", "scopes": ["tools:read"],
//!              "redirectPort": 8765 } }
//! ```
//!
//! | field | requirement |
//! | --- | --- |
//! | `clientId` | Optional non-empty string: a pre-registered client id. |
//! | `clientSecretEnv` | Optional environment variable name holding the client secret (read when the transport is built; needs `clientId`). |
//! | `issuer` | Optional issuer the pre-registered client belongs to (needs `clientId`): the credentials are never presented to another authorization server. |
//! | `clientMetadataUrl` | Optional `https` URL with a path: this client's Client ID Metadata Document, used as the client id where the server supports it. |
//! | `scopes` | Optional array of non-empty strings, requested in addition to the ones the server asks for. |
//! | `redirectPort` | Optional port (1-65535) for `login`'s loopback redirect listener, for servers that registered a fixed redirect URI. Default: an ephemeral port chosen at the first login and remembered in the token file, bound again by later logins. |
//! | `legacyDiscovery` | Optional boolean: 2025-03-26 discovery for servers without protected resource metadata. Default: `false`. |
//! | `dpop` | Optional `"auto"`, `"required"` or `"off"`: when tokens are DPoP-bound (RFC 9449; [`crate::auth::DpopMode`]). Default: `"auto"` (when the authorization server advertises ES256). |
//! | `tokenStore` | Optional `"file"` or `"keyring"`: where `login` stores this server's tokens and `tools`/`call` read them ([`TokenStoreKind`]). Default: `"file"`. `"keyring"` needs a build with the `keyring` feature. |
//! | `workloadIdentity` | Optional object: the JWT bearer grant with a platform-minted assertion (SEP-1933), as `clientId`, no secret; see below. |
//! | `enterprise` | Optional object: enterprise-managed authorization (SEP-990), the user's ID token exchanged at the identity provider, then the JWT bearer grant as `clientId` (with `clientSecretEnv`); see below. |
//!
//! `workloadIdentity` and `enterprise` need `clientId`, exclude each other and
//! `issuer`, `clientMetadataUrl` and `redirectPort` (no login happens). Their
//! fields:
//!
//! | field | requirement |
//! | --- | --- |
//! | `workloadIdentity.tokenFile` / `tokenEnv` | Exactly one: the absolute path of the token file the platform rotates, or an environment variable; read at every token request. |
//! | `enterprise.idpTokenEndpoint` | Required: the identity provider's token endpoint (`https`, or `http` on loopback). |
//! | `enterprise.idpClientId` | Required: this client's id at the identity provider. |
//! | `enterprise.idpClientSecretEnv` | Optional environment variable holding this client's secret at the identity provider (read at startup). |
//! | `enterprise.idTokenFile` / `idTokenEnv` | Exactly one: the user's ID token, in a file (absolute path) or an environment variable; read at every token request. |
//! | `maxTokenBytes` (both) | Optional positive integer: the largest token read, in bytes. Default: 16384. |
//!
//! `{}` opts in with Dynamic Client Registration. `oauth` and `bearerTokenEnv`
//! are exclusive. Unknown keys are errors. Tokens are never written in the server
//! file: `smthrs-mcp login` stores them in the user's token file.

use serde_json::{Map, Value};

/// The decoded `oauth` object of an HTTP entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OAuthEntry {
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// The environment variable holding the pre-registered client's secret.
    pub client_secret_env: Option<String>,
    /// The issuer the pre-registered client belongs to.
    pub issuer: Option<String>,
    /// This client's Client ID Metadata Document URL.
    pub client_metadata_url: Option<String>,
    /// Extra scopes to request.
    pub scopes: Vec<String>,
    /// The fixed port of `login`'s redirect listener.
    pub redirect_port: Option<u16>,
    /// 2025-03-26 discovery.
    pub legacy_discovery: bool,
    /// When tokens are DPoP-bound.
    pub dpop: crate::auth::DpopMode,
    /// Where the CLI keeps this server's tokens (`tokenStore`).
    pub token_store: TokenStoreKind,
    /// Workload identity (the JWT bearer grant as `client_id`).
    pub workload_identity: Option<Box<WorkloadIdentityEntry>>,
    /// Enterprise-managed authorization (as `client_id`, with its secret).
    pub enterprise: Option<Box<EnterpriseEntry>>,
}

/// Where a token the CLI presents is read from, at every token request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenOrigin {
    /// An absolute file path.
    File(std::path::PathBuf),
    /// An environment variable name.
    Env(String),
}

/// The decoded `oauth.workloadIdentity` object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadIdentityEntry {
    /// Where the workload's assertion is read from.
    pub token: TokenOrigin,
    /// `maxTokenBytes`, when set.
    pub max_token_bytes: Option<usize>,
}

/// The decoded `oauth.enterprise` object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnterpriseEntry {
    /// The identity provider's token endpoint.
    pub idp_token_endpoint: String,
    /// This client's id at the identity provider.
    pub idp_client_id: String,
    /// The environment variable holding this client's secret at the identity
    /// provider.
    pub idp_client_secret_env: Option<String>,
    /// Where the user's ID token is read from.
    pub id_token: TokenOrigin,
    /// `maxTokenBytes`, when set.
    pub max_token_bytes: Option<usize>,
}

/// Where the CLI keeps a server's registrations and tokens (`oauth.tokenStore`).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TokenStoreKind {
    /// `"file"`: the user's owner-only token file
    /// ([`FileStore::default_path`](crate::auth::FileStore::default_path)).
    #[default]
    File,
    /// `"keyring"`: the OS keyring (`auth::KeyringStore`, feature `keyring`), one
    /// entry per server, locked through `keyring.lock` beside the token file.
    Keyring,
}

const FIELDS: [&str; 11] = [
    "clientId",
    "clientSecretEnv",
    "issuer",
    "clientMetadataUrl",
    "scopes",
    "redirectPort",
    "legacyDiscovery",
    "dpop",
    "tokenStore",
    "workloadIdentity",
    "enterprise",
];

type Refusal = (&'static str, String);

/// Checks `object` (at `path`) has only `fields`.
fn only(object: &Map<String, Value>, path: &'static str, fields: &[&str]) -> Result<(), Refusal> {
    match object.keys().find(|k| !fields.contains(&k.as_str())) {
        Some(key) => Err((
            path,
            format!("unknown field {} in {path}", super::Echo(key)),
        )),
        None => Ok(()),
    }
}

/// A non-empty string member of `object`.
fn member(
    object: &Map<String, Value>,
    key: &str,
    field: &'static str,
) -> Result<Option<String>, Refusal> {
    match object.get(key) {
        None => Ok(None),
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
        Some(_) => Err((field, format!("{field} must be a non-empty string"))),
    }
}

/// An environment variable name member.
fn env_name(
    object: &Map<String, Value>,
    key: &str,
    field: &'static str,
) -> Result<Option<String>, Refusal> {
    let name = member(object, key, field)?;
    if name.as_deref().is_some_and(|n| !super::valid_env_name(n)) {
        return Err((
            field,
            format!("{field} must be an environment variable name (no '=' or NUL)"),
        ));
    }
    Ok(name)
}

/// Exactly one of a file member and an env member.
fn token_origin(
    object: &Map<String, Value>,
    (file_key, file_field): (&str, &'static str),
    (env_key, env_field): (&str, &'static str),
) -> Result<TokenOrigin, Refusal> {
    let file = member(object, file_key, file_field)?;
    let env = env_name(object, env_key, env_field)?;
    match (file, env) {
        (Some(path), None) => {
            let path = std::path::PathBuf::from(path);
            if !path.is_absolute() {
                return Err((file_field, format!("{file_field} must be an absolute path")));
            }
            Ok(TokenOrigin::File(path))
        }
        (None, Some(var)) => Ok(TokenOrigin::Env(var)),
        _ => Err((
            file_field,
            format!("exactly one of {file_field} and {env_field} is needed"),
        )),
    }
}

/// `maxTokenBytes`: a positive integer.
fn max_token_bytes(
    object: &Map<String, Value>,
    field: &'static str,
) -> Result<Option<usize>, Refusal> {
    match object.get("maxTokenBytes") {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|n| *n > 0)
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or((field, format!("{field} must be a positive integer"))),
    }
}

fn decode_workload_identity(value: &Value) -> Result<WorkloadIdentityEntry, Refusal> {
    let Value::Object(object) = value else {
        return Err((
            "workloadIdentity",
            "oauth.workloadIdentity must be an object".to_owned(),
        ));
    };
    only(
        object,
        "oauth.workloadIdentity",
        &["tokenFile", "tokenEnv", "maxTokenBytes"],
    )?;
    Ok(WorkloadIdentityEntry {
        token: token_origin(
            object,
            ("tokenFile", "oauth.workloadIdentity.tokenFile"),
            ("tokenEnv", "oauth.workloadIdentity.tokenEnv"),
        )?,
        max_token_bytes: max_token_bytes(object, "oauth.workloadIdentity.maxTokenBytes")?,
    })
}

fn decode_enterprise(value: &Value) -> Result<EnterpriseEntry, Refusal> {
    let Value::Object(object) = value else {
        return Err((
            "enterprise",
            "oauth.enterprise must be an object".to_owned(),
        ));
    };
    only(
        object,
        "oauth.enterprise",
        &[
            "idpTokenEndpoint",
            "idpClientId",
            "idpClientSecretEnv",
            "idTokenFile",
            "idTokenEnv",
            "maxTokenBytes",
        ],
    )?;
    let endpoint_field = "oauth.enterprise.idpTokenEndpoint";
    let idp_token_endpoint = member(object, "idpTokenEndpoint", endpoint_field)?
        .filter(|u| {
            url::Url::parse(u).is_ok_and(|u| {
                matches!(u.scheme(), "http" | "https")
                    && u.fragment().is_none()
                    && u.username().is_empty()
                    && u.password().is_none()
            })
        })
        .ok_or((
            endpoint_field,
            format!("{endpoint_field} must be an absolute http: or https: URL without user, password or fragment"),
        ))?;
    let id_field = "oauth.enterprise.idpClientId";
    let idp_client_id = member(object, "idpClientId", id_field)?
        .ok_or((id_field, format!("{id_field} must be a non-empty string")))?;
    Ok(EnterpriseEntry {
        idp_token_endpoint,
        idp_client_id,
        idp_client_secret_env: env_name(
            object,
            "idpClientSecretEnv",
            "oauth.enterprise.idpClientSecretEnv",
        )?,
        id_token: token_origin(
            object,
            ("idTokenFile", "oauth.enterprise.idTokenFile"),
            ("idTokenEnv", "oauth.enterprise.idTokenEnv"),
        )?,
        max_token_bytes: max_token_bytes(object, "oauth.enterprise.maxTokenBytes")?,
    })
}

/// Decodes the `oauth` value; the error is `(field, message)`.
pub(super) fn decode(value: &Value) -> Result<OAuthEntry, (&'static str, String)> {
    let Value::Object(map) = value else {
        return Err(("oauth", "oauth must be an object".to_owned()));
    };
    for key in map.keys() {
        if !FIELDS.contains(&key.as_str()) {
            return Err((
                "oauth",
                format!("unknown field {} in oauth", super::Echo(key)),
            ));
        }
    }
    let text = |key: &'static str| -> Result<Option<String>, (&'static str, String)> {
        match map.get(key) {
            None => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(_) => Err((key, format!("oauth.{key} must be a non-empty string"))),
        }
    };
    let client_id = text("clientId")?;
    let client_secret_env = text("clientSecretEnv")?;
    if let Some(name) = &client_secret_env
        && !super::valid_env_name(name)
    {
        return Err((
            "clientSecretEnv",
            "oauth.clientSecretEnv must be an environment variable name (no '=' or NUL)".to_owned(),
        ));
    }
    let issuer = text("issuer")?;
    if issuer.as_deref().is_some_and(|i| {
        url::Url::parse(i).map_or(true, |u| {
            !matches!(u.scheme(), "http" | "https") || u.query().is_some() || u.fragment().is_some()
        })
    }) {
        return Err((
            "issuer",
            "oauth.issuer must be an absolute http: or https: URL without query or fragment"
                .to_owned(),
        ));
    }
    if client_id.is_none() && (client_secret_env.is_some() || issuer.is_some()) {
        return Err((
            "clientId",
            "oauth.clientSecretEnv and oauth.issuer need oauth.clientId".to_owned(),
        ));
    }
    let client_metadata_url = text("clientMetadataUrl")?;
    if let Some(url) = &client_metadata_url
        && crate::auth::registration::check_metadata_document_url(url).is_err()
    {
        return Err((
            "clientMetadataUrl",
            "oauth.clientMetadataUrl must be an https URL with a path, without user, password or fragment".to_owned(),
        ));
    }
    let scopes = match map.get("scopes") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .filter(|s| !s.is_empty() && !s.contains(char::is_whitespace))
                    .map(str::to_owned)
            })
            .collect::<Option<Vec<_>>>()
            .ok_or((
                "scopes",
                "oauth.scopes must be an array of non-empty strings without spaces".to_owned(),
            ))?,
        Some(_) => {
            return Err((
                "scopes",
                "oauth.scopes must be an array of non-empty strings without spaces".to_owned(),
            ));
        }
    };
    let redirect_port = match map.get("redirectPort") {
        None => None,
        Some(v) => Some(
            v.as_u64()
                .filter(|p| (1..=65535).contains(p))
                .map(|p| p as u16)
                .ok_or((
                    "redirectPort",
                    "oauth.redirectPort must be a port number (1-65535)".to_owned(),
                ))?,
        ),
    };
    let legacy_discovery = match map.get("legacyDiscovery") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err((
                "legacyDiscovery",
                "oauth.legacyDiscovery must be a boolean".to_owned(),
            ));
        }
    };
    let dpop = match map.get("dpop").map(|v| v.as_str()) {
        None => crate::auth::DpopMode::Auto,
        Some(Some("auto")) => crate::auth::DpopMode::Auto,
        Some(Some("required")) => crate::auth::DpopMode::Required,
        Some(Some("off")) => crate::auth::DpopMode::Off,
        Some(_) => {
            return Err((
                "dpop",
                "oauth.dpop must be \"auto\", \"required\" or \"off\"".to_owned(),
            ));
        }
    };
    let token_store = match map.get("tokenStore") {
        None => TokenStoreKind::File,
        Some(Value::String(s)) if s == "file" => TokenStoreKind::File,
        Some(Value::String(s)) if s == "keyring" => {
            if !cfg!(feature = "keyring") {
                return Err((
                    "tokenStore",
                    "oauth.tokenStore \"keyring\" needs a build with the `keyring` feature (cargo install smthrs-mcp --features keyring); this one has only \"file\"".to_owned(),
                ));
            }
            TokenStoreKind::Keyring
        }
        Some(_) => {
            return Err((
                "tokenStore",
                "oauth.tokenStore must be \"file\" or \"keyring\"".to_owned(),
            ));
        }
    };
    let workload_identity = map
        .get("workloadIdentity")
        .map(decode_workload_identity)
        .transpose()?
        .map(Box::new);
    let enterprise = map
        .get("enterprise")
        .map(decode_enterprise)
        .transpose()?
        .map(Box::new);
    if workload_identity.is_some() || enterprise.is_some() {
        let grant = if workload_identity.is_some() {
            "workloadIdentity"
        } else {
            "enterprise"
        };
        if workload_identity.is_some() && enterprise.is_some() {
            return Err((
                "enterprise",
                "oauth.workloadIdentity and oauth.enterprise are exclusive".to_owned(),
            ));
        }
        if client_id.is_none() {
            return Err(("clientId", format!("oauth.{grant} needs oauth.clientId")));
        }
        if workload_identity.is_some() && client_secret_env.is_some() {
            return Err((
                "clientSecretEnv",
                "oauth.workloadIdentity authenticates with its assertion: oauth.clientSecretEnv does not apply".to_owned(),
            ));
        }
        for (field, set) in [
            ("issuer", issuer.is_some()),
            ("clientMetadataUrl", client_metadata_url.is_some()),
            ("redirectPort", redirect_port.is_some()),
        ] {
            if set {
                return Err((
                    field,
                    format!("oauth.{field} does not apply with oauth.{grant} (no login happens)"),
                ));
            }
        }
    }
    let _: &Map<String, Value> = map;
    Ok(OAuthEntry {
        client_id,
        client_secret_env,
        issuer,
        client_metadata_url,
        scopes,
        redirect_port,
        legacy_discovery,
        dpop,
        token_store,
        workload_identity,
        enterprise,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_and_their_rules() {
        let e = decode(&json!({"clientId": "c", "clientSecretEnv": "S", "issuer": "https://as",
            "clientMetadataUrl": "https://app.example/c.json", "scopes": ["a", "b"], "redirectPort": 8765,
            "legacyDiscovery": true, "dpop": "required"})).unwrap();
        assert_eq!(e.dpop, crate::auth::DpopMode::Required);
        assert_eq!(
            decode(&json!({"dpop": "off"})).unwrap().dpop,
            crate::auth::DpopMode::Off
        );
        assert_eq!(e.redirect_port, Some(8765));
        assert_eq!(e.scopes, ["a", "b"]);
        assert_eq!(decode(&json!({})).unwrap(), OAuthEntry::default());
        for (bad, field) in [
            (json!([]), "oauth"),
            (json!({"clientid": "x"}), "oauth"),
            (json!({"clientId": ""}), "clientId"),
            (json!({"clientSecretEnv": "S"}), "clientId"),
            (
                json!({"clientId": "c", "clientSecretEnv": "A=B"}),
                "clientSecretEnv",
            ),
            (json!({"clientId": "c", "issuer": "not a url"}), "issuer"),
            (
                json!({"clientMetadataUrl": "http://a/x"}),
                "clientMetadataUrl",
            ),
            (json!({"scopes": ["a b"]}), "scopes"),
            (json!({"scopes": "a"}), "scopes"),
            (json!({"redirectPort": 0}), "redirectPort"),
            (json!({"redirectPort": 70000}), "redirectPort"),
            (json!({"legacyDiscovery": "yes"}), "legacyDiscovery"),
            (json!({"dpop": "always"}), "dpop"),
            (json!({"dpop": true}), "dpop"),
            (json!({"tokenStore": "vault"}), "tokenStore"),
            (json!({"tokenStore": true}), "tokenStore"),
        ] {
            assert_eq!(decode(&bad).unwrap_err().0, field, "{bad}");
        }
    }

    #[test]
    fn token_store_file_or_keyring_where_the_feature_is_built() {
        assert_eq!(
            decode(&json!({"tokenStore": "file"})).unwrap().token_store,
            TokenStoreKind::File
        );
        let keyring = decode(&json!({"tokenStore": "keyring"}));
        if cfg!(feature = "keyring") {
            assert_eq!(keyring.unwrap().token_store, TokenStoreKind::Keyring);
        } else {
            let (field, message) = keyring.unwrap_err();
            assert_eq!(field, "tokenStore");
            assert!(message.contains("`keyring` feature"), "{message}");
        }
    }

    #[test]
    fn workload_identity_and_enterprise_fields() {
        let e = decode(&json!({"clientId": "agent",
            "workloadIdentity": {"tokenFile": "/var/run/token", "maxTokenBytes": 4096}}))
        .unwrap();
        assert_eq!(
            e.workload_identity.as_deref(),
            Some(&WorkloadIdentityEntry {
                token: TokenOrigin::File("/var/run/token".into()),
                max_token_bytes: Some(4096),
            })
        );
        let e = decode(&json!({"clientId": "c", "clientSecretEnv": "AS_SECRET",
            "enterprise": {"idpTokenEndpoint": "https://idp.example/token", "idpClientId": "idp",
                "idpClientSecretEnv": "IDP_SECRET", "idTokenEnv": "ID_TOKEN"}}))
        .unwrap();
        let ent = e.enterprise.unwrap();
        assert_eq!(ent.id_token, TokenOrigin::Env("ID_TOKEN".into()));
        assert_eq!(ent.idp_client_secret_env.as_deref(), Some("IDP_SECRET"));
        assert_eq!(ent.max_token_bytes, None);
        let wif = |w: Value| json!({"clientId": "a", "workloadIdentity": w});
        let ent = |mut e: Value| {
            let base = json!({"idpTokenEndpoint": "https://idp/t", "idpClientId": "i", "idTokenFile": "/t"});
            for (k, v) in base.as_object().unwrap() {
                if e.get(k).is_none() {
                    e[k] = v.clone();
                } else if e[k].is_null() {
                    e.as_object_mut().unwrap().remove(k);
                }
            }
            json!({"clientId": "a", "enterprise": e})
        };
        for (bad, field) in [
            (json!({"workloadIdentity": {"tokenFile": "/t"}}), "clientId"),
            (wif(json!("x")), "workloadIdentity"),
            (wif(json!({})), "oauth.workloadIdentity.tokenFile"),
            (
                wif(json!({"tokenFile": "/t", "tokenEnv": "T"})),
                "oauth.workloadIdentity.tokenFile",
            ),
            (
                wif(json!({"tokenFile": "relative/t"})),
                "oauth.workloadIdentity.tokenFile",
            ),
            (
                wif(json!({"tokenEnv": "A=B"})),
                "oauth.workloadIdentity.tokenEnv",
            ),
            (
                wif(json!({"tokenFile": "/t", "maxTokenBytes": 0})),
                "oauth.workloadIdentity.maxTokenBytes",
            ),
            (
                wif(json!({"tokenFile": "/t", "tokenfile": "/u"})),
                "oauth.workloadIdentity",
            ),
            (
                json!({"clientId": "a", "clientSecretEnv": "S", "workloadIdentity": {"tokenFile": "/t"}}),
                "clientSecretEnv",
            ),
            (
                json!({"clientId": "a", "issuer": "https://as", "workloadIdentity": {"tokenFile": "/t"}}),
                "issuer",
            ),
            (
                json!({"clientId": "a", "redirectPort": 8765, "enterprise": {"idpTokenEndpoint": "https://idp/t", "idpClientId": "i", "idTokenFile": "/t"}}),
                "redirectPort",
            ),
            (
                json!({"clientId": "a", "workloadIdentity": {"tokenFile": "/t"}, "enterprise": {"idpTokenEndpoint": "https://idp/t", "idpClientId": "i", "idTokenFile": "/t"}}),
                "enterprise",
            ),
            (
                ent(json!({"idpTokenEndpoint": "ftp://idp/t"})),
                "oauth.enterprise.idpTokenEndpoint",
            ),
            (
                ent(json!({"idpTokenEndpoint": null})),
                "oauth.enterprise.idpTokenEndpoint",
            ),
            (
                ent(json!({"idpClientId": null})),
                "oauth.enterprise.idpClientId",
            ),
            (
                ent(json!({"idpClientSecretEnv": ""})),
                "oauth.enterprise.idpClientSecretEnv",
            ),
            (
                ent(json!({"idTokenFile": null})),
                "oauth.enterprise.idTokenFile",
            ),
            (
                ent(json!({"idTokenEnv": "X"})),
                "oauth.enterprise.idTokenFile",
            ),
            (
                ent(json!({"maxTokenBytes": "9"})),
                "oauth.enterprise.maxTokenBytes",
            ),
            (ent(json!({"extra": 1})), "oauth.enterprise"),
        ] {
            assert_eq!(decode(&bad).unwrap_err().0, field, "{bad}");
        }
    }
}

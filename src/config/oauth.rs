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
}

/// Where the CLI keeps a server's registrations and tokens (`oauth.tokenStore`).
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

const FIELDS: [&str; 9] = [
    "clientId",
    "clientSecretEnv",
    "issuer",
    "clientMetadataUrl",
    "scopes",
    "redirectPort",
    "legacyDiscovery",
    "dpop",
    "tokenStore",
];

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
}

//! Protected Resource Metadata (RFC 9728) and authorization server metadata
//! (RFC 8414, OpenID Connect Discovery): the decoders, the discovery order, and
//! the `resource` and `issuer` checks.
//!
//! Documents are untrusted input: they are bounded in size by the fetcher
//! ([`MAX_METADATA_BYTES`]), in depth by [`crate::json_bounds::parse_value`] (128),
//! and here in the number of entries kept ([`MAX_AUTHORIZATION_SERVERS`],
//! [`MAX_LIST_ENTRIES`]). Issuer and resource identifiers are kept as the original
//! strings: `url::Url` would serialize `http://h:1` as `http://h:1/`, which breaks
//! the exact comparisons the specification requires.
//!
//! (Internal: the example runs as the unit test `the_module_doc_example`.)
//!
//! ```text
//! let mcp = url::Url::parse("https://mcp.example/tenant/mcp").unwrap();
//! assert_eq!(protected_resource_metadata_urls(&mcp), [
//!     "https://mcp.example/.well-known/oauth-protected-resource/tenant/mcp",
//!     "https://mcp.example/.well-known/oauth-protected-resource",
//! ]);
//! assert_eq!(authorization_server_metadata_urls("https://as.example/t1").unwrap(), [
//!     "https://as.example/.well-known/oauth-authorization-server/t1",
//!     "https://as.example/.well-known/openid-configuration/t1",
//!     "https://as.example/t1/.well-known/openid-configuration",
//! ]);
//! ```

use serde::Deserialize;
use serde_json::Value;
use url::Url;

use crate::error::{Error, ErrorKind, Result};

/// The largest metadata document read: 256 KiB.
pub const MAX_METADATA_BYTES: usize = 256 * 1024;
/// The most `authorization_servers` entries kept from a PRM document.
pub const MAX_AUTHORIZATION_SERVERS: usize = 8;
/// The most entries kept from any other list (`scopes_supported`, ...).
pub const MAX_LIST_ENTRIES: usize = 64;
/// The longest string kept from a metadata document (a URL, a scope): 2 KiB.
pub const MAX_STRING_BYTES: usize = 2048;

/// A Protected Resource Metadata document (RFC 9728 §2), the fields the client uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtectedResourceMetadata {
    /// The resource identifier, as sent.
    pub resource: String,
    /// Issuer identifiers of the authorization servers, as sent (at least one).
    pub authorization_servers: Vec<String>,
    /// `scopes_supported`, when present.
    pub scopes_supported: Option<Vec<String>>,
}

/// Authorization server metadata (RFC 8414 §2), the fields the client uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier, as sent.
    pub issuer: String,
    /// The authorization endpoint.
    pub authorization_endpoint: Option<String>,
    /// The token endpoint.
    pub token_endpoint: Option<String>,
    /// The Dynamic Client Registration endpoint (RFC 7591).
    pub registration_endpoint: Option<String>,
    /// `response_types_supported`.
    pub response_types_supported: Vec<String>,
    /// `code_challenge_methods_supported`; `None` when absent (PKCE then refused).
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// `token_endpoint_auth_methods_supported`; `None` = the RFC 8414 default
    /// (`client_secret_basic`).
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// `grant_types_supported`.
    pub grant_types_supported: Option<Vec<String>>,
    /// `scopes_supported`.
    pub scopes_supported: Option<Vec<String>>,
    /// `client_id_metadata_document_supported` (CIMD).
    pub client_id_metadata_document_supported: bool,
    /// `authorization_response_iss_parameter_supported` (RFC 9207).
    pub authorization_response_iss_parameter_supported: bool,
    /// The token revocation endpoint (RFC 7009), kept with the tokens so that a
    /// logout revokes them without discovery. Like every endpoint it is checked by
    /// the address policy when it is used.
    pub revocation_endpoint: Option<String>,
}

fn invalid(what: &str) -> Error {
    Error::new(ErrorKind::Unauthorized, format!("the {what} is not valid"))
}

fn parse_object(bytes: &[u8], what: &str) -> Result<serde_json::Map<String, Value>> {
    match crate::json_bounds::parse_value(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(invalid(what)),
    }
}

fn string(map: &serde_json::Map<String, Value>, key: &str) -> Option<String> {
    match map.get(key) {
        Some(Value::String(s)) if !s.is_empty() && s.len() <= MAX_STRING_BYTES => Some(s.clone()),
        _ => None,
    }
}

fn list(map: &serde_json::Map<String, Value>, key: &str, max: usize) -> Option<Vec<String>> {
    let Some(Value::Array(items)) = map.get(key) else {
        return None;
    };
    Some(
        items
            .iter()
            .filter_map(|v| v.as_str())
            .filter(|s| !s.is_empty() && s.len() <= MAX_STRING_BYTES)
            .take(max)
            .map(str::to_owned)
            .collect(),
    )
}

fn flag(map: &serde_json::Map<String, Value>, key: &str) -> bool {
    matches!(map.get(key), Some(Value::Bool(true)))
}

/// Decodes a PRM document. `resource` and at least one `authorization_servers`
/// entry are required; lists are truncated to their bounds.
///
/// Fails with `unauthorized` (the resource cannot be authorized to) without
/// quoting the document.
pub fn decode_protected_resource_metadata(bytes: &[u8]) -> Result<ProtectedResourceMetadata> {
    const WHAT: &str = "protected resource metadata";
    let map = parse_object(bytes, WHAT)?;
    let resource = string(&map, "resource").ok_or_else(|| invalid(WHAT))?;
    let authorization_servers = list(&map, "authorization_servers", MAX_AUTHORIZATION_SERVERS)
        .filter(|l| !l.is_empty())
        .ok_or_else(|| invalid(WHAT))?;
    Ok(ProtectedResourceMetadata {
        resource,
        authorization_servers,
        scopes_supported: list(&map, "scopes_supported", MAX_LIST_ENTRIES),
    })
}

/// Decodes authorization server metadata (RFC 8414 or OpenID Connect Discovery:
/// the OIDC-only fields are ignored). `issuer` is required.
pub fn decode_authorization_server_metadata(bytes: &[u8]) -> Result<AuthorizationServerMetadata> {
    const WHAT: &str = "authorization server metadata";
    let map = parse_object(bytes, WHAT)?;
    Ok(AuthorizationServerMetadata {
        issuer: string(&map, "issuer").ok_or_else(|| invalid(WHAT))?,
        authorization_endpoint: string(&map, "authorization_endpoint"),
        token_endpoint: string(&map, "token_endpoint"),
        registration_endpoint: string(&map, "registration_endpoint"),
        response_types_supported: list(&map, "response_types_supported", MAX_LIST_ENTRIES)
            .unwrap_or_default(),
        code_challenge_methods_supported: list(
            &map,
            "code_challenge_methods_supported",
            MAX_LIST_ENTRIES,
        ),
        token_endpoint_auth_methods_supported: list(
            &map,
            "token_endpoint_auth_methods_supported",
            MAX_LIST_ENTRIES,
        ),
        grant_types_supported: list(&map, "grant_types_supported", MAX_LIST_ENTRIES),
        scopes_supported: list(&map, "scopes_supported", MAX_LIST_ENTRIES),
        client_id_metadata_document_supported: flag(&map, "client_id_metadata_document_supported"),
        authorization_response_iss_parameter_supported: flag(
            &map,
            "authorization_response_iss_parameter_supported",
        ),
        revocation_endpoint: string(&map, "revocation_endpoint"),
    })
}

/// The DCR response fields the client keeps (RFC 7591 §3.2.1).
#[derive(Clone, Deserialize)]
pub(crate) struct RawRegistration {
    pub(crate) client_id: String,
    #[serde(default)]
    pub(crate) client_secret: Option<String>,
    #[serde(default)]
    pub(crate) token_endpoint_auth_method: Option<String>,
}

/// Decodes a DCR response: `client_id` is required.
pub(crate) fn decode_registration(bytes: &[u8]) -> Result<RawRegistration> {
    let map = parse_object(bytes, "client registration response")?;
    let raw: RawRegistration = serde_json::from_value(Value::Object(map))
        .map_err(|_| invalid("client registration response"))?;
    if raw.client_id.is_empty() || raw.client_id.len() > MAX_STRING_BYTES {
        return Err(invalid("client registration response"));
    }
    Ok(raw)
}

/// The PRM URLs to try when the challenge names none, in order (RFC 9728 §3.1):
/// the path-aware one (only when the MCP URL has a path), then the root one.
pub fn protected_resource_metadata_urls(mcp: &Url) -> Vec<String> {
    let origin = origin_text(mcp);
    let path = mcp.path().trim_end_matches('/');
    let root = format!("{origin}/.well-known/oauth-protected-resource");
    if path.is_empty() {
        vec![root]
    } else {
        vec![format!("{root}{path}"), root]
    }
}

/// `scheme://host[:port]` of a URL, without a trailing slash.
pub(crate) fn origin_text(url: &Url) -> String {
    let host = match url.host() {
        Some(url::Host::Ipv6(a)) => format!("[{a}]"),
        Some(h) => h.to_string(),
        None => String::new(),
    };
    match url.port() {
        Some(p) => format!("{}://{host}:{p}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    }
}

/// The authorization server metadata URLs for an issuer, in the order of the MCP
/// authorization specification (RFC 8414 §3.1 path insertion, then OpenID
/// Connect with path insertion, then OpenID Connect path-appended; without a
/// path: RFC 8414, then OpenID Connect).
///
/// Fails when the issuer is not an absolute `http`/`https` URL without query or
/// fragment.
pub fn authorization_server_metadata_urls(issuer: &str) -> Result<Vec<String>> {
    let url = Url::parse(issuer).map_err(|_| invalid("authorization server issuer"))?;
    if !matches!(url.scheme(), "http" | "https")
        || url.host_str().is_none_or(str::is_empty)
        || url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return Err(invalid("authorization server issuer"));
    }
    let origin = origin_text(&url);
    let path = url.path().trim_end_matches('/');
    Ok(if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    })
}

/// True when the PRM `resource` identifies the MCP endpoint `mcp`: same scheme,
/// host and port, and a path equal to, or a prefix ending at a segment boundary
/// of, the MCP URL's path. No query or fragment.
pub fn resource_matches(resource: &str, mcp: &Url) -> bool {
    let Ok(r) = Url::parse(resource) else {
        return false;
    };
    if r.fragment().is_some() || r.query().is_some() || !r.username().is_empty() {
        return false;
    }
    if r.scheme() != mcp.scheme()
        || r.host() != mcp.host()
        || r.port_or_known_default() != mcp.port_or_known_default()
    {
        return false;
    }
    let want = r.path().trim_end_matches('/');
    let have = mcp.path().trim_end_matches('/');
    want.is_empty() || have == want || have.starts_with(&format!("{want}/"))
}

/// The resource identifier used without PRM (2025-03-26 servers): the MCP URL
/// without fragment, query or trailing slash.
pub fn legacy_resource(mcp: &Url) -> String {
    let mut text = format!("{}{}", origin_text(mcp), mcp.path());
    while text.ends_with('/') && text.len() > origin_text(mcp).len() {
        text.pop();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_module_doc_example() {
        let mcp = url::Url::parse("https://mcp.example/tenant/mcp").unwrap();
        assert_eq!(
            protected_resource_metadata_urls(&mcp),
            [
                "https://mcp.example/.well-known/oauth-protected-resource/tenant/mcp",
                "https://mcp.example/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            authorization_server_metadata_urls("https://as.example/t1").unwrap(),
            [
                "https://as.example/.well-known/oauth-authorization-server/t1",
                "https://as.example/.well-known/openid-configuration/t1",
                "https://as.example/t1/.well-known/openid-configuration",
            ]
        );
    }

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn prm_urls_path_aware_then_root() {
        assert_eq!(
            protected_resource_metadata_urls(&url("http://localhost:3000/mcp")),
            [
                "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
                "http://localhost:3000/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            protected_resource_metadata_urls(&url("https://h/")),
            ["https://h/.well-known/oauth-protected-resource"]
        );
        assert_eq!(
            protected_resource_metadata_urls(&url("http://[::1]:8/mcp/")),
            [
                "http://[::1]:8/.well-known/oauth-protected-resource/mcp",
                "http://[::1]:8/.well-known/oauth-protected-resource"
            ]
        );
    }

    #[test]
    fn as_urls_follow_the_spec_order() {
        assert_eq!(
            authorization_server_metadata_urls("http://localhost:9").unwrap(),
            [
                "http://localhost:9/.well-known/oauth-authorization-server",
                "http://localhost:9/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            authorization_server_metadata_urls("http://localhost:9/")
                .unwrap()
                .len(),
            2
        );
        for bad in [
            "",
            "ftp://h",
            "https://h/?q=1",
            "https://h/#f",
            "/rel",
            "https://u:p@h",
        ] {
            assert!(authorization_server_metadata_urls(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn resource_checks() {
        let mcp = url("http://localhost:3000/mcp");
        assert!(resource_matches("http://localhost:3000/mcp", &mcp));
        assert!(resource_matches("http://localhost:3000", &mcp));
        assert!(resource_matches("http://localhost:3000/", &mcp));
        assert!(!resource_matches("https://evil.example.com/mcp", &mcp));
        assert!(!resource_matches("http://localhost:3001/mcp", &mcp));
        assert!(!resource_matches("http://localhost:3000/mc", &mcp));
        assert!(!resource_matches("http://localhost:3000/mcp/deeper", &mcp));
        assert!(!resource_matches("http://localhost:3000/mcp#f", &mcp));
        assert!(resource_matches("https://h/a", &url("https://h:443/a/b")));
        assert_eq!(
            legacy_resource(&url("http://localhost:3/mcp/?x#y")),
            "http://localhost:3/mcp"
        );
        assert_eq!(
            legacy_resource(&url("http://localhost:3/")),
            "http://localhost:3"
        );
    }

    #[test]
    fn decoders_require_their_fields_and_bound_lists() {
        let prm = decode_protected_resource_metadata(
            br#"{"resource":"http://h/mcp","authorization_servers":["http://as"],"scopes_supported":["a","b"]}"#,
        )
        .unwrap();
        assert_eq!(prm.authorization_servers, ["http://as"]);
        assert_eq!(prm.scopes_supported.unwrap(), ["a", "b"]);
        for bad in [
            &br#"{"authorization_servers":["x"]}"#[..],
            br#"{"resource":"r","authorization_servers":[]}"#,
            br#"{"resource":"r"}"#,
            b"[]",
            b"not json",
        ] {
            let err = decode_protected_resource_metadata(bad).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Unauthorized);
        }
        let many: Vec<String> = (0..100).map(|i| format!("\"http://as{i}\"")).collect();
        let doc = format!(
            r#"{{"resource":"r","authorization_servers":[{}]}}"#,
            many.join(",")
        );
        let prm = decode_protected_resource_metadata(doc.as_bytes()).unwrap();
        assert_eq!(prm.authorization_servers.len(), MAX_AUTHORIZATION_SERVERS);
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(decode_authorization_server_metadata(deep.as_bytes()).is_err());
        let asm = decode_authorization_server_metadata(
            br#"{"issuer":"http://as","code_challenge_methods_supported":["S256"],
                "authorization_response_iss_parameter_supported":true,"jwks_uri":"x"}"#,
        )
        .unwrap();
        assert!(asm.authorization_response_iss_parameter_supported);
        assert_eq!(asm.code_challenge_methods_supported.unwrap(), ["S256"]);
        assert!(asm.revocation_endpoint.is_none());
        let revoking = decode_authorization_server_metadata(
            br#"{"issuer":"http://as","revocation_endpoint":"http://as/revoke"}"#,
        )
        .unwrap();
        assert_eq!(
            revoking.revocation_endpoint.as_deref(),
            Some("http://as/revoke")
        );
        let oversized = format!(
            r#"{{"issuer":"http://as","revocation_endpoint":"http://as/{}"}}"#,
            "r".repeat(MAX_STRING_BYTES)
        );
        let dropped = decode_authorization_server_metadata(oversized.as_bytes()).unwrap();
        assert!(dropped.revocation_endpoint.is_none());
        assert!(asm.token_endpoint_auth_methods_supported.is_none());
        assert!(decode_authorization_server_metadata(br#"{"issuer":""}"#).is_err());
    }
}

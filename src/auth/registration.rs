//! Client registration, in the specification's order: pre-registered credentials
//! for that authorization server, then a Client ID Metadata Document (when the
//! server advertises `client_id_metadata_document_supported`), then Dynamic
//! Client Registration (RFC 7591, when it has a `registration_endpoint`), else an
//! error asking for client details.
//!
//! Registrations are bound to the issuer that issued them (SEP-2352): the chain
//! keeps them per issuer and never presents one server's client id or secret to
//! another. Pre-registered credentials may name the issuer they belong to; when
//! the resource now names another authorization server they are not presented.
//!
//! A dynamic registration is made once per (issuer, redirect URI) and reused by
//! every later authorization with that redirect URI: it is stored as soon as the
//! server answers (a login abandoned after registering does not register again),
//! and an authorizer on another redirect URI (a new loopback port) gets a
//! registration of its own, since a server may require the exact URI
//! registered. The store keeps at most
//! [`MAX_REGISTRATIONS`](super::store::MAX_REGISTRATIONS) per key.

use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use url::Url;

use super::metadata::AuthorizationServerMetadata;
use crate::error::{Error, ErrorKind, Result};

/// How the client was registered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegistrationKind {
    /// From configuration.
    PreRegistered,
    /// The client id is a Client ID Metadata Document URL.
    MetadataDocument,
    /// Registered with the server's `registration_endpoint`.
    Dynamic,
}

/// A client registration at one authorization server.
///
/// `Debug` never shows the secret.
#[derive(Clone)]
pub struct Registration {
    /// The issuer it belongs to (for a CIMD id: the issuer it was used with).
    pub issuer: String,
    /// The client id.
    pub client_id: String,
    /// The client secret, for confidential clients.
    pub client_secret: Option<SecretString>,
    /// The token endpoint authentication method the server assigned, if any.
    pub token_endpoint_auth_method: Option<String>,
    /// The redirect URIs registered (dynamic registration only).
    pub redirect_uris: Vec<String>,
    /// How it was obtained.
    pub kind: RegistrationKind,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[REDACTED]"),
            )
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .field("kind", &self.kind)
            .finish()
    }
}

/// Pre-registered client credentials.
#[derive(Clone)]
pub struct PreRegisteredClient {
    /// The client id.
    pub client_id: String,
    /// The client secret, if the client is confidential.
    pub client_secret: Option<SecretString>,
    /// The issuer these credentials belong to. `None`: whichever authorization
    /// server the resource names (the credentials are then presented to it).
    pub issuer: Option<String>,
}

impl std::fmt::Debug for PreRegisteredClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreRegisteredClient")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[REDACTED]"),
            )
            .field("issuer", &self.issuer)
            .finish()
    }
}

/// What the chain should do to get a client id at an authorization server.
#[derive(Debug)]
pub(crate) enum Plan {
    /// Use this registration as is.
    Use(Registration),
    /// Register dynamically at this endpoint.
    Register(Url),
}

/// Chooses the registration for `metadata`'s issuer, in the specification's order.
/// `known` are the stored dynamic registrations: the one of this issuer whose
/// redirect URIs include `redirect_uri` is reused.
pub(crate) fn plan(
    server: &str,
    metadata: &AuthorizationServerMetadata,
    pre_registered: Option<&PreRegisteredClient>,
    metadata_document: Option<&str>,
    known: &[Registration],
    redirect_uri: Option<&str>,
) -> Result<Plan> {
    let issuer = &metadata.issuer;
    if let Some(pre) = pre_registered {
        match &pre.issuer {
            Some(bound) if bound != issuer => {
                return Err(Error::new(
                    ErrorKind::Unauthorized,
                    format!(
                        "server \"{server}\" names an authorization server other than the one its pre-registered client belongs to; the credentials were not presented"
                    ),
                ));
            }
            _ => {
                return Ok(Plan::Use(Registration {
                    issuer: issuer.clone(),
                    client_id: pre.client_id.clone(),
                    client_secret: pre.client_secret.clone(),
                    token_endpoint_auth_method: None,
                    redirect_uris: Vec::new(),
                    kind: RegistrationKind::PreRegistered,
                }));
            }
        }
    }
    if let Some(url) = metadata_document
        && metadata.client_id_metadata_document_supported
    {
        return Ok(Plan::Use(Registration {
            issuer: issuer.clone(),
            client_id: url.to_owned(),
            client_secret: None,
            token_endpoint_auth_method: Some("none".into()),
            redirect_uris: Vec::new(),
            kind: RegistrationKind::MetadataDocument,
        }));
    }
    if let Some(known) = known.iter().rev().find(|known| {
        known.issuer == *issuer
            && known.kind == RegistrationKind::Dynamic
            && redirect_uri.is_none_or(|uri| known.redirect_uris.iter().any(|r| r == uri))
    }) {
        return Ok(Plan::Use(known.clone()));
    }
    match &metadata.registration_endpoint {
        Some(endpoint) => Url::parse(endpoint).map(Plan::Register).map_err(|_| {
            Error::new(
                ErrorKind::Unauthorized,
                format!("server \"{server}\": the authorization server's registration endpoint is not a valid URL"),
            )
        }),
        None => Err(Error::new(
            ErrorKind::Unauthorized,
            format!(
                "server \"{server}\": the authorization server offers no way to register this client; configure a pre-registered client id (oauth.clientId) or a client metadata document URL (oauth.clientMetadataUrl)"
            ),
        )),
    }
}

/// The RFC 7591 registration request body: a native (CLI/desktop) public client
/// using the authorization code grant with refresh tokens and PKCE.
pub(crate) fn registration_body(
    client_name: &str,
    redirect_uri: &str,
    scope: Option<&str>,
) -> Value {
    let mut body = json!({
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    });
    if let Some(scope) = scope.filter(|s| !s.is_empty()) {
        body["scope"] = Value::from(scope);
    }
    body
}

/// The error codes of a refused Dynamic Client Registration (RFC 7591 §3.2.2).
pub(crate) const REGISTRATION_ERRORS: [&str; 4] = [
    "invalid_redirect_uri",
    "invalid_client_metadata",
    "invalid_software_statement",
    "unapproved_software_statement",
];

/// How a message names the `error` of a refused registration (the response
/// body, already capped): a standard code as crate text (the static string, not
/// the server's), anything else (an unknown code, no code, not JSON) as
/// `an unknown error`. Nothing else of the body is read.
pub(crate) fn registration_error_name(body: &[u8]) -> &'static str {
    let error = match crate::json_bounds::parse_value(body) {
        Ok(Value::Object(map)) => map.get("error").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    };
    error
        .and_then(|e| REGISTRATION_ERRORS.iter().find(|known| **known == e))
        .copied()
        .unwrap_or("an unknown error")
}

/// True when a registration that carried `scope` and was refused with `error`
/// (named by [`registration_error_name`]) is worth one more attempt without
/// `scope`: `scope` is optional in RFC 7591 §2, and a server with a fixed set of
/// resource scopes (an OpenID provider with resource indicators) may refuse it as
/// `invalid_client_metadata`. A code that names another field (the redirect URI,
/// a software statement) is not retried; an unknown one is.
pub(crate) fn retry_without_scope(error: &str) -> bool {
    matches!(error, "invalid_client_metadata" | "an unknown error")
}

/// Checks a Client ID Metadata Document URL's shape: `https` with a path (the
/// document itself is hosted by the application, not fetched here).
pub fn check_metadata_document_url(url: &str) -> Result<()> {
    let ok = Url::parse(url).is_ok_and(|u| {
        u.scheme() == "https"
            && u.host_str().is_some_and(|h| !h.is_empty())
            && u.path() != "/"
            && !u.path().is_empty()
            && u.fragment().is_none()
            && u.username().is_empty()
            && u.password().is_none()
    });
    if ok {
        Ok(())
    } else {
        Err(Error::config(
            "the client metadata document URL must be an https URL with a path, without user, password or fragment",
        ))
    }
}

/// Exposes a registration's secret (for the token request).
pub(crate) fn secret(reg: &Registration) -> Option<oauth2::ClientSecret> {
    reg.client_secret
        .as_ref()
        .map(|s| oauth2::ClientSecret::new(s.expose_secret().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(cimd: bool, dcr: bool) -> AuthorizationServerMetadata {
        AuthorizationServerMetadata {
            issuer: "http://as".into(),
            registration_endpoint: dcr.then(|| "http://as/register".into()),
            client_id_metadata_document_supported: cimd,
            ..Default::default()
        }
    }

    #[test]
    fn the_order_is_pre_registered_cimd_dcr_error() {
        let pre = PreRegisteredClient {
            client_id: "pre".into(),
            client_secret: Some(SecretString::from("s")),
            issuer: None,
        };
        let cimd = Some("https://app.example/client.json");
        match plan("s", &meta(true, true), Some(&pre), cimd, &[], None).unwrap() {
            Plan::Use(r) => assert_eq!(r.kind, RegistrationKind::PreRegistered),
            other => panic!("{other:?}"),
        }
        match plan("s", &meta(true, true), None, cimd, &[], None).unwrap() {
            Plan::Use(r) => assert_eq!(r.client_id, "https://app.example/client.json"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            plan("s", &meta(false, true), None, cimd, &[], None).unwrap(),
            Plan::Register(_)
        ));
        let err = plan("s", &meta(false, false), None, cimd, &[], None).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unauthorized);
        assert!(err.message().contains("oauth.clientId"));
    }

    /// The plan for a server that supports dynamic registration, with `stored`
    /// registered before and `redirect_uri` now.
    fn replan(stored: &Registration, redirect_uri: &str) -> Plan {
        plan(
            "s",
            &meta(false, true),
            None,
            None,
            std::slice::from_ref(stored),
            Some(redirect_uri),
        )
        .unwrap()
    }

    #[test]
    fn bound_credentials_are_not_presented_elsewhere() {
        let pre = PreRegisteredClient {
            client_id: "pre".into(),
            client_secret: None,
            issuer: Some("http://other".into()),
        };
        let err = plan("s", &meta(false, true), Some(&pre), None, &[], None).unwrap_err();
        assert!(err.message().contains("not presented"));
        // A dynamic registration of another issuer is not reused; a new one is made.
        let old = Registration {
            issuer: "http://old".into(),
            client_id: "old-id".into(),
            client_secret: None,
            token_endpoint_auth_method: None,
            redirect_uris: vec!["http://127.0.0.1:1/callback".into()],
            kind: RegistrationKind::Dynamic,
        };
        assert!(matches!(
            replan(&old, "http://127.0.0.1:1/callback"),
            Plan::Register(_)
        ));
        let same = Registration {
            issuer: "http://as".into(),
            ..old
        };
        assert!(matches!(
            replan(&same, "http://127.0.0.1:1/callback"),
            Plan::Use(_)
        ));
        // Another redirect URI than the one registered: register again.
        assert!(matches!(
            replan(&same, "http://127.0.0.1:2/callback"),
            Plan::Register(_)
        ));
    }

    #[test]
    fn the_registration_of_this_issuer_and_redirect_uri_is_reused() {
        let reg = |issuer: &str, id: &str, port: u16| Registration {
            issuer: issuer.into(),
            client_id: id.into(),
            client_secret: None,
            token_endpoint_auth_method: None,
            redirect_uris: vec![format!("http://127.0.0.1:{port}/callback")],
            kind: RegistrationKind::Dynamic,
        };
        let known = [
            reg("http://as", "port-1", 1),
            reg("http://other", "other-2", 2),
            reg("http://as", "port-2", 2),
        ];
        let chosen = |port: u16| match plan(
            "s",
            &meta(false, true),
            None,
            None,
            &known,
            Some(&format!("http://127.0.0.1:{port}/callback")),
        )
        .unwrap()
        {
            Plan::Use(r) => Some(r.client_id),
            Plan::Register(_) => None,
        };
        assert_eq!(chosen(1).as_deref(), Some("port-1"));
        assert_eq!(chosen(2).as_deref(), Some("port-2"));
        assert_eq!(chosen(3), None);
    }

    #[test]
    fn registration_body_is_a_native_public_client() {
        let body = registration_body("smthrs-mcp", "http://127.0.0.1:5/callback", Some("a b"));
        assert_eq!(body["application_type"], "native");
        assert_eq!(
            body["grant_types"],
            json!(["authorization_code", "refresh_token"])
        );
        assert_eq!(body["token_endpoint_auth_method"], "none");
        assert_eq!(body["scope"], "a b");
        assert!(registration_body("n", "u", None).get("scope").is_none());
    }

    #[test]
    fn registration_errors_are_named_from_the_standard_codes_only() {
        for code in REGISTRATION_ERRORS {
            let body = json!({"error": code, "error_description": "remote-text"});
            assert_eq!(registration_error_name(body.to_string().as_bytes()), code);
        }
        for body in [
            &br#"{"error":"remote-text"}"#[..],
            br#"{"error":1}"#,
            b"remote-text",
            b"",
        ] {
            assert_eq!(registration_error_name(body), "an unknown error");
        }
        assert!(retry_without_scope("invalid_client_metadata"));
        assert!(retry_without_scope("an unknown error"));
        assert!(!retry_without_scope("invalid_redirect_uri"));
    }

    #[test]
    fn metadata_document_urls() {
        assert!(
            check_metadata_document_url("https://conformance-test.local/client-metadata.json")
                .is_ok()
        );
        for bad in [
            "http://a/x",
            "https://a/",
            "https://a",
            "https://u@a/x",
            "https://a/x#f",
            "nope",
        ] {
            assert!(check_metadata_document_url(bad).is_err(), "{bad}");
        }
    }
}

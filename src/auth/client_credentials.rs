//! The client credentials grant for machine-to-machine use (no person, no
//! registration): the client authenticates with a secret (`client_secret_basic`
//! or `client_secret_post`, as the server lists) or with a signed JWT assertion
//! (`private_key_jwt`, RFC 7523 §2.2, ES256).
//!
//! The assertion is signed with `jsonwebtoken` (its `ring` backend, the crypto
//! provider rustls already uses here): `iss` = `sub` = the client id, `aud` = the
//! authorization server's issuer, `iat`, `exp` = `iat` + 60 s, and a random
//! `jti`. The key is a PKCS#8 PEM P-256 private key; it never appears in `Debug`
//! or an error.

use std::fmt;

use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;

use crate::error::{Error, Result};

/// How a machine client authenticates to the token endpoint.
#[derive(Clone)]
pub enum ClientCredentials {
    /// A client secret (Basic or post, as the server lists).
    Secret {
        /// The client id.
        client_id: String,
        /// The secret.
        client_secret: SecretString,
    },
    /// A JWT assertion signed with an ES256 key (`private_key_jwt`).
    PrivateKeyJwt {
        /// The client id.
        client_id: String,
        /// The PKCS#8 PEM P-256 private key.
        private_key_pem: SecretString,
    },
}

impl fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientCredentials::Secret { client_id, .. } => f
                .debug_struct("Secret")
                .field("client_id", client_id)
                .field("client_secret", &"[REDACTED]")
                .finish(),
            ClientCredentials::PrivateKeyJwt { client_id, .. } => f
                .debug_struct("PrivateKeyJwt")
                .field("client_id", client_id)
                .field("private_key_pem", &"[REDACTED]")
                .finish(),
        }
    }
}

impl ClientCredentials {
    /// The client id.
    pub fn client_id(&self) -> &str {
        match self {
            ClientCredentials::Secret { client_id, .. }
            | ClientCredentials::PrivateKeyJwt { client_id, .. } => client_id,
        }
    }

    /// Checks the key parses (for `private_key_jwt`), so a bad key is an
    /// `invalid_config` error at build time rather than at the first 401.
    pub fn validate(&self) -> Result<()> {
        if let ClientCredentials::PrivateKeyJwt {
            private_key_pem, ..
        } = self
        {
            key(private_key_pem)?;
        }
        Ok(())
    }
}

fn key(pem: &SecretString) -> Result<jsonwebtoken::EncodingKey> {
    jsonwebtoken::EncodingKey::from_ec_pem(pem.expose_secret().as_bytes()).map_err(|_| {
        Error::config("the client assertion key is not a PKCS#8 PEM P-256 private key")
    })
}

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    iat: u64,
    exp: u64,
    jti: String,
}

/// The `client_assertion_type` of RFC 7523.
pub const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// Signs a client assertion for `audience` (the issuer).
pub(crate) fn assertion(
    client_id: &str,
    pem: &SecretString,
    audience: &str,
) -> Result<SecretString> {
    let now = super::clock::now();
    let jti = oauth2::CsrfToken::new_random_len(16).secret().clone();
    let claims = Claims {
        iss: client_id,
        sub: client_id,
        aud: audience,
        iat: now,
        exp: now + 60,
        jti,
    };
    let header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    jsonwebtoken::encode(&header, &claims, &key(pem)?)
        .map(SecretString::from)
        .map_err(|_| Error::config("the client assertion could not be signed"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assertions_carry_the_rfc_7523_claims_and_verify() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let pem = SecretString::from(key.serialize_pem());
        let creds = ClientCredentials::PrivateKeyJwt {
            client_id: "client-1".into(),
            private_key_pem: pem.clone(),
        };
        creds.validate().unwrap();
        let jwt = assertion("client-1", &pem, "http://as").unwrap();
        let public =
            jsonwebtoken::DecodingKey::from_ec_pem(key.public_key_pem().as_bytes()).unwrap();
        let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
        validation.set_audience(&["http://as"]);
        validation.set_issuer(&["client-1"]);
        let data =
            jsonwebtoken::decode::<serde_json::Value>(jwt.expose_secret(), &public, &validation)
                .unwrap();
        let claims = data.claims;
        assert_eq!(claims["sub"], "client-1");
        assert_eq!(
            claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
            60
        );
        assert!(claims["jti"].as_str().unwrap().len() >= 20);
        let again = assertion("client-1", &pem, "http://as").unwrap();
        assert_ne!(
            again.expose_secret(),
            jwt.expose_secret(),
            "a fresh jti each time"
        );
    }

    #[test]
    fn a_bad_key_is_a_config_error_without_the_key() {
        let creds = ClientCredentials::PrivateKeyJwt {
            client_id: "c".into(),
            private_key_pem: SecretString::from("not-a-key-secret"),
        };
        let err = creds.validate().unwrap_err();
        assert_eq!(err.kind(), crate::error::ErrorKind::InvalidConfig);
        assert!(!err.message().contains("not-a-key-secret"));
        assert!(!format!("{creds:?}").contains("not-a-key-secret"));
    }
}

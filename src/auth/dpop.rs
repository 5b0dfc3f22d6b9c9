//! DPoP (RFC 9449; MCP SEP-1932): sender-constrained access tokens.
//!
//! When the authorization server's metadata lists `ES256` in
//! `dpop_signing_alg_values_supported` (and [`DpopMode`] allows it; the default
//! is [`DpopMode::Auto`]), the chain binds its tokens to a key:
//!
//! - **One ES256 (P-256) key per authorization server** (issuer), generated with
//!   `ring` (the provider rustls already uses). Its PKCS#8 form lives in a
//!   [`SecretString`] and is persisted in the token store beside the tokens
//!   (`StoredAuth::dpop_keys`, JSON field `dpopKeys`), so a stored DPoP-bound
//!   token and its refresh token keep working in another process. Only the
//!   public JWK (`kty`, `crv`, `x`, `y`, never `d`) leaves this module.
//! - **Proofs** (RFC 9449 §4.2): a JWT with header `typ: dpop+jwt`, `alg: ES256`,
//!   `jwk`, and claims `jti` (16 fresh random bytes), `htm`, `htu` (the URL
//!   without query and fragment), `iat`, `ath` (base64url SHA-256 of the access
//!   token, on resource requests) and `nonce` when the server gave one. One fresh
//!   proof per request, never reused. A proof is a credential: it never appears
//!   in `Debug`, an error, a diagnostic or a log.
//! - **Token requests** (code, refresh, client credentials) carry `DPoP: <proof>`.
//!   A `400 use_dpop_nonce` with a `DPoP-Nonce` header is retried once with a
//!   new proof carrying the nonce (the chain's HTTP hook sees the header; the
//!   `oauth2` crate would drop it). The answer's `token_type` may be `DPoP` only
//!   when a proof was sent; a `Bearer` answer to a proof is accepted (RFC 9449
//!   §5: the server may decline to bind) and then sent as `Bearer`, except under
//!   [`DpopMode::Required`], which refuses it.
//! - **Resource requests** carry `Authorization: DPoP <token>` and one fresh
//!   proof. A `401` whose `DPoP` challenge says `error="use_dpop_nonce"` with a
//!   `DPoP-Nonce` is retried once with a fresh proof carrying the nonce, without
//!   re-authorizing; the latest nonce any response of a server's origin carries
//!   is kept for the next proof to it.
//! - **Nonces** are at most [`MAX_NONCE_BYTES`] and made of the characters RFC
//!   9449 §8.1 allows; a longer or malformed one answering a `use_dpop_nonce`
//!   challenge is a `protocol_error`, elsewhere it is ignored (and reported to
//!   the diagnostics observer).
//!
//! The client does not check `cnf.jkt`: RFC 9449 does not ask it to, and access
//! tokens are opaque to the client (RFC 6749 §1.4); the resource server checks
//! the binding on every request.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::HeaderMap;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use sha2::Digest;
use url::Url;

use crate::error::{Error, ErrorKind, Result};

/// The longest `DPoP-Nonce` value kept: 1 KiB.
pub const MAX_NONCE_BYTES: usize = 1024;

/// The `DPoP` request header.
pub(crate) const DPOP: http::HeaderName = http::HeaderName::from_static("dpop");
/// The `DPoP-Nonce` response header.
pub(crate) const DPOP_NONCE: &str = "dpop-nonce";

/// When the chain uses DPoP. Set with [`OAuth::dpop`](crate::auth::OAuth::dpop).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DpopMode {
    /// DPoP when the authorization server advertises ES256 in
    /// `dpop_signing_alg_values_supported`, Bearer otherwise. The default.
    #[default]
    Auto,
    /// DPoP always: an authorization server that does not advertise ES256, or
    /// that answers a proof with a Bearer token, is refused (`unauthorized`).
    Required,
    /// Never DPoP: no key, no proof; a `DPoP` token type is refused.
    Off,
}

impl DpopMode {
    /// Whether a token request to an authorization server that advertises
    /// `algs` carries a proof; `Err` when the mode requires DPoP and ES256 is
    /// not advertised.
    pub(crate) fn use_for(self, algs: Option<&[String]>, server: &str) -> Result<bool> {
        let advertised = algs.is_some_and(|l| l.iter().any(|a| a == "ES256"));
        match self {
            DpopMode::Off => Ok(false),
            DpopMode::Auto => Ok(advertised),
            DpopMode::Required if advertised => Ok(true),
            DpopMode::Required => Err(Error::new(
                ErrorKind::Unauthorized,
                format!(
                    "server \"{server}\": the authorization server does not advertise DPoP with ES256, and the configuration requires DPoP (OAuth::dpop)"
                ),
            )),
        }
    }
}

/// One ES256 key. `Debug` shows the thumbprint only.
pub(crate) struct DpopKey {
    pair: EcdsaKeyPair,
    pkcs8: SecretString,
    /// The public JWK, members in lexicographic order (RFC 7638).
    jwk: serde_json::Value,
    thumbprint: String,
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopKey")
            .field("thumbprint", &self.thumbprint)
            .finish_non_exhaustive()
    }
}

fn key_error() -> Error {
    Error::new(
        ErrorKind::InvalidConfig,
        "a stored DPoP key is not a PKCS#8 P-256 private key",
    )
}

impl DpopKey {
    /// A new random key.
    pub(crate) fn generate() -> Result<Self> {
        let rng = SystemRandom::new();
        let document = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| Error::new(ErrorKind::InvalidConfig, "could not generate a DPoP key"))?;
        Self::from_pkcs8(&SecretString::from(
            URL_SAFE_NO_PAD.encode(document.as_ref()),
        ))
    }

    /// The key whose PKCS#8 DER, base64url without padding, is `pkcs8`.
    pub(crate) fn from_pkcs8(pkcs8: &SecretString) -> Result<Self> {
        let der = URL_SAFE_NO_PAD
            .decode(pkcs8.expose_secret())
            .map_err(|_| key_error())?;
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &SystemRandom::new())
                .map_err(|_| key_error())?;
        // Uncompressed point: 0x04 || x || y.
        let public = pair.public_key().as_ref();
        if public.len() != 65 || public[0] != 4 {
            return Err(key_error());
        }
        let x = URL_SAFE_NO_PAD.encode(&public[1..33]);
        let y = URL_SAFE_NO_PAD.encode(&public[33..]);
        let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
        let thumbprint = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(canonical.as_bytes()));
        Ok(DpopKey {
            pair,
            pkcs8: pkcs8.clone(),
            jwk: json!({"crv": "P-256", "kty": "EC", "x": x, "y": y}),
            thumbprint,
        })
    }

    /// The PKCS#8 DER, base64url: what the store keeps.
    pub(crate) fn pkcs8(&self) -> &SecretString {
        &self.pkcs8
    }

    /// The RFC 7638 SHA-256 thumbprint of the public key (base64url).
    #[cfg(test)]
    pub(crate) fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    /// A proof for `method` on `url` (query and fragment dropped), with `ath`
    /// for `access_token` and `nonce` when given.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &Url,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<SecretString> {
        let rng = SystemRandom::new();
        let mut jti = [0u8; 16];
        rng.fill(&mut jti)
            .map_err(|_| Error::new(ErrorKind::InvalidConfig, "no randomness for a DPoP proof"))?;
        let mut htu = url.clone();
        htu.set_query(None);
        htu.set_fragment(None);
        let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk});
        let mut claims = json!({
            "jti": URL_SAFE_NO_PAD.encode(jti),
            "htm": method,
            "htu": htu.as_str(),
            "iat": super::clock::now(),
        });
        if let Some(token) = access_token {
            claims["ath"] = json!(ath(token));
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = json!(nonce);
        }
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&rng, signing_input.as_bytes())
            .map_err(|_| Error::new(ErrorKind::InvalidConfig, "could not sign a DPoP proof"))?;
        Ok(SecretString::from(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        )))
    }

    /// A proof as a header value, marked sensitive.
    pub(crate) fn proof_header(
        &self,
        method: &str,
        url: &Url,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<http::HeaderValue> {
        let proof = self.proof(method, url, access_token, nonce)?;
        let mut value = http::HeaderValue::from_str(proof.expose_secret())
            .map_err(|_| Error::new(ErrorKind::InvalidConfig, "a DPoP proof is not a header"))?;
        value.set_sensitive(true);
        Ok(value)
    }
}

/// `ath`: base64url(SHA-256(access token)).
pub(crate) fn ath(access_token: &str) -> String {
    URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(access_token.as_bytes()))
}

/// Why a `DPoP-Nonce` header was not kept.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NonceError {
    /// Longer than [`MAX_NONCE_BYTES`] (the length is given).
    TooLong(usize),
    /// Empty, several header fields, or a character RFC 9449 §8.1 does not allow.
    Malformed,
    /// None, where a `use_dpop_nonce` challenge needs one.
    Missing,
}

impl NonceError {
    /// The error for a nonce answering a `use_dpop_nonce` challenge from `what`
    /// (crate text; the nonce itself never appears).
    pub(crate) fn into_error(self, server: &str, what: &str) -> Error {
        Error::new(
            ErrorKind::ProtocolError,
            format!(
                "server \"{server}\": the {what} asked for a DPoP nonce and sent {}",
                self.detail()
            ),
        )
    }

    /// The error for a nonce `what` sent without asking for it: ignored, and
    /// reported to the diagnostics observer.
    pub(crate) fn ignored(self, server: &str, what: &str) -> Error {
        Error::new(
            ErrorKind::ProtocolError,
            format!(
                "server \"{server}\": the {what} sent {}; ignored",
                self.detail()
            ),
        )
    }

    fn detail(&self) -> String {
        match self {
            NonceError::TooLong(n) => format!(
                "a DPoP-Nonce of {n} bytes, more than the {MAX_NONCE_BYTES} this client accepts (a fixed bound: auth::dpop::MAX_NONCE_BYTES)"
            ),
            NonceError::Malformed => "a malformed DPoP-Nonce".to_owned(),
            NonceError::Missing => "no DPoP-Nonce".to_owned(),
        }
    }
}

/// Parses one `DPoP-Nonce` value: `1*NQCHAR` (RFC 9449 §8.1: `%x21 / %x23-5B /
/// %x5D-7E`), at most [`MAX_NONCE_BYTES`].
pub fn parse_nonce(value: &[u8]) -> std::result::Result<String, NonceError> {
    if value.len() > MAX_NONCE_BYTES {
        return Err(NonceError::TooLong(value.len()));
    }
    let nqchar = |b: &u8| matches!(b, 0x21 | 0x23..=0x5b | 0x5d..=0x7e);
    if value.is_empty() || !value.iter().all(nqchar) {
        return Err(NonceError::Malformed);
    }
    // All ASCII, checked above.
    Ok(String::from_utf8_lossy(value).into_owned())
}

/// The `DPoP-Nonce` of a response: `Ok(None)` without one; several fields are
/// malformed.
pub fn nonce_from_headers(headers: &HeaderMap) -> std::result::Result<Option<String>, NonceError> {
    let mut values = headers.get_all(DPOP_NONCE).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(NonceError::Malformed);
    }
    parse_nonce(first.as_bytes()).map(Some)
}

/// The latest nonce per origin (`scheme://host:port`).
#[derive(Default)]
pub(crate) struct Nonces(Mutex<HashMap<String, String>>);

impl fmt::Debug for Nonces {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Nonces")
    }
}

/// The origin a nonce is kept for.
pub(crate) fn origin_key(url: &Url) -> String {
    url.origin().ascii_serialization()
}

impl Nonces {
    /// The nonce held for `url`'s origin.
    pub(crate) fn get(&self, url: &Url) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&origin_key(url))
            .cloned()
    }

    /// Keeps `nonce` for `url`'s origin (the latest wins).
    pub(crate) fn set(&self, url: &Url, nonce: String) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(origin_key(url), nonce);
    }
}

/// What the token endpoint hook needs to prove possession: the key, the
/// authorization server nonces, and whether a Bearer answer is refused.
#[derive(Clone, Debug)]
pub(crate) struct DpopSigner {
    pub(crate) key: Arc<DpopKey>,
    pub(crate) nonces: Arc<Nonces>,
    pub(crate) server: Arc<str>,
    pub(crate) required: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    fn decode(part: &str) -> serde_json::Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    #[test]
    fn a_proof_verifies_with_its_jwk_and_carries_the_claims() {
        let key = DpopKey::generate().unwrap();
        let url = Url::parse("https://mcp.example:8443/mcp?x=1#frag").unwrap();
        let proof = key
            .proof("POST", &url, Some("the-token"), Some("n-1"))
            .unwrap();
        let parts: Vec<&str> = proof.expose_secret().split('.').collect();
        assert_eq!(parts.len(), 3);
        let header = decode(parts[0]);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none());
        let claims = decode(parts[1]);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example:8443/mcp");
        assert_eq!(claims["ath"], ath("the-token"));
        assert_eq!(claims["nonce"], "n-1");
        let mut point = vec![4u8];
        for c in ["x", "y"] {
            point.extend(
                URL_SAFE_NO_PAD
                    .decode(header["jwk"][c].as_str().unwrap())
                    .unwrap(),
            );
        }
        let sig = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
            .unwrap();
        // Fresh jti each time; the key round-trips through its PKCS#8 form.
        let again = key.proof("POST", &url, None, None).unwrap();
        assert_ne!(
            decode(again.expose_secret().split('.').nth(1).unwrap())["jti"],
            claims["jti"]
        );
        assert!(
            decode(again.expose_secret().split('.').nth(1).unwrap())
                .get("ath")
                .is_none()
        );
        let back = DpopKey::from_pkcs8(key.pkcs8()).unwrap();
        assert_eq!(back.thumbprint(), key.thumbprint());
        assert!(!format!("{key:?}").contains(key.pkcs8().expose_secret()));
        assert_eq!(
            DpopKey::from_pkcs8(&SecretString::from("bm90IGEga2V5"))
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidConfig
        );
    }

    #[test]
    fn the_thumbprint_is_rfc_7638() {
        // RFC 7638 §3.1's example is RSA; check the EC form against a hand-built
        // canonical JSON of the same key instead.
        let key = DpopKey::generate().unwrap();
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":{},"y":{}}}"#,
            key.jwk["x"], key.jwk["y"]
        );
        assert_eq!(
            key.thumbprint(),
            URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(canonical.as_bytes()))
        );
    }

    #[test]
    fn nonces_are_bounded_and_checked() {
        assert_eq!(parse_nonce(b"abc-DEF_1.2~").unwrap(), "abc-DEF_1.2~");
        let max = vec![b'n'; MAX_NONCE_BYTES];
        assert!(parse_nonce(&max).is_ok());
        let over = vec![b'n'; MAX_NONCE_BYTES + 1];
        assert_eq!(
            parse_nonce(&over),
            Err(NonceError::TooLong(MAX_NONCE_BYTES + 1))
        );
        for bad in [&b""[..], b"a b", b"a\"b", b"a\\b", b"\x7f", "é".as_bytes()] {
            assert_eq!(parse_nonce(bad), Err(NonceError::Malformed), "{bad:?}");
        }
        let mut headers = HeaderMap::new();
        assert_eq!(nonce_from_headers(&headers), Ok(None));
        headers.append(DPOP_NONCE, "one".parse().unwrap());
        assert_eq!(nonce_from_headers(&headers), Ok(Some("one".into())));
        headers.append(DPOP_NONCE, "two".parse().unwrap());
        assert_eq!(nonce_from_headers(&headers), Err(NonceError::Malformed));
        let e = NonceError::TooLong(2000).into_error("srv", "token endpoint");
        assert_eq!(e.kind(), ErrorKind::ProtocolError);
        assert!(e.message().contains("2000 bytes") && e.message().contains("1024"));
    }

    #[test]
    fn modes() {
        let es = vec!["RS256".to_owned(), "ES256".to_owned()];
        let rs = vec!["RS256".to_owned()];
        assert!(DpopMode::Auto.use_for(Some(&es), "s").unwrap());
        assert!(!DpopMode::Auto.use_for(Some(&rs), "s").unwrap());
        assert!(!DpopMode::Auto.use_for(None, "s").unwrap());
        assert!(!DpopMode::Off.use_for(Some(&es), "s").unwrap());
        assert!(DpopMode::Required.use_for(Some(&es), "s").unwrap());
        let e = DpopMode::Required.use_for(None, "s").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unauthorized);
        assert!(e.message().contains("OAuth::dpop"));
    }
}

//! What a server says about itself at connect time: its self-reported identity,
//! its instructions, and (2026-07-28) the cache hints of its results.
//!
//! All of it is server-authored and untrusted: `serverInfo` is self-reported (the
//! specification says not to base behaviour or security decisions on it), and
//! `instructions` is text meant for a model, so a prompt-injection vector. Nothing
//! in this crate depends on either; both are bounded before they are kept.

use std::time::Duration;

use serde_json::Value;

/// The longest `serverInfo.name` / `.version` / `.title` kept, in UTF-8 bytes
/// (longer ones are dropped, not cut).
pub const MAX_SERVER_INFO_BYTES: usize = 256;

/// The longest `instructions` kept, in UTF-8 bytes (longer ones are dropped).
pub const MAX_INSTRUCTIONS_BYTES: usize = 65_536;

/// The longest cache lifetime honoured: a larger `ttlMs` is capped to this, so a
/// hostile server cannot pin stale definitions for long.
pub const MAX_CACHE_TTL: Duration = Duration::from_secs(3600);

/// A server's self-reported identity (`serverInfo`; in 2026-07-28 it travels in
/// the result's `_meta["io.modelcontextprotocol/serverInfo"]`). Untrusted text.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerInfo {
    /// `name`.
    pub name: String,
    /// `version`.
    pub version: String,
    /// `title`, when given.
    pub title: Option<String>,
}

impl ServerInfo {
    /// Reads `{name, version, title?}`: `None` unless `name` and `version` are
    /// strings of at most [`MAX_SERVER_INFO_BYTES`].
    pub(crate) fn from_value(value: Option<&Value>) -> Option<ServerInfo> {
        let object = value?.as_object()?;
        let text = |key: &str| {
            object
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| s.len() <= MAX_SERVER_INFO_BYTES)
                .map(str::to_owned)
        };
        Some(ServerInfo {
            name: text("name")?,
            version: text("version")?,
            title: text("title"),
        })
    }
}

/// Who may share a cached result (`cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CacheScope {
    /// `public`: the same for every authorization context.
    Public,
    /// `private`: for this authorization context only. Also what an absent or
    /// unknown `cacheScope` is read as (the cautious reading, as the TypeScript
    /// and Python SDKs do).
    Private,
}

/// The cache hints of a 2026-07-28 result (`ttlMs`, `cacheScope`), read
/// saturating: absent or negative `ttlMs` is zero, a fraction is floored, a
/// huge value is capped at [`MAX_CACHE_TTL`]. The catalog itself stays the
/// frozen snapshot fetched once per connection whatever the hints say; they are
/// exposed for hosts that cache across connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHint {
    /// How long the result stays fresh after it was received.
    pub ttl: Duration,
    /// Who may share it.
    pub scope: CacheScope,
}

impl CacheHint {
    /// The hints of a result object.
    pub(crate) fn from_result(result: &Value) -> CacheHint {
        let ttl = match result.get("ttlMs").and_then(Value::as_number) {
            Some(n) => {
                let ms = if let Some(ms) = n.as_u64() {
                    ms
                } else {
                    // Negative → 0, fraction → floor; NaN cannot be JSON.
                    n.as_f64()
                        .map_or(0, |f| if f <= 0.0 { 0 } else { f as u64 })
                };
                Duration::from_millis(ms).min(MAX_CACHE_TTL)
            }
            None => Duration::ZERO,
        };
        let scope = match result.get("cacheScope").and_then(Value::as_str) {
            Some("public") => CacheScope::Public,
            _ => CacheScope::Private,
        };
        CacheHint { ttl, scope }
    }

    /// The stricter of two hints (the shorter lifetime, `private` over `public`):
    /// the hint of a catalog walked over several pages.
    pub(crate) fn stricter(self, other: CacheHint) -> CacheHint {
        CacheHint {
            ttl: self.ttl.min(other.ttl),
            scope: if self.scope == CacheScope::Public && other.scope == CacheScope::Public {
                CacheScope::Public
            } else {
                CacheScope::Private
            },
        }
    }
}

/// Instructions of at most [`MAX_INSTRUCTIONS_BYTES`].
pub(crate) fn instructions(result: &Value) -> Option<String> {
    result
        .get("instructions")
        .and_then(Value::as_str)
        .filter(|s| s.len() <= MAX_INSTRUCTIONS_BYTES)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ttl_is_read_saturating() {
        let ttl = |v: Value| CacheHint::from_result(&json!({ "ttlMs": v })).ttl;
        assert_eq!(ttl(json!(1500)), Duration::from_millis(1500));
        assert_eq!(ttl(json!(-5)), Duration::ZERO);
        assert_eq!(ttl(json!(2.9)), Duration::from_millis(2));
        assert_eq!(ttl(json!(-0.5)), Duration::ZERO);
        assert_eq!(ttl(json!(1e300)), MAX_CACHE_TTL);
        assert_eq!(ttl(json!(u64::MAX)), MAX_CACHE_TTL);
        assert_eq!(ttl(json!("60")), Duration::ZERO);
        assert_eq!(CacheHint::from_result(&json!({})).ttl, Duration::ZERO);
    }

    #[test]
    fn scope_defaults_to_private() {
        let scope = |v: Value| CacheHint::from_result(&json!({ "cacheScope": v })).scope;
        assert_eq!(scope(json!("public")), CacheScope::Public);
        assert_eq!(scope(json!("private")), CacheScope::Private);
        assert_eq!(scope(json!("shared")), CacheScope::Private);
        assert_eq!(scope(json!(null)), CacheScope::Private);
        let public = CacheHint {
            ttl: Duration::from_secs(9),
            scope: CacheScope::Public,
        };
        let private = CacheHint {
            ttl: Duration::from_secs(3),
            scope: CacheScope::Private,
        };
        assert_eq!(
            public.stricter(private),
            CacheHint {
                ttl: Duration::from_secs(3),
                scope: CacheScope::Private
            }
        );
    }

    #[test]
    fn server_info_is_bounded() {
        assert_eq!(
            ServerInfo::from_value(Some(&json!({"name": "s", "version": "1"}))),
            Some(ServerInfo {
                name: "s".into(),
                version: "1".into(),
                title: None
            })
        );
        let long = "x".repeat(MAX_SERVER_INFO_BYTES + 1);
        assert_eq!(
            ServerInfo::from_value(Some(&json!({"name": long, "version": "1"}))),
            None
        );
        assert_eq!(ServerInfo::from_value(Some(&json!({"name": "s"}))), None);
    }
}

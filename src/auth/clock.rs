//! The chain's clock: seconds since the Unix epoch, for token lifetimes and the
//! `iat` of the JWTs it signs (DPoP proofs, client assertions). Its own module so
//! that those who read it import nothing else.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch (0 on a clock set before it).
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

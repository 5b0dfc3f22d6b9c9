//! The backoff as a pure function: ceilings, both jitters, bounds, and the
//! policy's validation.

use std::time::Duration;

use super::{Jitter, MAX_POLICY_DELAY, ReconnectPolicy, Rng};
use crate::error::ErrorKind;

fn policy(jitter: Jitter) -> ReconnectPolicy {
    ReconnectPolicy {
        jitter,
        ..ReconnectPolicy::default()
    }
}

#[test]
fn ceilings_grow_by_the_multiplier_up_to_the_cap() {
    let policy = ReconnectPolicy::default();
    let ceilings: Vec<u64> = (1..=10).map(|n| policy.ceiling(n).as_secs()).collect();
    assert_eq!(ceilings, [1, 2, 4, 8, 16, 32, 60, 60, 60, 60]);
    // Far past the point where the product overflows to infinity: the cap.
    assert_eq!(policy.ceiling(u32::MAX), Duration::from_secs(60));
    let flat = ReconnectPolicy {
        multiplier: 1.0,
        ..ReconnectPolicy::default()
    };
    assert_eq!(flat.ceiling(7), Duration::from_secs(1));
}

#[test]
fn full_jitter_spans_zero_to_the_ceiling() {
    let policy = policy(Jitter::Full);
    assert_eq!(policy.delay(3, 0), Duration::ZERO);
    assert_eq!(policy.delay(3, u64::MAX), Duration::from_secs(4));
    assert_eq!(policy.delay(3, 1 << 63), Duration::from_secs(2));
}

#[test]
fn equal_jitter_keeps_half_the_ceiling() {
    let policy = policy(Jitter::Equal);
    assert_eq!(policy.delay(3, 0), Duration::from_secs(2));
    assert_eq!(policy.delay(3, u64::MAX), Duration::from_secs(4));
    assert_eq!(policy.delay(1, 1 << 63), Duration::from_millis(750));
}

#[test]
fn seeded_delays_are_bounded_and_spread() {
    for jitter in [Jitter::Full, Jitter::Equal] {
        let policy = policy(jitter);
        let mut rng = Rng(42);
        for attempt in 1..=12 {
            let ceiling = policy.ceiling(attempt);
            let floor = match jitter {
                Jitter::Full => Duration::ZERO,
                _ => ceiling / 2,
            };
            let draws: Vec<Duration> = (0..64).map(|_| policy.delay(attempt, rng.next())).collect();
            assert!(
                draws.iter().all(|d| *d >= floor && *d <= ceiling),
                "attempt {attempt}: {draws:?} outside {floor:?}..={ceiling:?}"
            );
            let mut distinct = draws.clone();
            distinct.sort();
            distinct.dedup();
            assert!(
                distinct.len() > 32,
                "attempt {attempt}: not jittered: {draws:?}"
            );
        }
    }
    // The same seed draws the same delays: the function is pure.
    let policy = policy(Jitter::Full);
    let (mut a, mut b) = (Rng(7), Rng(7));
    for attempt in 1..=5 {
        assert_eq!(
            policy.delay(attempt, a.next()),
            policy.delay(attempt, b.next())
        );
    }
}

#[test]
fn the_longest_policy_delay_does_not_overflow() {
    let policy = ReconnectPolicy {
        initial_delay: MAX_POLICY_DELAY,
        max_delay: MAX_POLICY_DELAY,
        ..ReconnectPolicy::default()
    };
    policy.validate().unwrap();
    assert_eq!(policy.delay(u32::MAX, u64::MAX), MAX_POLICY_DELAY);
}

#[test]
fn nonsense_is_invalid_config_naming_the_option() {
    let cases: Vec<(ReconnectPolicy, &str)> = vec![
        (
            ReconnectPolicy {
                initial_delay: Duration::ZERO,
                ..ReconnectPolicy::default()
            },
            "initial_delay",
        ),
        (
            ReconnectPolicy {
                max_delay: Duration::from_millis(500),
                ..ReconnectPolicy::default()
            },
            "max_delay",
        ),
        (
            ReconnectPolicy {
                max_delay: MAX_POLICY_DELAY + Duration::from_secs(1),
                ..ReconnectPolicy::default()
            },
            "max_delay",
        ),
        (
            ReconnectPolicy {
                multiplier: 0.5,
                ..ReconnectPolicy::default()
            },
            "multiplier",
        ),
        (
            ReconnectPolicy {
                multiplier: f64::NAN,
                ..ReconnectPolicy::default()
            },
            "multiplier",
        ),
        (
            ReconnectPolicy {
                multiplier: f64::INFINITY,
                ..ReconnectPolicy::default()
            },
            "multiplier",
        ),
        (
            ReconnectPolicy {
                max_attempts: 0,
                ..ReconnectPolicy::default()
            },
            "max_attempts",
        ),
        (
            ReconnectPolicy {
                give_up_after: Some(Duration::ZERO),
                ..ReconnectPolicy::default()
            },
            "give_up_after",
        ),
    ];
    for (policy, option) in cases {
        let error = policy.validate().unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidConfig, "{policy:?}");
        assert!(error.message().contains(option), "{option}: {error}");
    }
    ReconnectPolicy::default().validate().unwrap();
}

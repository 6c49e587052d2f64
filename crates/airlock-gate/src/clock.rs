//! Time, injected so that deadlines and expiry are testable without sleeping.

use jiff::Timestamp;
use std::sync::Mutex;

/// Where the gate reads the time from.
pub trait Clock: Send + Sync + 'static {
    /// Now, at millisecond precision (what the store keeps).
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        truncate_to_millis(Timestamp::now())
    }
}

/// A clock that only moves when told to (tests, simulations).
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<Timestamp>,
}

impl ManualClock {
    pub fn new(start: Timestamp) -> ManualClock {
        ManualClock {
            now: Mutex::new(truncate_to_millis(start)),
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: std::time::Duration) {
        if let Ok(mut now) = self.now.lock() {
            let millis = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
            *now = Timestamp::from_millisecond(now.as_millisecond().saturating_add(millis))
                .unwrap_or(*now);
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        match self.now.lock() {
            Ok(now) => *now,
            Err(poisoned) => *poisoned.into_inner(),
        }
    }
}

/// Drops sub-millisecond precision, so a timestamp survives a store round trip unchanged.
pub fn truncate_to_millis(at: Timestamp) -> Timestamp {
    Timestamp::from_millisecond(at.as_millisecond()).unwrap_or(at)
}

/// `at + seconds`, or `None` when the sum is past the latest time the store can keep
/// (what [`latest`] is). For durations a client or a policy gives: those are refused.
pub fn checked_add_seconds(at: Timestamp, seconds: u64) -> Option<Timestamp> {
    let millis = i64::try_from(seconds).ok()?.checked_mul(1000)?;
    // INVARIANT: a timestamp made by `from_millisecond` is one the store reads back
    // (it stores `as_millisecond`, reads with `from_millisecond`).
    Timestamp::from_millisecond(at.as_millisecond().checked_add(millis)?).ok()
}

/// `at + seconds`, saturating at [`latest`]. For the gate's own short spans (leases,
/// claims), which never get near it.
pub fn add_seconds(at: Timestamp, seconds: u64) -> Timestamp {
    checked_add_seconds(at, seconds).unwrap_or_else(latest)
}

/// The latest time the store can keep and read back: the last whole second jiff knows
/// (9999-12-30T22:00:00Z). `Timestamp::MAX` itself is not one: its millisecond is past
/// what `Timestamp::from_millisecond` takes, so a row holding it could never be read.
pub fn latest() -> Timestamp {
    Timestamp::from_second(Timestamp::MAX.as_second()).unwrap_or(Timestamp::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// What the store does: keep `as_millisecond`, read back with `from_millisecond`.
    fn stored(at: Timestamp) -> Option<Timestamp> {
        Timestamp::from_millisecond(at.as_millisecond()).ok()
    }

    #[test]
    fn sums_are_times_the_store_reads_back() {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let end = latest();
        assert_eq!(stored(end), Some(end));
        assert_eq!(stored(add_seconds(now, u64::MAX)), Some(end));
        assert_eq!(stored(add_seconds(end, 1)), Some(end));
        assert_eq!(checked_add_seconds(now, u64::MAX), None);
        assert_eq!(checked_add_seconds(end, 1), None);
        let far = end.as_second() - now.as_second();
        assert_eq!(
            checked_add_seconds(now, far.unsigned_abs()).and_then(stored),
            Some(end)
        );
        assert_eq!(checked_add_seconds(now, far.unsigned_abs() + 1), None);
        assert_eq!(
            checked_add_seconds(now, 60),
            Some(Timestamp::from_second(1_800_000_060).unwrap())
        );
        // The old saturation point, which the store could not read back.
        assert_eq!(stored(Timestamp::MAX), None);
    }
}

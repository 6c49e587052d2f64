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

/// `at + seconds`, saturating at the end of representable time.
pub fn add_seconds(at: Timestamp, seconds: u64) -> Timestamp {
    let millis = i64::try_from(seconds)
        .unwrap_or(i64::MAX / 1000)
        .saturating_mul(1000);
    Timestamp::from_millisecond(at.as_millisecond().saturating_add(millis))
        .unwrap_or(Timestamp::MAX)
}

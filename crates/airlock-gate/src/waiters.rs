//! Long-poll wake-ups: callers waiting on a call sleep on a per-call `Notify` that the
//! decision, expiry or cancellation of that call wakes. No polling loop on the hot path.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

#[derive(Default)]
pub struct Waiters {
    by_call: Mutex<HashMap<String, Arc<Notify>>>,
    waiting: AtomicUsize,
}

/// A registration; dropping it forgets the call when nobody else waits on it.
pub struct Registration<'a> {
    waiters: &'a Waiters,
    call_id: String,
    pub notify: Arc<Notify>,
}

impl Waiters {
    /// Registers interest in a call. Create the `notified()` future from the returned
    /// notify and `enable()` it *before* reading the call's status, so that a decision
    /// between the read and the wait is not missed.
    pub fn register(&self, call_id: &str) -> Registration<'_> {
        let notify = match self.by_call.lock() {
            Ok(mut map) => map.entry(call_id.to_owned()).or_default().clone(),
            Err(_) => Arc::new(Notify::new()),
        };
        self.waiting.fetch_add(1, Ordering::Relaxed);
        Registration {
            waiters: self,
            call_id: call_id.to_owned(),
            notify,
        }
    }

    /// Wakes every waiter of a call.
    pub fn wake(&self, call_id: &str) {
        let notify = match self.by_call.lock() {
            Ok(mut map) => map.remove(call_id),
            Err(_) => None,
        };
        if let Some(notify) = notify {
            notify.notify_waiters();
        }
    }

    /// Wakes every waiter (after a reconnect, when notifications may have been missed):
    /// each re-reads its call and waits again if it is still pending.
    pub fn wake_all(&self) {
        let all: Vec<Arc<Notify>> = match self.by_call.lock() {
            Ok(mut map) => map.drain().map(|(_, notify)| notify).collect(),
            Err(_) => Vec::new(),
        };
        for notify in all {
            notify.notify_waiters();
        }
    }

    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.waiters.waiting.fetch_sub(1, Ordering::Relaxed);
        if let Ok(mut map) = self.waiters.by_call.lock() {
            // Two holders left means the map and this registration: nobody else waits.
            let unused = map.get(&self.call_id).is_some_and(|notify| {
                Arc::ptr_eq(notify, &self.notify) && Arc::strong_count(notify) == 2
            });
            if unused {
                map.remove(&self.call_id);
            }
        }
    }
}

//! The runs this node drives right now.
//!
//! A lease names the node, not the leg, so the store fences one node from another but
//! not two legs of one node. A leg whose lease ran out while it waited (on a model slower
//! than [`LEASE`](crate::LEASE), say) is still alive; if its own node's sweeper claimed the
//! run, a second leg would drive it beside the first and both writes would pass the
//! lease check. So a node never takes over a run one of its legs is on; other nodes may,
//! and then the old leg's next write finds the lease gone and stops. (A run that leg has
//! just suspended may still be claimed: the leg has nothing left to write.)

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// How many live legs of this node are on each run (normally zero or one; two only for
/// the moment between a leg's last write and its task ending, when a claim that found
/// the run suspended starts the next).
#[derive(Default)]
pub(crate) struct Driving {
    legs: Mutex<HashMap<String, usize>>,
}

impl Driving {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, usize>> {
        // Only counts are kept under the lock, and no code panics while holding it.
        self.legs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a leg on `run_id` until the returned guard drops.
    pub(crate) fn enter(self: &std::sync::Arc<Self>, run_id: &str) -> OnRun {
        *self.lock().entry(run_id.to_owned()).or_insert(0) += 1;
        OnRun {
            driving: self.clone(),
            run_id: run_id.to_owned(),
        }
    }

    /// Whether a leg of this node is on `run_id`.
    pub(crate) fn is_driving(&self, run_id: &str) -> bool {
        self.lock().contains_key(run_id)
    }
}

/// A live leg's mark on its run; dropped when the leg's task ends, however it ends.
pub(crate) struct OnRun {
    driving: std::sync::Arc<Driving>,
    run_id: String,
}

impl Drop for OnRun {
    fn drop(&mut self) {
        let mut legs = self.driving.lock();
        if let Some(count) = legs.get_mut(&self.run_id) {
            *count -= 1;
            if *count == 0 {
                legs.remove(&self.run_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Driving;
    use std::sync::Arc;

    #[test]
    fn a_run_is_driven_until_its_last_leg_ends() {
        let driving = Arc::new(Driving::default());
        assert!(!driving.is_driving("run_a"));
        let first = driving.enter("run_a");
        let second = driving.enter("run_a");
        assert!(driving.is_driving("run_a"));
        assert!(!driving.is_driving("run_b"));
        drop(first);
        assert!(driving.is_driving("run_a"), "one leg is still on it");
        drop(second);
        assert!(!driving.is_driving("run_a"));
    }
}

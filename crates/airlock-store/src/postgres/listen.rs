//! Changes committed by any node, as [`Change`]s: a task holding a `LISTEN
//! airlock_events` connection, feeding a bounded channel.
//!
//! The task never gives up while someone holds the receiver: a lost connection is
//! reported at once with [`Change::lost`], re-established here with a new listener and a
//! backoff, and followed by one [`Change::resync`] only once the new connection listens,
//! since notifications sent meanwhile are lost (a cache of the database stays unknown
//! from `lost` to `resync`; see the gate's `cache.rs`). When
//! the receiver falls behind and the channel is full, changes are dropped and a resync is
//! sent as soon as there is room again. The task ends when the receiver is dropped or the
//! store's pool is closed.

use super::dialect::CHANNEL;
use crate::{Change, StoreResult};
use serde::Deserialize;
use sqlx::postgres::{PgListener, PgNotification};
use sqlx::PgPool;
use std::time::Duration;
use tokio::sync::mpsc;

/// How many changes may wait for the receiver.
const CAPACITY: usize = 4096;

/// The longest wait between two attempts to listen again.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A notification's payload, as `audit::append_effects` writes it.
#[derive(Deserialize)]
struct Payload {
    workspace: String,
    id: u64,
    kind: String,
    call_id: Option<String>,
}

/// Starts listening on `pool`'s database; the receiver of every change from now on.
pub(crate) async fn listen(pool: &PgPool) -> StoreResult<mpsc::Receiver<Change>> {
    let listener = connect(pool).await?;
    let (sender, receiver) = mpsc::channel(CAPACITY);
    tokio::spawn(forward(pool.clone(), listener, sender));
    Ok(receiver)
}

async fn connect(pool: &PgPool) -> StoreResult<PgListener> {
    let mut listener = PgListener::connect_with(pool)
        .await
        .map_err(crate::codec::database)?;
    listener
        .listen(CHANNEL)
        .await
        .map_err(crate::codec::database)?;
    Ok(listener)
}

/// The channel's sending side, remembering whether something was dropped.
struct Outbox {
    sender: mpsc::Sender<Change>,
    missed: bool,
}

impl Outbox {
    /// Sends `change`, or drops it (and owes a resync) when the receiver is behind.
    /// `false` once the receiver is gone.
    fn send(&mut self, change: Change) -> bool {
        if self.missed {
            match self.sender.try_send(Change::resync()) {
                Ok(()) => self.missed = false,
                Err(mpsc::error::TrySendError::Full(_)) => return true,
                Err(mpsc::error::TrySendError::Closed(_)) => return false,
            }
        }
        match self.sender.try_send(change) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.missed = true;
                true
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }
}

async fn forward(pool: PgPool, mut listener: PgListener, sender: mpsc::Sender<Change>) {
    let mut outbox = Outbox {
        sender,
        missed: false,
    };
    loop {
        let received = tokio::select! {
            () = outbox.sender.closed() => return,
            // A resync is owed: send it as soon as the receiver makes room, not only when
            // the next notification happens to arrive.
            permit = outbox.sender.reserve(), if outbox.missed => {
                match permit {
                    Ok(permit) => {
                        permit.send(Change::resync());
                        outbox.missed = false;
                        continue;
                    }
                    Err(_) => return,
                }
            }
            received = listener.try_recv() => received,
        };
        let delivered = match received {
            Ok(Some(notification)) => match change(&notification) {
                Some(change) => outbox.send(change),
                None => true,
            },
            Err(sqlx::Error::PoolClosed) => return,
            // `Ok(None)`: the connection was lost (`PgListener` would listen again on its
            // next receive, but without telling when); `Err`: receiving failed. Either
            // way: say so now, listen again on a new connection, and only then resync,
            // so that nothing sent after the resync can be missed.
            lost => {
                if let Err(error) = lost {
                    tracing::warn!(%error, "listening for other nodes' changes failed; reconnecting");
                }
                // Waits for room rather than being dropped: until the receiver hears
                // it, it trusts what it heard before.
                if outbox.sender.send(Change::lost()).await.is_err() {
                    return;
                }
                let Some(again) = reconnect(&pool, &outbox.sender).await else {
                    return;
                };
                listener = again;
                outbox.send(Change::resync())
            }
        };
        if !delivered {
            return;
        }
    }
}

/// A new listener, retried with a growing backoff; `None` when no one wants it anymore.
async fn reconnect(pool: &PgPool, sender: &mpsc::Sender<Change>) -> Option<PgListener> {
    let mut backoff = Duration::from_millis(50);
    loop {
        if sender.is_closed() || pool.is_closed() {
            return None;
        }
        match connect(pool).await {
            Ok(listener) => return Some(listener),
            Err(error) => tracing::debug!(%error, "listening again failed"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// The change a notification announces; `None` (and a warning) for a payload that is not
/// ours.
fn change(notification: &PgNotification) -> Option<Change> {
    match serde_json::from_str::<Payload>(notification.payload()) {
        Ok(payload) => Some(Change {
            workspace: payload.workspace,
            kind: payload.kind,
            call_id: payload.call_id,
            event_id: payload.id,
        }),
        Err(error) => {
            tracing::warn!(%error, "ignoring a notification that is not a change");
            None
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn change(id: u64) -> Change {
        Change {
            workspace: "ws".to_owned(),
            kind: "approval.approved".to_owned(),
            call_id: Some(format!("call_{id}")),
            event_id: id,
        }
    }

    #[test]
    fn a_full_channel_drops_changes_and_owes_a_resync() {
        let (sender, mut receiver) = mpsc::channel(2);
        let mut outbox = Outbox {
            sender,
            missed: false,
        };
        assert!(outbox.send(change(1)));
        assert!(outbox.send(change(2)));
        assert!(outbox.send(change(3)), "dropped, not closed");
        assert!(outbox.missed);
        assert_eq!(receiver.try_recv().unwrap(), change(1));
        assert!(outbox.send(change(4)));
        assert_eq!(receiver.try_recv().unwrap(), change(2));
        assert_eq!(receiver.try_recv().unwrap(), Change::resync());
        // 4 found the channel full again behind the resync: still owed.
        assert!(outbox.missed);
        drop(receiver);
        assert!(!outbox.send(change(5)), "the receiver is gone");
    }
}

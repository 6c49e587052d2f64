//! How a list of store operations becomes a trait and its implementation, so that each
//! operation's signature is written once.
//!
//! Each of the store's traits ([`crate::Store`], [`crate::NotifyStore`],
//! [`crate::IntegrationStore`]) is a list macro (`store_operations!`, …) beside its
//! types. An entry is the operation's documentation and signature, then which function of
//! `src/sql/` performs it and how it runs:
//!
//! ```text
//! /// The agent with this id, if any.
//! async fn get_agent(&self, workspace: &str, id: &str) -> StoreResult<Option<Agent>>
//!     = read identity::find_agent(workspace, AgentKey::Id, id);
//! ```
//!
//! - `read`: on the backend's read pool, `identity::find_agent(self.reads(), …)`;
//! - `write`: as one write transaction, `identity::…(conn, …)` inside the backend's
//!   `write_transaction!` (SQLite's writer and its group commit, a pooled PostgreSQL
//!   transaction);
//! - `backend`: a function given the backend itself, for an operation that chooses its
//!   own way (the batched call records, the replay of a keyed redeem).
//!
//! The list is handed to `declare!` once, in the trait's file, which makes the trait of
//! the signatures (with the list's documentation), and to `implement!` in each backend
//! (`sql/store.rs`, `sql/notify.rs`, `sql/integrations.rs`, compiled once per database),
//! which makes the implementation. What the list does not say (a method that is not an
//! operation, a default body) is given beside the trait's head, as written.
//!
//! A macro rather than three hand-written copies because the copies were only ever the
//! same signature forwarded: the trait declared it, `sql/store.rs` forwarded it to the
//! module function, and the module function declared it again.

/// Makes the trait `$head` of an operation list (see the module documentation), with
/// `$extra` (items written as they are) before the operations.
macro_rules! declare {
    (
        [$($head:tt)*] { $($extra:tt)* }
        $(
            $(#[$attr:meta])*
            async fn $name:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty
                = $how:ident $($function:ident)::+ ($($call:expr),* $(,)?);
        )*
    ) => {
        #[async_trait::async_trait]
        $($head)* {
            $($extra)*
            $(
                $(#[$attr])*
                async fn $name(&self $(, $arg: $ty)*) -> $ret;
            )*
        }
    };
}

/// Implements an operation list for the backend named in `$head` (`impl Trait for
/// Backend`), with `$extra` before the operations; each operation calls its function as
/// its entry says.
macro_rules! implement {
    (
        [$($head:tt)*] { $($extra:tt)* }
        $(
            $(#[$attr:meta])*
            async fn $name:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty
                = $how:ident $($function:ident)::+ ($($call:expr),* $(,)?);
        )*
    ) => {
        #[async_trait::async_trait]
        $($head)* {
            $($extra)*
            $(
                $(#[$attr])*
                async fn $name(&self $(, $arg: $ty)*) -> $ret {
                    implement!(@$how self, $($function)::+ ($($call),*))
                }
            )*
        }
    };
    (@read $store:tt, $($function:ident)::+ ($($call:expr),*)) => {
        $($function)::+ ($store.reads(), $($call),*).await
    };
    (@write $store:tt, $($function:ident)::+ ($($call:expr),*)) => {
        write_transaction!($store, |conn| $($function)::+ (conn, $($call),*))
    };
    (@backend $store:tt, $($function:ident)::+ ($($call:expr),*)) => {
        $($function)::+ ($store, $($call),*).await
    };
}

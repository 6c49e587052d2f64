//! The audit chain's head as the store keeps it apart from the records (table
//! `audit_heads`): on PostgreSQL the row each append locks and moves; on SQLite a row a
//! trigger moves with each record appended. Verification compares the chain it read with
//! it, so that records deleted from the chain's end (a shorter chain that verifies on its
//! own) are found (G8).
//!
//! [`HeadStore`] is a supertrait of [`crate::Store`], so every backend implements it (in
//! `sql/heads.rs`, from the list `head_operations!` below).
//!
//! INVARIANT: the head only ever moves forward, in the transaction of the append; nothing
//! but an append writes it. It guards against an edit of the records alone: whoever can
//! rewrite both the records and this row needs an anchor kept outside the database (the
//! `--head` of `airlock audit verify`).

use crate::StoreResult;

/// The operations of [`HeadStore`], listed once (see `operations.rs`).
macro_rules! head_operations {
    ($then:ident $($args:tt)*) => { $then! { $($args)*
        /// The seq and hash of `workspace`'s newest audit record as last appended; `None`
        /// before its first record (or its first append on PostgreSQL).
        async fn audit_head(&self, workspace: &str) -> StoreResult<Option<(u64, String)>>
            = read audit_head(workspace);
    } };
}

head_operations!(declare [
    /// The audit chain's head, kept apart from the records.
    pub trait HeadStore: Send + Sync
] {});

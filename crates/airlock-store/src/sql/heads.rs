//! [`HeadStore`] on either database: the chain head kept in `audit_heads` (moved by the
//! append on PostgreSQL, by a trigger on SQLite; see `heads.rs`).

use super::dialect::Pool;
use super::{optional, Backend};
use crate::codec::Columns;
use crate::{HeadStore, StoreResult};

head_operations!(implement [impl HeadStore for Backend] {});

async fn audit_head(readers: &Pool, workspace: &str) -> StoreResult<Option<(u64, String)>> {
    let query =
        sqlx::query("SELECT seq, hash FROM audit_heads WHERE workspace = $1 AND hash <> ''")
            .bind(workspace);
    optional(query, readers, |row| {
        let columns = Columns::new(row, "audit_heads");
        Ok((columns.unsigned("seq")?, columns.text("hash")?))
    })
    .await
}

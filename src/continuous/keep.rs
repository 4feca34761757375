//! Where a user's result table is kept: in the metadata database, beside the state that names
//! it, while small; as a Parquet file of the health store past [`INLINE_MAX`].
//!
//! Inline is the common case (a daily table over ten years is ~3,650 rows, ~120 KiB as IPC)
//! and the cheap one: the table is committed in the evaluation's own transaction, so an
//! incremental evaluation costs one durable commit, where a file costs its own fsync, its
//! folder's, and the removal of the file it replaces. A table that grows past the limit moves
//! to a file at its next evaluation (and back, should it shrink); the file protocol is
//! `crate::store::health::results`'s.

use datafusion::arrow::array::RecordBatch;
use sqlx::AnyConnection;
use uuid::Uuid;

use super::{ContinuousError, table};
use crate::store::health::HealthStore;
use crate::store::metadata::continuous::{self as rows, NewResult, ResultRef};

/// Largest table kept inline, as IPC bytes. Larger ones are Parquet files: the metadata
/// database's size follows the number of users, not the length of their history.
pub const INLINE_MAX: usize = 256 * 1024;

/// (team, user, query).
pub type Ids = (Uuid, Uuid, Uuid);

/// The table `at` names (inline: read on `conn`), `None` when it is gone (a file erased with
/// the user meanwhile).
pub async fn read(
    conn: &mut AnyConnection,
    health: &HealthStore,
    ids @ (_, user, query): Ids,
    at: &ResultRef,
) -> Result<Option<RecordBatch>, ContinuousError> {
    match at {
        ResultRef::Inline => {
            let bytes = rows::inline_result(conn, query, user).await?;
            bytes.map(|b| table::from_ipc(&b)).transpose()
        }
        ResultRef::File(name) => health
            .read_result(ids, name)
            .await?
            .map(table::from_parquet)
            .transpose(),
    }
}

/// Keeps `t` as version `version`: inline when it fits, else written to a new file (durably,
/// before the commit that names it).
pub async fn write(
    health: &HealthStore,
    ids: Ids,
    version: i64,
    t: &RecordBatch,
) -> Result<NewResult, ContinuousError> {
    let ipc = table::to_ipc(t)?;
    if ipc.len() <= INLINE_MAX {
        return Ok(NewResult::Inline(ipc));
    }
    let bytes = table::to_parquet(t)?;
    Ok(NewResult::File(
        health.write_result(ids, version, bytes).await?,
    ))
}

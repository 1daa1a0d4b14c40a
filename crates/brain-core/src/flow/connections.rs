//! An MCP connection's record and its tracer session (SPEC §3.6).

use serde_json::Value;

use super::CloseTx;
use crate::error::StoreError;
use crate::model::{Caller, Session, now_micros};

/// Record a new connection and open its tracer session, in one transaction.
pub async fn connection_open<T: CloseTx>(
    mut tx: T,
    caller: &Caller,
    connection_id: &str,
    init_params: Option<Value>,
) -> Result<(), StoreError> {
    let tenant = &caller.tenant;
    let tracer = Session::open_tracer(caller, connection_id);
    tx.ensure_project(tenant, &tracer.project).await?;
    tx.insert_session(tenant, &tracer).await?;
    tx.insert_connection(
        caller,
        connection_id,
        init_params,
        tracer.session_id,
        now_micros(),
    )
    .await?;
    tx.commit().await
}

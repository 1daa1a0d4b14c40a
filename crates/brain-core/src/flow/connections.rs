//! An MCP connection's record and its tracer session (SPEC §3.6).

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{NewConnection, WriteTx};
use crate::error::{DomainError, ErrorCode, StoreError};
use crate::model::{Caller, Session, now_micros};
use crate::store::ConnectionCaps;

/// The refusal of one more connection when the credential holds `mine` open
/// ones and its tenant `all` (SPEC §4: `rate_limited`, 429). The front door
/// asks before rmcp makes the connection, and [`connection_open`] again
/// inside its write, where racing initializes are counted one by one.
pub fn over_cap(mine: i64, all: i64, caps: ConnectionCaps) -> Option<DomainError> {
    if mine >= caps.per_credential {
        return Some(DomainError::new(
            ErrorCode::RateLimited,
            format!(
                "this credential has {mine} open MCP connections, the limit is {}; \
                 DELETE unused ones or wait for them to expire",
                caps.per_credential
            ),
        ));
    }
    (all >= caps.per_tenant).then(|| {
        DomainError::new(
            ErrorCode::RateLimited,
            "this tenant has as many open MCP connections as it may; \
             DELETE unused ones or wait for them to expire",
        )
    })
}

/// Record a new connection and open its tracer session, in one transaction,
/// unless the credential or the tenant holds as many open connections
/// (last seen after `idle_since`) as `caps` allow.
pub async fn connection_open<T: WriteTx>(
    mut tx: T,
    caller: &Caller,
    connection_id: &str,
    init_params: Option<Value>,
    caps: ConnectionCaps,
    idle_since: DateTime<Utc>,
) -> Result<(), StoreError> {
    let tracer = Session::open_tracer(caller, connection_id);
    tx.provision(Some(&tracer.project)).await?;
    // The front door counted already, outside any transaction: two
    // initializes could both pass it. Counted again with the tenant claimed,
    // they are counted one after another.
    let (mine, all) = tx.claim_connection_counts(caller, idle_since).await?;
    if let Some(e) = over_cap(mine, all, caps) {
        return Err(e.into());
    }
    let connection = NewConnection {
        connection_id,
        init_params,
        tracer: &tracer,
        at: now_micros(),
    };
    tx.open_connection(caller, connection).await?;
    tx.commit(None).await
}

//! The MCP connection registry and the expiry sweeps, for every [`Scope`]d
//! store. A lookup reads in the tenant's read scope; a touch or close is a
//! write transaction of its own (SQLite queues it behind its one writer).

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use super::SqlTx;
use super::{Conn, Finish, Row, Scope, corrupt};
use brain_core::error::StoreError;
use brain_core::ids::{ProjectKey, SessionId, TenantId};
use brain_core::model::{Caller, CredentialKind, Role, now_micros};
use brain_core::operators::{ConnectionUpkeep, connection_upkeep};
use brain_core::store::{ConnectionRecord, ConnectionStore};

/// The tenant claimed (`Sql::tenant_claim`) by this transaction, then its
/// open connections counted in a statement of their own (PostgreSQL reads
/// each statement in a snapshot taken when it starts, so after the claim):
/// `(the caller's credential with its role, the whole tenant)`.
pub async fn claim_connection_counts<C: Conn + ?Sized>(
    c: &mut C,
    caller: &Caller,
    since: DateTime<Utc>,
) -> Result<(i64, i64), StoreError> {
    c.fetch_all(c.sql().tenant_claim, &[(&caller.tenant).into()])
        .await?;
    let params = [
        (&caller.tenant).into(),
        caller.kind.as_str().into(),
        (&caller.credential_id).into(),
        since.into(),
        caller.role.as_str().into(),
    ];
    let row = c.fetch_one(c.sql().connection_open_count, &params).await?;
    Ok((row.int("mine")?, row.int("total")?))
}

/// Record a new connection (its tracer session already inserted).
pub async fn insert_connection<C: Conn + ?Sized>(
    c: &mut C,
    caller: &Caller,
    connection_id: &str,
    init_params: Option<&Value>,
    tracer: SessionId,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let params = [
        (&caller.tenant).into(),
        connection_id.into(),
        caller.kind.as_str().into(),
        (&caller.credential_id).into(),
        at.into(),
        init_params.into(),
        tracer.into(),
        caller.role.as_str().into(),
    ];
    c.execute(c.sql().connection_insert, &params).await?;
    Ok(())
}

/// Close a connection and, when it has one still open, its tracer session.
async fn close<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    connection_id: &str,
) -> Result<(), StoreError> {
    let params = [tenant.into(), connection_id.into(), now_micros().into()];
    let row = c.fetch_optional(c.sql().connection_close, &params).await?;
    // An elevation ends with its connection, and a shrink that counted on it
    // while the connection closed has committed first or sees it revoked.
    c.execute(c.sql().connection_elevations_end, &params)
        .await?;
    let tracer = match row {
        Some(r) => r.opt_uuid("tracer_session_id")?,
        None => None,
    };
    close_tracer(c, tenant, tracer.map(SessionId::from_uuid)).await
}

async fn close_tracer<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    tracer: Option<SessionId>,
) -> Result<(), StoreError> {
    let Some(tracer) = tracer else { return Ok(()) };
    let params = [tenant.into(), tracer.into(), now_micros().into()];
    c.execute(c.sql().tracer_close, &params).await?;
    Ok(())
}

fn record(tenant: &TenantId, r: &dyn Row) -> Result<(ConnectionRecord, DateTime<Utc>), StoreError> {
    let record = ConnectionRecord {
        tenant: tenant.clone(),
        credential_kind: CredentialKind::parse(&r.text("credential_kind")?)
            .ok_or_else(|| corrupt("credential kind"))?,
        credential_id: r.text("credential_id")?,
        role: Role::parse(&r.text("role")?).ok_or_else(|| corrupt("role"))?,
        closed: r.opt_time("closed_at")?.is_some(),
        // Only ever restored from: a value that no longer parses restores
        // with no parameters rather than failing the lookup.
        init_params: r.opt_json("init_params").ok().flatten(),
        tracer_session: r.opt_uuid("tracer_session_id")?.map(SessionId::from_uuid),
    };
    Ok((record, r.time("last_seen_at")?))
}

#[async_trait]
impl<S: Scope> ConnectionStore for crate::SqlStore<S> {
    /// Look a connection up, closing or touching it as
    /// [`connection_upkeep`] decides.
    async fn connection_get(
        &self,
        tenant: &TenantId,
        connection_id: &str,
    ) -> Result<Option<ConnectionRecord>, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let params = [tenant.into(), connection_id.into()];
        let row = c.fetch_optional(c.sql().connection_get, &params).await?;
        c.finish().await?;
        let Some(row) = row else { return Ok(None) };
        let (mut record, last_seen) = record(tenant, row.as_ref())?;
        if record.closed {
            return Ok(Some(record));
        }
        let now = now_micros();
        let idle_secs = self.settings().connection_idle_secs;
        match connection_upkeep(last_seen, now, idle_secs) {
            ConnectionUpkeep::Close => {
                self.connection_close(tenant, connection_id).await?;
                record.closed = true;
            }
            ConnectionUpkeep::Touch => {
                let mut tx = self.write_tx(tenant).await?;
                let params = [tenant.into(), connection_id.into(), now.into()];
                tx.execute(tx.sql().connection_touch, &params).await?;
                tx.commit(None).await?;
            }
            ConnectionUpkeep::Keep => {}
        }
        Ok(Some(record))
    }

    async fn connection_close(
        &self,
        tenant: &TenantId,
        connection_id: &str,
    ) -> Result<(), StoreError> {
        let mut tx = self.write_tx(tenant).await?;
        close(&mut tx, tenant, connection_id).await?;
        tx.commit(None).await
    }

    async fn connection_open_count(
        &self,
        tenant: &TenantId,
        kind: CredentialKind,
        credential_id: &str,
        role: Role,
    ) -> Result<(i64, i64), StoreError> {
        let since = now_micros() - Duration::seconds(self.settings().connection_idle_secs);
        let mut c = self.tenant_scope(tenant).await?;
        let params = [
            tenant.into(),
            kind.as_str().into(),
            credential_id.into(),
            since.into(),
            role.as_str().into(),
        ];
        let row = c.fetch_one(c.sql().connection_open_count, &params).await?;
        c.finish().await?;
        Ok((row.int("mine")?, row.int("total")?))
    }

    async fn connection_expire(&self) -> Result<Vec<(TenantId, String)>, StoreError> {
        let now = now_micros();
        let since = now - Duration::seconds(self.settings().connection_idle_secs);
        let mut tx = self.system_write().await?;
        let rows = tx
            .fetch_all(tx.sql().connection_expire, &[now.into(), since.into()])
            .await?;
        let mut closed = Vec::with_capacity(rows.len());
        for row in rows {
            let Ok(tenant) = TenantId::parse(&row.text("tenant_id")?) else {
                continue;
            };
            let tracer = row.opt_uuid("tracer_session_id")?.map(SessionId::from_uuid);
            close_tracer(&mut tx, &tenant, tracer).await?;
            closed.push((tenant, row.text("connection_id")?));
        }
        tx.commit(None).await?;
        Ok(closed)
    }

    async fn session_started_on(
        &self,
        tenant: &TenantId,
        connection_id: &str,
    ) -> Result<Option<SessionId>, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let params = [tenant.into(), connection_id.into()];
        let row = c
            .fetch_optional(c.sql().session_started_on, &params)
            .await?;
        c.finish().await?;
        Ok(match row {
            Some(r) => r.opt_uuid("session_id")?.map(SessionId::from_uuid),
            None => None,
        })
    }

    async fn connection_started(
        &self,
        tenant: &TenantId,
        connection_id: &str,
        session: SessionId,
    ) -> Result<(), StoreError> {
        let mut tx = self.write_tx(tenant).await?;
        let params = [
            tenant.into(),
            connection_id.into(),
            session.into(),
            now_micros().into(),
        ];
        tx.execute(tx.sql().connection_started, &params).await?;
        tx.commit(None).await
    }

    async fn runtime_expire(&self, max_idle_secs: i64) -> Result<u64, StoreError> {
        let now = now_micros();
        let since = now - Duration::seconds(max_idle_secs);
        let mut tx = self.system_write().await?;
        let params = [now.into(), ProjectKey::RUNTIME.into(), since.into()];
        let done = tx.execute(tx.sql().runtime_expire, &params).await?;
        tx.commit(None).await?;
        Ok(done)
    }
}

//! The statements both stores run the same way: parameters bound in the
//! order [`Sql`](super::Sql) documents, rows mapped once.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::SqlTx;
use super::{Conn, Finish, Row, Scope, corrupt};
use brain_core::error::{DomainError, ErrorCode, StoreError};
use brain_core::ids::{ElevationId, SessionId, SharedTokenId, TenantId};
use brain_core::model::{Caller, Role, now_micros};
use brain_core::operators::{
    ConnectionOwner, Elevation, SharedToken, new_shared_token_secret, shared_token_hash,
};
use brain_core::store::CredentialStore;

fn elevation(row: &dyn Row) -> Result<Elevation, StoreError> {
    Ok(Elevation {
        id: ElevationId::from_uuid(row.uuid("elevation_id")?),
        subject: row.text("subject")?,
        mcp_session_id: row.opt_text("connection_id")?,
        session_id: row.opt_uuid("session_id")?.map(SessionId::from_uuid),
        reason: row.text("reason")?,
        granted_at: row.time("granted_at")?,
        expires_at: row.time("expires_at")?,
        revoked_at: row.opt_time("revoked_at")?,
    })
}

fn token(row: &dyn Row) -> Result<SharedToken, StoreError> {
    Ok(SharedToken {
        token_id: SharedTokenId::from_uuid(row.uuid("token_id")?),
        name: row.text("name")?,
        created_at: row.time("created_at")?,
        revoked_at: row.opt_time("revoked_at")?,
    })
}

/// Whether the caller holds a live elevation for this connection — or, on the
/// sessionless protocol revision (no connection), for this brain session.
pub async fn elevation_active<C: Conn + ?Sized>(
    c: &mut C,
    caller: &Caller,
    session: SessionId,
) -> Result<bool, StoreError> {
    if !brain_core::rules::elevation_can_count(caller) {
        return Ok(false);
    }
    let params = [
        (&caller.tenant).into(),
        (&caller.credential_id).into(),
        now_micros().into(),
        (&caller.connection_id).into(),
        session.into(),
    ];
    c.fetch_one(c.sql().elevation_active, &params)
        .await?
        .flag("found")
}

/// The tenant's MCP connection an elevation would name.
pub async fn connection_owner<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    connection_id: &str,
) -> Result<Option<ConnectionOwner>, StoreError> {
    let params = [tenant.into(), connection_id.into()];
    let row = c.fetch_optional(c.sql().connection_owner, &params).await?;
    row.map(|r| {
        Ok(ConnectionOwner {
            credential_id: r.text("credential_id")?,
            role: Role::parse(&r.text("role")?).unwrap_or(Role::Agent),
            closed: r.flag("closed")?,
        })
    })
    .transpose()
}

pub async fn insert_elevation<C: Conn + ?Sized>(
    c: &mut C,
    caller: &Caller,
    e: &Elevation,
) -> Result<(), StoreError> {
    let params = [
        (&caller.tenant).into(),
        e.id.into(),
        (&caller.credential_id).into(),
        (&e.subject).into(),
        (&e.mcp_session_id).into(),
        e.session_id.into(),
        (&e.reason).into(),
        e.granted_at.into(),
        e.expires_at.into(),
    ];
    c.execute(c.sql().elevation_insert, &params).await?;
    Ok(())
}

pub async fn revoke_elevation<C: Conn + ?Sized>(
    c: &mut C,
    caller: &Caller,
    id: ElevationId,
    at: DateTime<Utc>,
) -> Result<Option<Elevation>, StoreError> {
    let params = [
        (&caller.tenant).into(),
        id.into(),
        (&caller.credential_id).into(),
        at.into(),
    ];
    let row = c.fetch_optional(c.sql().elevation_revoke, &params).await?;
    row.as_deref().map(elevation).transpose()
}

/// Every [`Scope`]d store keeps elevations and shared tokens the same way.
#[async_trait]
impl<S: Scope> CredentialStore for crate::SqlStore<S> {
    async fn elevation_list(&self, caller: &Caller) -> Result<Vec<Elevation>, StoreError> {
        let mut c = self.tenant_scope(&caller.tenant).await?;
        let params = [
            (&caller.tenant).into(),
            (&caller.credential_id).into(),
            now_micros().into(),
        ];
        let rows = c.fetch_all(c.sql().elevation_list, &params).await?;
        c.finish().await?;
        rows.iter().map(|r| elevation(r.as_ref())).collect()
    }

    async fn shared_token_create(
        &self,
        tenant: &TenantId,
        name: &str,
    ) -> Result<(SharedToken, String), StoreError> {
        if name.trim().is_empty() || name.chars().count() > 128 {
            return Err(
                DomainError::invalid_argument("name", "must be 1 to 128 characters").into(),
            );
        }
        let mut tx = self.write_tx(tenant).await?;
        super::writes::ensure_tenant(&mut tx, tenant).await?;
        let secret = new_shared_token_secret();
        let t = SharedToken {
            token_id: SharedTokenId::new_random(),
            name: name.to_owned(),
            created_at: now_micros(),
            revoked_at: None,
        };
        let hash = shared_token_hash(&secret);
        let params = [
            tenant.into(),
            t.token_id.as_uuid().into(),
            (&t.name).into(),
            (&hash).into(),
            t.created_at.into(),
        ];
        if tx.execute(tx.sql().token_insert, &params).await? == 0 {
            return Err(DomainError::invalid_argument(
                "name",
                "is already used by a live token in this tenant",
            )
            .into());
        }
        tx.commit(None).await?;
        Ok((t, secret))
    }

    async fn shared_token_revoke(
        &self,
        tenant: &TenantId,
        name: &str,
    ) -> Result<SharedToken, StoreError> {
        let mut tx = self.write_tx(tenant).await?;
        let params = [tenant.into(), name.into(), now_micros().into()];
        let Some(row) = tx.fetch_optional(tx.sql().token_revoke, &params).await? else {
            return Err(DomainError::new(
                ErrorCode::NotFound,
                "no live shared token with this name in this tenant",
            )
            .into());
        };
        let t = token(row.as_ref())?;
        tx.commit(None).await?;
        Ok(t)
    }

    async fn shared_token_list(&self, tenant: &TenantId) -> Result<Vec<SharedToken>, StoreError> {
        let mut c = self.tenant_scope(tenant).await?;
        let rows = c.fetch_all(c.sql().token_list, &[tenant.into()]).await?;
        c.finish().await?;
        rows.iter().map(|r| token(r.as_ref())).collect()
    }

    /// The tenant is the token's row, so this is the one lookup that is not
    /// scoped by a tenant the caller already has.
    async fn shared_token_find(
        &self,
        token_hash: &str,
    ) -> Result<Option<(TenantId, SharedToken)>, StoreError> {
        let mut c = self.system_scope().await?;
        let row = c
            .fetch_optional(c.sql().token_find, &[token_hash.into()])
            .await?;
        c.finish().await?;
        row.map(|r| {
            let tenant = TenantId::parse(&r.text("tenant_id")?).map_err(|_| corrupt("tenant"))?;
            Ok((tenant, token(r.as_ref())?))
        })
        .transpose()
    }

    async fn shared_token_exists(&self) -> Result<bool, StoreError> {
        let mut c = self.system_scope().await?;
        let found = c
            .fetch_one(c.sql().token_exists, &[])
            .await?
            .flag("found")?;
        c.finish().await?;
        Ok(found)
    }
}

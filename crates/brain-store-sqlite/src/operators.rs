//! Elevations' and shared tokens' SQL (grant and revoke run in `brain_core::flow`).

use brain_core::error::{DomainError, ErrorCode, StoreError};
use brain_core::ids::{ElevationId, SessionId, SharedTokenId, TenantId};
use brain_core::model::{Caller, Role, now_micros};
use brain_core::operators::{
    ConnectionOwner, Elevation, SharedToken, new_shared_token_secret, shared_token_hash,
};
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use crate::rows::{self, micros};
use crate::{SqliteStore, db, ledger};

const ELEVATION_COLUMNS: &str =
    "elevation_id, subject, connection_id, session_id, reason, granted_at, expires_at, revoked_at";

fn elevation(row: &SqliteRow) -> Result<Elevation, StoreError> {
    Ok(Elevation {
        id: ElevationId::from_uuid(row.try_get("elevation_id").map_err(db)?),
        subject: row.try_get("subject").map_err(db)?,
        mcp_session_id: row.try_get("connection_id").map_err(db)?,
        session_id: row
            .try_get::<Option<uuid::Uuid>, _>("session_id")
            .map_err(db)?
            .map(SessionId::from_uuid),
        reason: row.try_get("reason").map_err(db)?,
        granted_at: rows::time(row, "granted_at")?,
        expires_at: rows::time(row, "expires_at")?,
        revoked_at: rows::opt_time(row, "revoked_at")?,
    })
}

/// Whether the caller holds a live elevation for this connection — or, on the
/// sessionless protocol revision (no connection), for this brain session.
pub(crate) async fn elevation_active(
    conn: &mut SqliteConnection,
    caller: &Caller,
    session_id: SessionId,
) -> Result<bool, StoreError> {
    if !brain_core::rules::elevation_can_count(caller) {
        return Ok(false);
    }
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM elevations WHERE tenant_id = ?1 AND credential_id = ?2 \
         AND revoked_at IS NULL AND expires_at > ?3 \
         AND ((connection_id IS NOT NULL AND connection_id = ?4) \
              OR (?4 IS NULL AND session_id = ?5)))",
    )
    .bind(caller.tenant.as_str())
    .bind(&caller.credential_id)
    .bind(micros(now_micros()))
    .bind(&caller.connection_id)
    .bind(session_id.as_uuid())
    .fetch_one(&mut *conn)
    .await
    .map_err(db)
}

/// The tenant's MCP connection an elevation would name.
pub(crate) async fn connection_owner(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    id: &str,
) -> Result<Option<ConnectionOwner>, StoreError> {
    let row = sqlx::query(
        "SELECT credential_id, role, closed_at IS NOT NULL AS closed FROM mcp_connections \
         WHERE tenant_id = ?1 AND connection_id = ?2",
    )
    .bind(tenant.as_str())
    .bind(id)
    .fetch_optional(&mut *conn)
    .await
    .map_err(db)?;
    row.map(|r| {
        let role: String = r.try_get("role").map_err(db)?;
        Ok(ConnectionOwner {
            credential_id: r.try_get("credential_id").map_err(db)?,
            role: Role::parse(&role).unwrap_or(Role::Agent),
            closed: r.try_get("closed").map_err(db)?,
        })
    })
    .transpose()
}

pub(crate) async fn insert_elevation(
    conn: &mut SqliteConnection,
    caller: &Caller,
    e: &Elevation,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO elevations (tenant_id, elevation_id, credential_id, subject, connection_id, \
         session_id, reason, granted_at, expires_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
    )
    .bind(caller.tenant.as_str())
    .bind(e.id.as_uuid())
    .bind(&caller.credential_id)
    .bind(&e.subject)
    .bind(&e.mcp_session_id)
    .bind(e.session_id.map(|s| s.as_uuid()))
    .bind(&e.reason)
    .bind(micros(e.granted_at))
    .bind(micros(e.expires_at))
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}

pub(crate) async fn revoke_elevation(
    conn: &mut SqliteConnection,
    caller: &Caller,
    id: ElevationId,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<Option<Elevation>, StoreError> {
    let sql = format!(
        "UPDATE elevations SET revoked_at = COALESCE(revoked_at, ?4) \
         WHERE tenant_id = ?1 AND elevation_id = ?2 AND credential_id = ?3 RETURNING {ELEVATION_COLUMNS}"
    );
    let row = sqlx::query(&sql)
        .bind(caller.tenant.as_str())
        .bind(id.as_uuid())
        .bind(&caller.credential_id)
        .bind(micros(at))
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
    row.as_ref().map(elevation).transpose()
}

pub(crate) async fn list(
    store: &SqliteStore,
    caller: &Caller,
) -> Result<Vec<Elevation>, StoreError> {
    let sql = format!(
        "SELECT {ELEVATION_COLUMNS} FROM elevations WHERE tenant_id = ?1 AND credential_id = ?2 \
         AND revoked_at IS NULL AND expires_at > ?3 ORDER BY granted_at"
    );
    let rows = sqlx::query(&sql)
        .bind(caller.tenant.as_str())
        .bind(&caller.credential_id)
        .bind(micros(now_micros()))
        .fetch_all(&store.pool)
        .await
        .map_err(db)?;
    rows.iter().map(elevation).collect()
}

// --- shared tokens ------------------------------------------------------

const TOKEN_COLUMNS: &str = "token_id, name, created_at, revoked_at";

fn token(row: &SqliteRow) -> Result<SharedToken, StoreError> {
    Ok(SharedToken {
        token_id: SharedTokenId::from_uuid(row.try_get("token_id").map_err(db)?),
        name: row.try_get("name").map_err(db)?,
        created_at: rows::time(row, "created_at")?,
        revoked_at: rows::opt_time(row, "revoked_at")?,
    })
}

pub(crate) async fn token_create(
    store: &SqliteStore,
    tenant: &TenantId,
    name: &str,
) -> Result<(SharedToken, String), StoreError> {
    if name.trim().is_empty() || name.chars().count() > 128 {
        return Err(DomainError::invalid_argument("name", "must be 1 to 128 characters").into());
    }
    let mut tx = store.write_tx().await?;
    ledger::ensure_tenant(tx.conn()?, tenant).await?;
    let secret = new_shared_token_secret();
    let t = SharedToken {
        token_id: SharedTokenId::new_random(),
        name: name.to_owned(),
        created_at: now_micros(),
        revoked_at: None,
    };
    let inserted = sqlx::query(
        "INSERT INTO shared_tokens (tenant_id, token_id, name, token_hash, created_at) \
         VALUES (?1,?2,?3,?4,?5) ON CONFLICT DO NOTHING",
    )
    .bind(tenant.as_str())
    .bind(t.token_id.as_uuid())
    .bind(&t.name)
    .bind(shared_token_hash(&secret))
    .bind(micros(t.created_at))
    .execute(tx.conn()?)
    .await
    .map_err(db)?;
    if inserted.rows_affected() == 0 {
        return Err(DomainError::invalid_argument(
            "name",
            "is already used by a live token in this tenant",
        )
        .into());
    }
    tx.commit().await?;
    Ok((t, secret))
}

pub(crate) async fn token_revoke(
    store: &SqliteStore,
    tenant: &TenantId,
    name: &str,
) -> Result<SharedToken, StoreError> {
    let sql = format!(
        "UPDATE shared_tokens SET revoked_at = ?3 WHERE tenant_id = ?1 AND name = ?2 \
         AND revoked_at IS NULL RETURNING {TOKEN_COLUMNS}"
    );
    let mut tx = store.write_tx().await?;
    let row = sqlx::query(&sql)
        .bind(tenant.as_str())
        .bind(name)
        .bind(micros(now_micros()))
        .fetch_optional(tx.conn()?)
        .await
        .map_err(db)?;
    match row {
        Some(r) => {
            let t = token(&r)?;
            tx.commit().await?;
            Ok(t)
        }
        None => Err(DomainError::new(
            ErrorCode::NotFound,
            "no live shared token with this name in this tenant",
        )
        .into()),
    }
}

pub(crate) async fn token_list(
    store: &SqliteStore,
    tenant: &TenantId,
) -> Result<Vec<SharedToken>, StoreError> {
    let sql = format!(
        "SELECT {TOKEN_COLUMNS} FROM shared_tokens WHERE tenant_id = ?1 ORDER BY created_at"
    );
    let rows = sqlx::query(&sql)
        .bind(tenant.as_str())
        .fetch_all(&store.pool)
        .await
        .map_err(db)?;
    rows.iter().map(token).collect()
}

/// Look a presented token up by its hash. The tenant is the token's row, so this
/// is the one lookup that is not scoped by a tenant the caller already has.
pub(crate) async fn token_find(
    store: &SqliteStore,
    hash: &str,
) -> Result<Option<(TenantId, SharedToken)>, StoreError> {
    let sql = format!(
        "SELECT tenant_id, {TOKEN_COLUMNS} FROM shared_tokens WHERE token_hash = ?1 AND revoked_at IS NULL"
    );
    let row = sqlx::query(&sql)
        .bind(hash)
        .fetch_optional(&store.pool)
        .await
        .map_err(db)?;
    match row {
        None => Ok(None),
        Some(r) => {
            let tenant: String = r.try_get("tenant_id").map_err(db)?;
            let tenant = TenantId::parse(&tenant)
                .map_err(|_| StoreError::Backend("stored tenant does not parse".into()))?;
            Ok(Some((tenant, token(&r)?)))
        }
    }
}

pub(crate) async fn token_exists(store: &SqliteStore) -> Result<bool, StoreError> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM shared_tokens WHERE revoked_at IS NULL)")
        .fetch_one(&store.pool)
        .await
        .map_err(db)
}

//! The statements of a closing call on PostgreSQL: its locks, sent with
//! the transaction's BEGIN where they can be; what its answer counts; and the
//! close itself, one statement with the body and the pending receipt.

use brain_core::error::StoreError;
use brain_core::flow::{FocusWrite, StoredNextFocus};
use brain_core::ids::{ArtifactId, SessionId, TenantId};
use brain_core::model::{FocusOutcome, Session};
use brain_core::store::{LockedClose, Unattributed};
use brain_store_sqlx::Cols;
use brain_store_sqlx::sql::{BoxRow, Conn, rows, sessions};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgConnection, Row};

use super::Tx;
use crate::{db, dialect};

impl Tx {
    /// Persist the closed session and, when the close applied, its target
    /// body, in one statement. Resource subscribers hear of the body once
    /// the transaction has committed (`PgScope::announce_close`), not from a
    /// NOTIFY in it: that would make the commit hold a lock of the whole
    /// database cluster through its WAL flush.
    pub(super) async fn close_session(
        &mut self,
        s: &Session,
        focus: Option<FocusWrite<'_>>,
        stored: StoredNextFocus<'_>,
        digest: &str,
        result: &Value,
    ) -> Result<(), StoreError> {
        let carried = self
            .receipt
            .as_ref()
            .filter(|p| !p.sent && p.kind == super::Pended::Receipt)
            .map(|p| p.setting.clone());
        let q = sqlx::query(close_statement(focus.is_some(), carried.is_some()))
            .bind(self.tenant.as_str().to_owned())
            .bind(s.session_id.as_uuid())
            .bind(s.status.as_str())
            .bind(s.ended_at)
            .bind(s.last_activity_at)
            .bind(&s.summary)
            .bind(stored.text)
            .bind(&s.nothing_to_capture_reason)
            .bind(s.focus_outcome.map(FocusOutcome::as_str))
            .bind(&s.abandon_reason)
            .bind(digest)
            .bind(result)
            .bind(stored.revision);
        let q = match focus {
            None => q,
            Some(w) => q
                .bind(w.session.project.as_str())
                .bind(sessions::slot_key(w.session.bound_slot.as_ref()))
                .bind(w.revision)
                .bind(w.at),
        };
        let q = match &carried {
            None => q,
            Some(setting) => q.bind(setting.as_str()),
        };
        q.execute(self.conn().await?).await.map_err(db)?;
        if let Some(p) = self.receipt.as_mut() {
            p.sent |= carried.is_some();
        }
        Ok(())
    }
}

/// The close's statement: the session's own update is the portable
/// statement ($1 to $13); a body to write ($14 to $17) and a receipt left
/// for the commit (`$14` or `$18`, after the body's parameters) join it as
/// CTE and select-list parts. The focus row only names the body's revision:
/// the body is the history row the pending receipt carries
/// (`ledger::pending`, `brain_place_pending`).
/// Built once each.
fn close_statement(focus: bool, receipt: bool) -> &'static str {
    use std::sync::LazyLock;
    fn build(focus: bool, receipt: bool) -> String {
        let mut ctes = format!("WITH s AS ({})", crate::sql::SQL.session_close);
        let mut cols = Vec::new();
        if focus {
            ctes.push_str(
                ", u AS (UPDATE focus_bodies SET body = NULL, revision = $16, \
                 updated_at = $17, updated_by_session = $2 \
                 WHERE tenant_id = $1 AND project = $14 AND slot = $15 RETURNING 1)",
            );
            // A data-modifying CTE runs whether or not it is read.
            cols.push("(SELECT count(*) FROM u) AS bodies");
        }
        if receipt {
            cols.push(if focus {
                "set_config('brain.receipt', $18, true)"
            } else {
                "set_config('brain.receipt', $14, true)"
            });
        }
        format!("{ctes} SELECT {}", cols.join(", "))
    }
    static WITH_FOCUS: LazyLock<String> = LazyLock::new(|| build(true, false));
    static WITH_RECEIPT: LazyLock<String> = LazyLock::new(|| build(false, true));
    static WITH_BOTH: LazyLock<String> = LazyLock::new(|| build(true, true));
    match (focus, receipt) {
        (false, false) => crate::sql::SQL.session_close,
        (true, false) => &WITH_FOCUS,
        (false, true) => &WITH_RECEIPT,
        (true, true) => &WITH_BOTH,
    }
}

/// The session and its target body, locked in one statement. When the join
/// finds no row although the session exists (a bind committed while this
/// waited, so the locked row is no longer its target), the two are loaded
/// apart, locked in the same order.
pub(super) async fn lock_close(
    tx: &mut Tx,
    id: SessionId,
) -> Result<Option<LockedClose>, StoreError> {
    let tenant = &tx.tenant.clone();
    let row = match lock_first(tx, "brain_lock_close", id).await? {
        Some(row) => row.map(|r| Box::new(Cols::<dialect::Pg, _>::new(r)) as BoxRow),
        // Begun already: the same function, with parameters.
        None => {
            tx.fetch_optional(
                "SELECT * FROM brain_lock_close($1, $2)",
                &[tenant.into(), id.into()],
            )
            .await?
        }
    };
    if let Some(row) = row {
        let (session, close_record) = rows::session(row.as_ref())?;
        return Ok(Some(LockedClose {
            session,
            close_record,
            target: rows::focus(row.as_ref())?,
        }));
    }
    let Some((session, close_record)) = sessions::load_session(tx, tenant, id, true).await? else {
        return Ok(None);
    };
    let target = sessions::load_focus(
        tx,
        tenant,
        &session.project,
        session.bound_slot.as_ref(),
        true,
    )
    .await?;
    Ok(Some(LockedClose {
        session,
        close_record,
        target,
    }))
}

/// `function` (migrations 0011, 0012: a lock's query, the same as its
/// parameterized form) as the transaction's first statement, sent in its
/// BEGIN's message: one round trip fewer. Its row, if any; `None` when the
/// transaction had begun already and nothing was sent.
pub(super) async fn lock_first(
    tx: &mut Tx,
    function: &str,
    id: SessionId,
) -> Result<Option<Option<sqlx::postgres::PgRow>>, StoreError> {
    let first = format!(
        "SELECT * FROM {function}('{}', '{}')",
        crate::tenant_literal(&tx.tenant)?,
        id.as_uuid().hyphenated()
    );
    let tenant = tx.tenant.clone();
    Ok(tx.link.begin_with(&tenant, &first).await?.map(|rows| {
        rows.into_iter()
            // BEGIN's message answers the scope's set_config first.
            .find(|r| sqlx::Row::try_column(r, "session_id").is_ok())
    }))
}

/// What a close's answer counts, in one statement (its own snapshot, taken
/// after the close's locks): `brain_close_counts`, which the one-call end's
/// read runs too.
pub(super) async fn close_counts(
    conn: &mut PgConnection,
    tenant: &TenantId,
    s: &Session,
    until: DateTime<Utc>,
) -> Result<(Unattributed, i64), StoreError> {
    let row = sqlx::query("SELECT * FROM brain_close_counts($1, $2, $3, $4)")
        .bind(tenant.as_str())
        .bind(s.project.as_str())
        .bind(s.opened_at)
        .bind(until)
        .fetch_one(&mut *conn)
        .await
        .map_err(db)?;
    counts(&row)
}

/// `brain_close_counts`' columns, wherever a row carries them: the
/// unattributed artifacts and the open agent sessions.
pub(super) fn counts(row: &sqlx::postgres::PgRow) -> Result<(Unattributed, i64), StoreError> {
    let ids: Vec<uuid::Uuid> = row.try_get("unattributed_ids").map_err(db)?;
    Ok((
        Unattributed {
            count: row.try_get("unattributed_n").map_err(db)?,
            ids: ids.into_iter().map(ArtifactId::from_uuid).collect(),
        },
        row.try_get("open_agents").map_err(db)?,
    ))
}

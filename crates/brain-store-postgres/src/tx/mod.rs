//! A PostgreSQL write transaction as `brain_core::flow` needs it: its form
//! of each `SqlTx` operation it fuses or runs as a function, the portable
//! form of the rest. `brain_core::writes` opens it and runs the flows.

use async_trait::async_trait;
use brain_core::error::StoreError;
use brain_core::flow::{CloseWrite, FocusWrite, Receipting};
use brain_core::ids::{ArtifactId, ProjectKey, SessionId, TenantId};
use brain_core::memory::Document;
use brain_core::model::{ArtifactKind, Caller, Focus, Session, now_micros};
use brain_core::receipt::{Receipt, ReceiptDraft};
use brain_core::rules::CloseRecord;
use brain_core::store::{BriefingSources, LockedClose, Unattributed};
use brain_store_sqlx::Cols;
use brain_store_sqlx::sql::rows;
use brain_store_sqlx::sql::{BoxRow, Conn, Finish, Param, Sql, SqlTx};
use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use std::sync::Arc;

use crate::group_commit::Groups;
use crate::known_projects::KnownProjects;

use crate::connection::Link;
use crate::kept_connections::Warm;
use crate::one_call_writes::{self, On};
use crate::{PgTx, db, dialect, ledger};

mod closing;
mod one_call_end;
mod todos;
use brain_store_sqlx::sql::sessions;
use closing::{close_counts, lock_close, lock_first};

/// A write transaction, as `brain_core::flow` needs it.
///
/// It begins on its first statement, not when it is made: a start, or a
/// remember without a session, is then one function call in its own
/// statement's transaction, one round trip in all (`one_call_writes`). Any
/// other write places its receipt in the message that commits it ([`Link`]).
pub struct Tx {
    link: Link,
    /// The tenant it was opened for ([`TenantId::across`] for a system scope).
    tenant: TenantId,
    /// The receipt `append_receipt` left for the commit to place.
    receipt: Option<Pending>,
    /// Whether a one-call write placed this write's receipt itself.
    placed: bool,
    known: Arc<KnownProjects>,
    /// The tenants' group commits (`None` on a read scope, which writes no
    /// one-call write).
    groups: Option<Arc<Groups>>,
    /// The projects this transaction created or found, known to the process
    /// once it commits (not before: a rollback may undo their creation).
    ensured: Vec<(String, String)>,
}

/// A receipt left for the commit: placed by `brain_place_pending` from the
/// transaction-local setting `brain.receipt`, which the next statement that
/// can carries (`apply_close`) or the commit sends first; or a whole
/// remember, placed by `brain_remember_pending` from `brain.remember`.
struct Pending {
    receipt: Receipt,
    setting: String,
    sent: bool,
    kind: Pended,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Pended {
    Receipt,
    Remember,
}

impl Pended {
    /// The transaction-local setting its function reads.
    fn setting(self) -> &'static str {
        match self {
            Pended::Receipt => "brain.receipt",
            Pended::Remember => "brain.remember",
        }
    }

    /// The statement sent with the COMMIT.
    fn place(self) -> &'static str {
        match self {
            Pended::Receipt => ledger::PLACE_PENDING,
            Pended::Remember => one_call_writes::REMEMBER_PENDING,
        }
    }
}

impl Tx {
    /// A transaction already begun (the reads' scopes).
    pub(crate) fn new(conn: PgTx, tenant: TenantId, known: Arc<KnownProjects>) -> Self {
        Self::on(Link::Scope(conn), tenant, known, None)
    }

    /// A write transaction for `tenant`, begun on its first statement.
    pub(crate) fn lazy(
        warm: Arc<Warm>,
        tenant: TenantId,
        known: Arc<KnownProjects>,
        groups: Arc<Groups>,
    ) -> Self {
        Self::on(
            Link::Idle(warm, tenant.clone()),
            tenant,
            known,
            Some(groups),
        )
    }

    fn on(
        link: Link,
        tenant: TenantId,
        known: Arc<KnownProjects>,
        groups: Option<Arc<Groups>>,
    ) -> Self {
        Self {
            link,
            tenant,
            receipt: None,
            placed: false,
            known,
            groups,
            ensured: Vec::new(),
        }
    }

    async fn conn(&mut self) -> Result<&mut PgConnection, StoreError> {
        self.link.conn().await
    }

    /// Where connections come from, while no statement has run and the
    /// transaction is `tenant`'s: a one-round-trip write may take one
    /// straight away. The tenant is passed to the function, which scopes its
    /// own statement's transaction.
    fn untouched(&self) -> Option<Arc<Warm>> {
        self.link.idle_pool(&self.tenant)
    }

    /// Where a one-call write runs: in the tenant's group commit when
    /// `grouped` allows it and no statement has run yet, alone on a
    /// connection of its own when none has run, else inside this transaction.
    async fn one_call_on(&mut self, grouped: bool) -> Result<On<'_>, StoreError> {
        Ok(match (self.untouched(), self.groups.clone()) {
            (Some(warm), Some(groups)) if grouped => On::Group(warm, groups),
            (Some(warm), _) => On::Alone(warm),
            (None, _) => On::Open(self.conn().await?),
        })
    }

    /// A failed write that needs its project's rows (the tip, the project a
    /// foreign key names) forgets every known project: rows can only vanish
    /// under a running process by a restore or a failover to a replica that
    /// lags, and then `ensure_project` must run again. A rare error costs one
    /// statement per project afterwards, never a wrong answer.
    fn heal<R>(&self, result: Result<R, StoreError>) -> Result<R, StoreError> {
        if result.is_err() {
            self.known.forget_all();
        }
        result
    }

    /// Commit, placing the pending receipt in the same message.
    async fn end(&mut self) -> Result<(), StoreError> {
        let Some(p) = self.receipt.take() else {
            self.link.commit(None).await?;
            return Ok(());
        };
        if !p.sent {
            sqlx::query("SELECT set_config($1, $2, true)")
                .bind(p.kind.setting())
                .bind(&p.setting)
                .execute(self.conn().await?)
                .await
                .map_err(db)?;
        }
        let r = p.receipt;
        // The place is checked against brain-core's hash after the COMMIT,
        // as every receipt placed with it is: a disagreement fails the call
        // over a write that stands, which `brain serve`'s check at boot
        // (`PgScope::receipt_hash_agrees`) keeps from happening.
        let rows = self.link.commit(Some(p.kind.place())).await;
        let placed = rows.and_then(|rows| ledger::placed_row(r, rows.first()));
        self.heal(placed).map(|_| ())
    }
}

#[async_trait]
impl Conn for Tx {
    fn sql(&self) -> &'static Sql {
        &crate::sql::SQL
    }
    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        brain_store_sqlx::execute::<dialect::Pg>(self.conn().await?, sql, params).await
    }
    async fn fetch_all(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Vec<BoxRow>, StoreError> {
        brain_store_sqlx::fetch_all::<dialect::Pg>(self.conn().await?, sql, params).await
    }
}

/// A read commits: its `SET LOCAL` scope ends with the transaction.
#[async_trait]
impl Finish for Tx {
    async fn finish(mut self) -> Result<(), StoreError> {
        self.end().await
    }
}

#[async_trait]
impl SqlTx for Tx {
    /// Row-level security is the wall too: the transaction's `brain.tenant`
    /// setting hides every other tenant's rows from each statement.
    fn tenant(&self) -> &TenantId {
        &self.tenant
    }

    async fn lock_close(&mut self, id: SessionId) -> Result<Option<LockedClose>, StoreError> {
        lock_close(self, id).await
    }

    async fn lock_session(
        &mut self,
        id: SessionId,
    ) -> Result<Option<(Session, Option<CloseRecord>)>, StoreError> {
        match lock_first(self, "brain_lock_session", id).await? {
            Some(row) => row
                .map(|r| rows::session(&Cols::<dialect::Pg, _>::new(r)))
                .transpose(),
            None => {
                let tenant = self.tenant.clone();
                sessions::load_session(self, &tenant, id, true).await
            }
        }
    }

    async fn peek_close(
        &mut self,
        id: SessionId,
        until: DateTime<Utc>,
    ) -> Result<Option<brain_core::flow::PeekedClose>, StoreError> {
        self.peek(id, until).await
    }

    async fn close_in_one_call(
        &mut self,
        caller: &Caller,
        w: CloseWrite<'_>,
        on: brain_core::flow::DecidedOn<'_>,
    ) -> Result<bool, StoreError> {
        self.end_in_one_call(caller, w, on).await
    }

    async fn close_counts(
        &mut self,
        session: &Session,
        until: DateTime<Utc>,
    ) -> Result<(Unattributed, i64), StoreError> {
        let tenant = self.tenant.clone();
        close_counts(self.conn().await?, &tenant, session, until).await
    }

    async fn provision(&mut self, project: Option<&ProjectKey>) -> Result<(), StoreError> {
        let tenant = self.tenant.clone();
        match project {
            None => brain_store_sqlx::sql::writes::ensure_tenant(self, &tenant).await,
            Some(project) => self.ensure_project(project).await,
        }
    }

    async fn open_session(
        &mut self,
        caller: &Caller,
        session: &mut Session,
        receipt: ReceiptDraft,
    ) -> Result<(Option<Focus>, BriefingSources), StoreError> {
        if receipt.session_id != Some(session.session_id)
            || receipt.project.as_deref() != Some(session.project.as_str())
        {
            return Err(StoreError::Backend(
                "a start's receipt names another session".into(),
            ));
        }
        self.place_inline()?;
        let tenant = self.tenant.clone();
        let known = self.known.contains(&tenant, &session.project);
        let grouped = known && session.bound_slot.is_none();
        let on = self.one_call_on(grouped).await?;
        let opened = one_call_writes::start(on, caller, session, receipt).await;
        let opened = self.heal(opened)?;
        // Its statement created the project when missing.
        self.ensured
            .push(KnownProjects::key(&tenant, &session.project));
        Ok(opened)
    }

    async fn remember(
        &mut self,
        caller: &Caller,
        artifact: &brain_core::model::Artifact,
        receipt: ReceiptDraft,
    ) -> Result<(), StoreError> {
        if receipt.session_id != artifact.session_id
            || receipt.project.as_deref() != Some(artifact.project.as_str())
        {
            return Err(StoreError::Backend(
                "a remember's receipt names another session".into(),
            ));
        }
        let tenant = self.tenant.clone();
        let ensure = !self.known.contains(&tenant, &artifact.project);
        if self.untouched().is_none() {
            // Statements have run (a session was locked): the call waits
            // for the COMMIT, so the tip is held for no round trip.
            self.one_receipt()?;
            let (receipt, setting) =
                one_call_writes::remember_pending(caller, ensure, artifact, receipt)?;
            self.receipt = Some(Pending {
                receipt,
                setting,
                sent: false,
                kind: Pended::Remember,
            });
        } else {
            self.place_inline()?;
            let on = self.one_call_on(!ensure).await?;
            let placed = one_call_writes::remember(on, caller, ensure, artifact, receipt).await;
            self.heal(placed)?;
        }
        if ensure {
            self.ensured
                .push(KnownProjects::key(&tenant, &artifact.project));
        }
        Ok(())
    }

    async fn briefing_sources(&mut self, session: &Session) -> Result<BriefingSources, StoreError> {
        let tenant = self.tenant.clone();
        crate::opening::briefing_sources(self.conn().await?, &tenant, session).await
    }

    async fn lock_todos(
        &mut self,
        project: &ProjectKey,
        ids: &[ArtifactId],
    ) -> Result<Vec<(ArtifactId, ArtifactKind, bool)>, StoreError> {
        let tenant = self.tenant.clone();
        todos::lock_todos(self.conn().await?, &tenant, project, ids).await
    }

    async fn acknowledge(
        &mut self,
        project: &ProjectKey,
        ids: &[ArtifactId],
        note: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<i64, StoreError> {
        let tenant = self.tenant.clone();
        todos::acknowledge(self.conn().await?, &tenant, project, ids, note, at).await?;
        sessions::inbox_count(self, &tenant, project).await
    }

    async fn write_document(
        &mut self,
        project: &ProjectKey,
        doc: &Document,
    ) -> Result<bool, StoreError> {
        let tenant = self.tenant.clone();
        let written = sessions::write_document(self, &tenant, project, doc).await;
        self.heal(written)
    }

    /// The receipt is left for the commit ([`Tx::pend`]); the session's
    /// close and, when the close applied, its target body go in one
    /// statement that carries the receipt too.
    async fn apply_close(&mut self, caller: &Caller, w: CloseWrite<'_>) -> Result<(), StoreError> {
        let tenant = self.tenant.clone();
        if let Some(next) = w.next_session {
            sessions::insert_session(self, &tenant, next).await?;
        }
        self.pend(caller, w.receipt, w.focus)?;
        self.close_session(w.session, w.focus, w.next_focus, w.digest, w.result)
            .await
    }

    async fn commit(mut self, receipt: Option<Receipting<'_>>) -> Result<(), StoreError> {
        if let Some((caller, draft)) = receipt {
            self.pend(caller, draft, None)?;
        }
        self.end().await?;
        self.known.add(std::mem::take(&mut self.ensured));
        Ok(())
    }
}

impl Tx {
    /// Every write has one receipt.
    fn one_receipt(&self) -> Result<(), StoreError> {
        if self.receipt.is_some() || self.placed {
            return Err(StoreError::Backend("a second receipt in one write".into()));
        }
        Ok(())
    }

    /// A one-call write places its receipt itself.
    fn place_inline(&mut self) -> Result<(), StoreError> {
        self.one_receipt()?;
        self.placed = true;
        Ok(())
    }

    /// Create the project on first use, unless this process has seen it
    /// committed already.
    async fn ensure_project(&mut self, project: &ProjectKey) -> Result<(), StoreError> {
        let tenant = self.tenant.clone();
        if self.known.contains(&tenant, project) {
            return Ok(());
        }
        ledger::ensure_project(self.conn().await?, &tenant, project).await?;
        self.ensured.push(KnownProjects::key(&tenant, project));
        Ok(())
    }

    /// Leave the receipt for the commit: the tip is locked by the statement
    /// that places it, sent with the `COMMIT` in one message, so no writer
    /// of the tenant waits on a round trip to brain ([`Link`]).
    fn pend(
        &mut self,
        caller: &Caller,
        draft: ReceiptDraft,
        history: Option<FocusWrite<'_>>,
    ) -> Result<(), StoreError> {
        self.one_receipt()?;
        let receipt = Receipt::unplaced(caller, draft, now_micros());
        let setting = ledger::pending(&receipt, history)?.to_string();
        self.receipt = Some(Pending {
            receipt,
            setting,
            sent: false,
            kind: Pended::Receipt,
        });
        Ok(())
    }
}

//! The writes of every store (session calls, documents, elevations), written once. A store offers a write
//! transaction scoped to a tenant ([`Backend::write`]), a [`WriteTx`];
//! [`SessionWrites`] runs [`flow`] on it, so no store forwards a
//! call it does not shape.

use async_trait::async_trait;
use serde_json::Value;

use crate::error::{MergeNeeded, StoreError};
use crate::flow::{self, EndedWithDocuments, WriteTx};
use crate::ids::{ElevationId, SlotName, TenantId};
use crate::memory::{Document, DocumentKind, DocumentPut};
use crate::merge::Merged;
use crate::model::{Artifact, Caller};
use crate::operators::{Elevation, ElevationRequest};
use crate::requests::RememberRequest;
use crate::requests::{AbandonRequest, BindRequest, EndRequest, MergeStep, RelayRequest};
use crate::requests::{ResumeRequest, StartRequest, TodoAckOutcome, TodoAckRequest};
use crate::store::ConnectionCaps;
use crate::store::{BindOutcome, MissionRecall, Reads, SessionBriefing};

/// What a store supplies for the session calls.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    type Tx: WriteTx + 'static;
    /// A write transaction that sees and writes only `tenant`'s rows.
    async fn write(&self, tenant: &TenantId) -> Result<Self::Tx, StoreError>;
    /// After this long without activity an open session reads as idle.
    fn idle_secs(&self) -> i64;
    /// After this long unused an MCP connection no longer counts as open.
    fn connection_idle_secs(&self) -> i64;
    /// After an end or relay committed `out`: tell this process's listeners.
    /// A database that notifies by itself (PostgreSQL's trigger) needs nothing.
    fn announce_close(&self, _tenant: &TenantId, _out: &Value) {}
}

/// The mutations of SPEC §2, for every [`Backend`].
#[async_trait]
pub trait SessionWrites: Send + Sync {
    async fn start_session(
        &self,
        caller: &Caller,
        req: StartRequest,
    ) -> Result<SessionBriefing, StoreError>;
    async fn bind_session(
        &self,
        caller: &Caller,
        req: BindRequest,
    ) -> Result<BindOutcome, StoreError>;
    /// Reattach: read-only apart from `last_activity_at`, so no receipt.
    async fn resume_session(
        &self,
        caller: &Caller,
        req: ResumeRequest,
    ) -> Result<SessionBriefing, StoreError>;
    /// End a session. Whether `allow_focus_shrink` is authorized (an active
    /// elevation for this credential on this connection) is decided inside the
    /// same transaction, so a revoked or expired elevation never counts.
    async fn end_session(&self, caller: &Caller, req: EndRequest) -> Result<Value, StoreError>;
    async fn relay_session(&self, caller: &Caller, req: RelayRequest) -> Result<Value, StoreError>;
    /// Replace the project's documents whole and end the session keeping its
    /// focus, in one transaction (the brain-core profile's end).
    async fn end_with_documents(
        &self,
        caller: &Caller,
        req: EndRequest,
        bodies: Vec<(DocumentKind, String)>,
    ) -> Result<EndedWithDocuments, StoreError>;
    async fn abandon_session(
        &self,
        caller: &Caller,
        req: AbandonRequest,
    ) -> Result<Value, StoreError>;
    async fn remember(&self, caller: &Caller, req: RememberRequest)
    -> Result<Artifact, StoreError>;
    /// `brain_todo_ack` (SPEC §2.7).
    async fn todo_ack(
        &self,
        caller: &Caller,
        req: TodoAckRequest,
    ) -> Result<TodoAckOutcome, StoreError>;
    /// Replace a document under compare-and-swap on its revision, with a receipt.
    async fn document_put(&self, caller: &Caller, put: DocumentPut)
    -> Result<Document, StoreError>;
    /// Grant an elevation (SPEC §4), writing a receipt whatever the outcome.
    async fn elevation_grant(
        &self,
        caller: &Caller,
        req: ElevationRequest,
    ) -> Result<Elevation, StoreError>;
    /// Revoke one of the caller's elevations, with a receipt.
    async fn elevation_revoke(
        &self,
        caller: &Caller,
        id: ElevationId,
        digest: &str,
    ) -> Result<Elevation, StoreError>;
    /// Record a newly initialized MCP connection for the caller, with the
    /// client's initialize parameters so another replica can restore it,
    /// and open its tracer session; `rate_limited` when it would take the
    /// credential or the tenant past `caps`, counted inside the write, so
    /// initializes that race (on any replica) are counted one after another.
    async fn connection_open(
        &self,
        caller: &Caller,
        connection_id: &str,
        init_params: Option<Value>,
        caps: ConnectionCaps,
    ) -> Result<(), StoreError>;
}

/// A briefing's recall for its missions ([`flow::mission_recalls`]), read
/// once the start or resume has committed, outside its write. The session
/// is open by then: a search that fails leaves its mission's artifacts
/// empty rather than fail a call whose write stands (a client told
/// "nothing was written" would start again, and leave this session open).
async fn with_mission_recall<B: Reads + ?Sized>(
    store: &B,
    caller: &Caller,
    mut opened: SessionBriefing,
) -> SessionBriefing {
    let recalls = flow::mission_recalls(&opened.session.project, &opened.briefing);
    for (mission, q) in recalls {
        let artifacts = store.recall(&caller.tenant, &q).await.unwrap_or_else(|_| {
            metrics::counter!("brain_briefing_recalls_failed_total").increment(1);
            Vec::new()
        });
        opened
            .briefing
            .recall
            .push(MissionRecall { mission, artifacts });
    }
    opened
}

#[async_trait]
impl<B: Backend + Reads> SessionWrites for B {
    async fn start_session(
        &self,
        caller: &Caller,
        req: StartRequest,
    ) -> Result<SessionBriefing, StoreError> {
        let tx = self.write(&caller.tenant).await?;
        let opened = flow::start(tx, caller, req, self.idle_secs()).await?;
        Ok(with_mission_recall(self, caller, opened).await)
    }

    async fn bind_session(
        &self,
        caller: &Caller,
        req: BindRequest,
    ) -> Result<BindOutcome, StoreError> {
        flow::bind(self.write(&caller.tenant).await?, caller, &req).await
    }

    async fn resume_session(
        &self,
        caller: &Caller,
        req: ResumeRequest,
    ) -> Result<SessionBriefing, StoreError> {
        let tx = self.write(&caller.tenant).await?;
        let resumed = flow::resume(tx, caller, &req, self.idle_secs()).await?;
        Ok(with_mission_recall(self, caller, resumed).await)
    }

    async fn end_session(&self, caller: &Caller, req: EndRequest) -> Result<Value, StoreError> {
        let out = end_merging(self, caller, req).await?;
        self.announce_close(&caller.tenant, &out);
        Ok(out)
    }

    async fn relay_session(&self, caller: &Caller, req: RelayRequest) -> Result<Value, StoreError> {
        let tx = self.write(&caller.tenant).await?;
        let out = flow::close(tx, caller, &req.end, Some(&req.to_client_key)).await?;
        self.announce_close(&caller.tenant, &out);
        Ok(out)
    }

    async fn end_with_documents(
        &self,
        caller: &Caller,
        req: EndRequest,
        bodies: Vec<(DocumentKind, String)>,
    ) -> Result<EndedWithDocuments, StoreError> {
        let tx = self.write(&caller.tenant).await?;
        let out = flow::end_with_documents(tx, caller, &req, &bodies).await?;
        if let Some(closed) = &out.closed {
            self.announce_close(&caller.tenant, closed);
        }
        Ok(out)
    }

    async fn abandon_session(
        &self,
        caller: &Caller,
        req: AbandonRequest,
    ) -> Result<Value, StoreError> {
        flow::abandon(self.write(&caller.tenant).await?, caller, &req).await
    }

    async fn remember(
        &self,
        caller: &Caller,
        req: RememberRequest,
    ) -> Result<Artifact, StoreError> {
        flow::remember(self.write(&caller.tenant).await?, caller, req).await
    }

    async fn todo_ack(
        &self,
        caller: &Caller,
        req: TodoAckRequest,
    ) -> Result<TodoAckOutcome, StoreError> {
        flow::todo_ack(self.write(&caller.tenant).await?, caller, &req).await
    }

    async fn document_put(
        &self,
        caller: &Caller,
        put: DocumentPut,
    ) -> Result<Document, StoreError> {
        flow::document_put(self.write(&caller.tenant).await?, caller, &put).await
    }

    async fn elevation_grant(
        &self,
        caller: &Caller,
        req: ElevationRequest,
    ) -> Result<Elevation, StoreError> {
        flow::elevation_grant(self.write(&caller.tenant).await?, caller, &req).await
    }

    async fn elevation_revoke(
        &self,
        caller: &Caller,
        id: ElevationId,
        digest: &str,
    ) -> Result<Elevation, StoreError> {
        flow::elevation_revoke(self.write(&caller.tenant).await?, caller, id, digest).await
    }

    async fn connection_open(
        &self,
        caller: &Caller,
        connection_id: &str,
        init_params: Option<Value>,
        caps: ConnectionCaps,
    ) -> Result<(), StoreError> {
        let tx = self.write(&caller.tenant).await?;
        let idle_since =
            crate::model::now_micros() - chrono::Duration::seconds(self.connection_idle_secs());
        flow::connection_open(tx, caller, connection_id, init_params, caps, idle_since).await
    }
}

/// How many times a merging end merges again because others wrote first
/// before it closes as an end without merge. Each round one of the racing
/// closers wins, so this many closers racing on one focus all merge.
pub const MERGE_ROUNDS: usize = 32;

/// An end, merging when asked (`MergeStep`): each stop of the close is
/// answered by a merge onto the body it found, outside any transaction,
/// and the close is called again with the merged body.
async fn end_merging<B: Backend + ?Sized>(
    store: &B,
    caller: &Caller,
    mut req: EndRequest,
) -> Result<Value, StoreError> {
    // The body read, and which focus it was read from.
    let mut base: Option<(i64, String, Option<SlotName>)> = None;
    let mut onto = req.expected_focus_revision;
    for _ in 0..MERGE_ROUNDS {
        let tx = store.write(&caller.tenant).await?;
        let need = match flow::close(tx, caller, &req, None).await {
            Err(StoreError::MergeNeeded(need)) => need,
            other => return other,
        };
        let MergeNeeded {
            base: read,
            current,
            target,
        } = *need;
        onto = current.revision;
        if let Some(body) = read {
            base = Some((req.expected_focus_revision, body, target.clone()));
        }
        let (base_revision, base_body) = match &base {
            Some((revision, body, read_from)) if *read_from == target => (*revision, body.clone()),
            other => {
                let why = match other {
                    None => "the revision read is not in the focus history",
                    Some(_) => "the session was bound to another focus while merging",
                };
                req.merge = MergeStep::Failed(
                    Merged::NotMerged(why)
                        .failure_note(req.expected_focus_revision, current.revision)
                        .unwrap_or_default(),
                );
                continue;
            }
        };
        let merged = crate::merge::three_way(
            caller.tenant.as_str(),
            base_body,
            req.next_focus.clone(),
            current.body,
        )
        .await;
        req.merge = match merged {
            Merged::Clean(text) => MergeStep::Onto {
                base_revision,
                onto: current.revision,
                target,
                text,
            },
            other => MergeStep::Failed(
                other
                    .failure_note(base_revision, current.revision)
                    .unwrap_or_default(),
            ),
        };
    }
    // Out of rounds: the close goes on without merging (conflicted). A
    // failure found in the last round keeps its own note.
    if matches!(req.merge, MergeStep::Failed(_)) {
        let tx = store.write(&caller.tenant).await?;
        return flow::close(tx, caller, &req, None).await;
    }
    req.merge = MergeStep::Failed(
        Merged::NotMerged("others kept writing the focus first")
            .failure_note(req.expected_focus_revision, onto)
            .unwrap_or_default(),
    );
    let tx = store.write(&caller.tenant).await?;
    flow::close(tx, caller, &req, None).await
}

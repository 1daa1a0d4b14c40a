//! A tenant's rows as plain maps, and the reads the write port makes of
//! them.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde_json::Value;

use brain_core::ids::{ArtifactId, ProjectKey, SessionId, SlotName};
use brain_core::memory::{Brief, Document, DocumentKind, RecallHit};
use brain_core::model::{
    Artifact, ArtifactKind, CredentialKind, Focus, Revision, Role, Session, SessionKind,
    SessionStatus,
};
use brain_core::model::{Caller, now_micros};
use brain_core::operators::Elevation;
use brain_core::receipt::{GENESIS_HASH, Receipt};
use brain_core::rules;
use brain_core::rules::CloseRecord;
use brain_core::store::{
    BriefingSources, COUNTED_UP_TO, FocusRef, NamedBody, RecallQuery, RecentSession, Unattributed,
};

/// A target body's key: the project, and the slot's name (`""` for the base focus).
pub type FocusKey = (ProjectKey, String);

/// One tenant's rows.
#[derive(Debug, Clone, Default)]
pub struct Tables {
    /// Whether the tenant and its ledger tip exist.
    pub provisioned: bool,
    pub projects: BTreeSet<ProjectKey>,
    /// The base focus and the slots of each project, as they stand.
    pub focus: BTreeMap<FocusKey, Focus>,
    /// Every revision of each body.
    pub history: BTreeMap<(FocusKey, Revision), HistoryRow>,
    /// Each project's daily briefs by day (`YYYY-MM-DD`).
    pub briefs: BTreeMap<(ProjectKey, String), Brief>,
    /// Each session with the stored close that answers its replays.
    pub sessions: BTreeMap<SessionId, (Session, Option<CloseRecord>)>,
    pub artifacts: Vec<Artifact>,
    pub documents: BTreeMap<(ProjectKey, &'static str, String), Document>,
    /// The receipt chain, oldest first.
    pub receipts: Vec<Receipt>,
    /// Each elevation with the credential that holds it.
    pub elevations: Vec<(String, Elevation)>,
    pub connections: BTreeMap<String, Connection>,
}

/// A revision of a body: what was written, by which session, under which
/// receipt, when.
#[derive(Debug, Clone)]
pub struct HistoryRow {
    pub body: String,
    pub session_id: SessionId,
    pub receipt_seq: i64,
    pub created_at: DateTime<Utc>,
}

/// An MCP connection's record.
#[derive(Debug, Clone)]
pub struct Connection {
    pub credential_kind: CredentialKind,
    pub credential_id: String,
    pub role: Role,
    pub init_params: Option<Value>,
    pub tracer: SessionId,
    pub last_seen_at: DateTime<Utc>,
    pub closed: bool,
    /// The session a profile's start recorded on it, and when.
    pub started: Option<(SessionId, DateTime<Utc>)>,
}

pub fn focus_key(project: &ProjectKey, slot: Option<&SlotName>) -> FocusKey {
    (
        project.clone(),
        slot.map_or("", SlotName::as_str).to_owned(),
    )
}

impl Tables {
    /// The tenant's ledger tip: `(seq, hash)`.
    pub fn tip(&self) -> (i64, &str) {
        self.receipts
            .last()
            .map_or((0, GENESIS_HASH), |r| (r.seq, r.hash.as_str()))
    }

    pub fn focus_of(&self, project: &ProjectKey, slot: Option<&SlotName>) -> Focus {
        let key = focus_key(project, slot);
        self.focus.get(&key).cloned().unwrap_or_else(Focus::empty)
    }

    pub fn document(&self, project: &ProjectKey, kind: DocumentKind, name: &str) -> Document {
        let key = (project.clone(), kind.as_str(), name.to_owned());
        self.documents
            .get(&key)
            .cloned()
            .unwrap_or_else(|| Document::empty(kind, name))
    }

    /// A document's body once written (revision 1 or more).
    pub fn written(&self, project: &ProjectKey, kind: DocumentKind) -> Option<String> {
        let d = self.document(project, kind, "");
        (d.revision > 0).then_some(d.body)
    }

    pub fn mental_models(&self, project: &ProjectKey) -> impl Iterator<Item = &Document> {
        self.documents
            .iter()
            .filter(move |((p, k, _), _)| p == project && *k == DocumentKind::MentalModel.as_str())
            .map(|(_, d)| d)
    }

    fn agent_sessions<'a>(&'a self, project: &'a ProjectKey) -> impl Iterator<Item = &'a Session> {
        self.sessions
            .values()
            .map(|(s, _)| s)
            .filter(move |s| &s.project == project && s.kind == SessionKind::Agent)
    }

    /// The project's open agent sessions, counted up to `up_to`.
    pub fn open_agent_sessions(&self, project: &ProjectKey, up_to: i64) -> i64 {
        let open = self.agent_sessions(project);
        let up_to = usize::try_from(up_to).unwrap_or(usize::MAX);
        count(open.filter(|s| s.status == SessionStatus::Open).take(up_to))
    }

    /// This client's newest other open agent session in the project.
    pub fn previous_open<'a>(&'a self, session: &'a Session) -> Option<&'a Session> {
        self.agent_sessions(&session.project)
            .filter(|s| s.status == SessionStatus::Open)
            .filter(|s| s.client_key == session.client_key && s.session_id != session.session_id)
            .max_by_key(|s| s.opened_at)
    }

    /// The last 5 closed agent sessions, newest first.
    pub fn recent_closed(&self, project: &ProjectKey) -> Vec<RecentSession> {
        let mut closed: Vec<&Session> = self
            .agent_sessions(project)
            .filter(|s| s.status != SessionStatus::Open)
            .collect();
        closed.sort_by(|a, b| {
            b.ended_at
                .cmp(&a.ended_at)
                .then(a.session_id.cmp(&b.session_id))
        });
        closed
            .into_iter()
            .take(5)
            .map(|s| RecentSession {
                session_id: s.session_id,
                status: s.status,
                summary: s.summary.clone(),
                ended_at: s.ended_at,
            })
            .collect()
    }

    pub fn ledger_size(&self, session: SessionId) -> i64 {
        counted(
            self.artifacts
                .iter()
                .filter(|a| a.session_id == Some(session)),
        )
    }

    pub fn inbox_count(&self, project: &ProjectKey) -> i64 {
        counted(self.artifacts.iter().filter(|a| {
            &a.project == project && a.kind == ArtifactKind::Todo && a.acknowledged_at.is_none()
        }))
    }

    /// The project's artifacts of no session created from `from` to `until`.
    pub fn unattributed(
        &self,
        project: &ProjectKey,
        from: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Unattributed {
        let mut loose: Vec<&Artifact> = self
            .artifacts
            .iter()
            .filter(|a| &a.project == project && a.session_id.is_none())
            .filter(|a| a.created_at >= from && a.created_at <= until)
            .collect();
        loose.sort_by_key(|a| (a.created_at, a.artifact_id));
        Unattributed {
            count: counted(loose.iter()),
            ids: loose.iter().take(20).map(|a| a.artifact_id).collect(),
        }
    }

    pub fn recall(&self, q: &RecallQuery) -> Vec<RecallHit> {
        crate::recall::recall(self.artifacts.iter(), q)
    }

    /// A session list's window, newest first: the project's `cap` newest
    /// agent sessions past `q.after` (of `q.status`, when given; at or after
    /// `q.from`).
    pub fn session_window(
        &self,
        q: &brain_core::store::SessionListQuery,
        cap: i64,
    ) -> Vec<&Session> {
        let mut found: Vec<&Session> = self
            .sessions
            .values()
            .map(|(s, _)| s)
            .filter(|s| s.project == q.project && s.kind == SessionKind::Agent)
            .filter(|s| q.status.is_none_or(|st| s.status == st))
            .filter(|s| q.after.is_none_or(|a| (s.opened_at, s.session_id) < a))
            .filter(|s| q.from.is_none_or(|f| (s.opened_at, s.session_id) >= f))
            .collect();
        found.sort_by_key(|s| std::cmp::Reverse((s.opened_at, s.session_id)));
        found.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
        found
    }

    pub fn recall_window_end(
        &self,
        q: &RecallQuery,
    ) -> Option<(chrono::DateTime<chrono::Utc>, ArtifactId)> {
        crate::recall::window_end(self.artifacts.iter(), q)
    }

    pub fn artifact_states(
        &self,
        project: &ProjectKey,
        ids: &[ArtifactId],
    ) -> Vec<(ArtifactId, ArtifactKind, bool)> {
        let mut found: Vec<_> = self
            .artifacts
            .iter()
            .filter(|a| &a.project == project && ids.contains(&a.artifact_id))
            .map(|a| (a.artifact_id, a.kind, a.acknowledged_at.is_some()))
            .collect();
        found.sort_by_key(|(id, _, _)| *id);
        found
    }

    /// Everything the briefing reads but its mission recall.
    pub fn briefing_sources(&self, session: &Session) -> BriefingSources {
        let (rows, project) = (self, &session.project);
        let base = rows.focus_of(project, None);
        BriefingSources {
            base: FocusRef {
                body: base.body,
                revision: base.revision,
            },
            previous_open: rows.previous_open(session).map(|s| {
                let size = rows.ledger_size(s.session_id);
                (s.session_id, s.opened_at, s.last_activity_at, size)
            }),
            executive_state: rows.written(project, DocumentKind::ExecutiveState),
            sync_note: rows.written(project, DocumentKind::SyncNote),
            mental_models: rows
                .mental_models(project)
                .map(|d| NamedBody {
                    name: d.name.clone(),
                    body: d.body.clone(),
                })
                .collect(),
            brief: rows
                .briefs
                .range((project.clone(), String::new())..)
                .take_while(|((p, _), _)| p == project)
                .last()
                .map(|(_, b)| Brief::at(b.body.clone(), b.generated_at, now_micros())),
            inbox_count: rows.inbox_count(project),
            open_sessions: rows.open_agent_sessions(project, COUNTED_UP_TO),
            recent_sessions: rows.recent_closed(project),
        }
    }

    /// Whether an elevation of the caller's credential, live at `now`,
    /// covers its MCP connection (or, without one, `session`).
    pub fn elevation_active(
        &self,
        caller: &Caller,
        session: SessionId,
        now: DateTime<Utc>,
    ) -> bool {
        if !rules::elevation_can_count(caller) {
            return false;
        }
        let open = |id: &String| self.connections.get(id).is_none_or(|c| !c.closed);
        self.elevations.iter().any(|(held_by, e)| {
            let target = match (&e.mcp_session_id, &caller.connection_id) {
                (Some(on), Some(used)) => on == used,
                (_, None) => e.session_id == Some(session),
                (None, Some(_)) => false,
            };
            held_by == &caller.credential_id
                && e.revoked_at.is_none()
                && e.expires_at > now
                && e.mcp_session_id.as_ref().is_none_or(open)
                && target
        })
    }

    /// Open connections last seen after `since`: `(the caller's credential
    /// with its role, the whole tenant)`.
    pub fn open_connections(&self, caller: &Caller, since: DateTime<Utc>) -> (i64, i64) {
        let open = || {
            self.connections
                .values()
                .filter(move |c| !c.closed && c.last_seen_at > since)
        };
        let mine = open().filter(|c| {
            c.credential_kind == caller.kind
                && c.credential_id == caller.credential_id
                && c.role == caller.role
        });
        (count(mine), count(open()))
    }

    /// Remove the project and everything of it but its receipts; whether it existed.
    pub fn delete_project(&mut self, project: &ProjectKey) -> bool {
        if !self.projects.remove(project) {
            return false;
        }
        self.focus.retain(|(p, _), _| p != project);
        self.history.retain(|((p, _), _), _| p != project);
        self.briefs.retain(|(p, _), _| p != project);
        self.sessions.retain(|_, (s, _)| &s.project != project);
        self.artifacts.retain(|a| &a.project != project);
        self.documents.retain(|(p, _, _), _| p != project);
        true
    }
}

fn count<T>(items: impl Iterator<Item = T>) -> i64 {
    i64::try_from(items.count()).unwrap_or(i64::MAX)
}

/// A count in an answer, which stops where the other stores' do.
fn counted<T>(items: impl Iterator<Item = T>) -> i64 {
    let most = usize::try_from(COUNTED_UP_TO).unwrap_or(usize::MAX);
    count(items.take(most))
}

//! Profile `brain-core` (seed `001_…`): one tool, `brain_session`, that opens
//! (`phase: "start"`) or closes (`phase: "end"`) the agent's working session.
//! A thin adapter: start is `brain_session_start`; end replaces the project's
//! documents and closes the session without touching the focus, in one
//! transaction with one receipt (`flow::end_with_documents`) — the same
//! store, rules and receipt chain.

use brain_core::DomainError;
use brain_core::ids::{ClientKey, ProjectKey, SessionId};
use brain_core::memory::{DocumentKind, parse_executive_state};
use brain_core::requests::{EndRequest, ResumeRequest, StartRequest, limits};
use brain_core::store::SessionListQuery;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::mcp::args::JsonBody;

mod stubs;
use crate::mcp::{args, schemas};
use crate::tools::{Hints, ToolCtx, ToolResult, define};
use stubs::{executive_state_body, stub_critique, stub_executive_state, stub_sync};

pub const NAME: &str = "brain_session";

const DESCRIPTION: &str = "Open (phase='start') or close (phase='end') a working session that \
ends by replacing the project's executive state, critique and sync note, not its focus: start \
returns the briefing; end writes the three documents (whole, over any newer edit) and closes the \
session. Prefer brain_session_start and brain_session_end when you will write a next focus. Call start once at the \
beginning of a conversation and end once when the user is done; not for single facts \
(brain_remember), nor when you carry a next focus (brain_session_end) or drop the work \
(brain_session_abandon). Only your own brain-core sessions can be ended (else \
client_key_mismatch). Each omitted body is replaced by a stub built from the session's \
brain_remember calls, on a second end too: a second end overwrites the documents of the first. \
Errors: session_not_found, client_key_mismatch, tracer_session, invalid_argument.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// 'start' opens a session (or, with session_id, resumes it) and returns the briefing; 'end' replaces the three documents and closes the session.
    pub phase: Phase,
    /// Your session id (sess_ + 32 hex). Omit to use the one brain_session start opened on this connection; on another connection pass the id start returned.
    #[serde(default)]
    pub session_id: Option<String>,
    /// start: the project to work in (letters, digits, . _ / -; default "main"); end: omit, or the session's own.
    #[serde(default)]
    pub project: Option<String>,
    /// end only: full body that replaces executive_state — a JSON object {objective, missions[], pending_decisions[]} (or its text), or markdown (kept whole, its first line as the objective). Omit for a stub.
    #[serde(default)]
    pub executive_state: Option<JsonBody>,
    /// end only: full markdown body that replaces the session critique (non-blank). Omit for a stub.
    #[serde(default)]
    pub critique: Option<String>,
    /// end only: full markdown body of the cross-agent sync note (non-blank). Omit for a stub.
    #[serde(default)]
    pub sync: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Start,
    End,
}

pub fn definition() -> Tool {
    let props = schemas::props(json!({
        "phase": {"type": "string", "enum": ["start", "end"], "description": "The phase this call ran."},
        "session_id": {"type": "string", "description": "The session this call opened or closed."},
        "project": {"type": "string", "description": "The session's project."},
        "briefing": {"type": ["object", "null"], "description": "start: brief {body, generated_at, stale}, executive_state, mental_models, recall, inbox_count, recovery, base_focus, sync_note."},
        "status": {"type": ["string", "null"], "description": "end: the session's status (ended)."},
        "closed_now": {"type": ["boolean", "null"], "description": "end: true when this call closed the session; false when an earlier (or concurrent) end had (its documents are overwritten all the same)."},
        "documents": {"type": ["object", "null"], "description": "end: for executive_state, critique and sync_note, {revision, stub} as written."},
        "signals_moved": {"type": ["array", "null"], "items": {"type": "string"}, "description": "end: which of focus_revision, ledger_size, pending_decisions, open_sessions changed since the session opened."}
    }));
    define::<Args>(
        NAME,
        "Open or close the working session",
        DESCRIPTION,
        schemas::output(props, &["phase", "session_id"]),
        Hints {
            read_only: false,
            destructive: true,
            idempotent: false,
        },
    )
}

pub async fn call(ctx: &ToolCtx<'_>, raw: JsonObject) -> ToolResult {
    let a: Args = args::parse_tool(raw)?;
    match a.phase {
        Phase::Start => start(ctx, a).await,
        Phase::End => end(ctx, a).await,
    }
}

/// The client identity this profile's sessions carry: one per credential
/// subject, so its `recovery` finds the same caller's unclosed session.
fn client_key(ctx: &ToolCtx<'_>) -> String {
    // Characters, not bytes: a subject may be non-ASCII, and a byte cut
    // inside a character would panic.
    format!("brain-core:{}", ctx.caller.subject)
        .chars()
        .take(limits::CLIENT_KEY_MAX_CHARS)
        .collect()
}

async fn start(ctx: &ToolCtx<'_>, a: Args) -> ToolResult {
    for (field, given) in [
        ("executive_state", a.executive_state.is_some()),
        ("critique", a.critique.is_some()),
        ("sync", a.sync.is_some()),
    ] {
        if given {
            return Err(DomainError::invalid_argument(field, "is for phase 'end' only").into());
        }
    }
    let key = client_key(ctx);
    if let Some(id) = &a.session_id {
        // "Keep the one the server opened": start with an id resumes it.
        let resumed = ctx
            .store
            .resume_session(
                &ctx.caller,
                ResumeRequest {
                    session_id: SessionId::parse(id)?,
                    expected_client_key: key,
                    door: brain_core::rules::Door::Profile,
                },
            )
            .await?;
        note_started(ctx, resumed.session.session_id).await;
        return Ok(json!({
            "phase": "start",
            "session_id": resumed.session.session_id,
            "project": resumed.session.project.as_str(),
            "briefing": serde_json::to_value(&resumed.briefing).map_err(brain_core::error::StoreError::backend)?,
        }));
    }
    let project = ProjectKey::parse_for_caller(a.project.as_deref().unwrap_or("main"))?;
    let req = StartRequest {
        client_key: ClientKey::parse("client_key", &key)?,
        digest: args::digest(&json!({"phase": "start", "project": project.as_str()}), &[]),
        project: project.clone(),
        slot: None,
    };
    let started = ctx.store.start_session(&ctx.caller, req).await?;
    note_started(ctx, started.session.session_id).await;
    Ok(json!({
        "phase": "start",
        "session_id": started.session.session_id,
        "project": project.as_str(),
        "briefing": serde_json::to_value(&started.briefing).map_err(brain_core::error::StoreError::backend)?,
    }))
}

/// Record on the connection the session its start opened, so an end that
/// omits the id finds it however many receipts the tenant writes meanwhile.
/// The session is open whatever happens here: a failure is logged, and such
/// an end looks among the tenant's newest receipts, or is told to pass the
/// id the start answered.
async fn note_started(ctx: &ToolCtx<'_>, session: SessionId) {
    let Some(conn) = &ctx.caller.connection_id else {
        return;
    };
    if let Err(e) = ctx
        .store
        .connection_started(&ctx.caller.tenant, conn, session)
        .await
    {
        tracing::warn!(error = %e, "brain_session start: the connection did not record its session");
    }
}

async fn end(ctx: &ToolCtx<'_>, a: Args) -> ToolResult {
    let exec_given = given_executive_state(&a)?;
    let tenant = &ctx.caller.tenant;
    let session_id = session_to_end(ctx, a.session_id.as_deref()).await?;
    let session = ctx.store.session_get(tenant, session_id).await?.session;
    // Every check that can refuse runs before anything is written.
    check_may_end(ctx, &session, a.project.as_deref())?;
    let project = session.project.clone();
    let ledger = ctx.store.session_ledger(tenant, session_id, 200).await?;
    let before_exec = ctx
        .store
        .document_get(tenant, &project, DocumentKind::ExecutiveState, "")
        .await?;
    let before_state = (before_exec.revision > 0)
        .then(|| parse_executive_state(&before_exec.body).ok())
        .flatten();
    let bodies = end_bodies(
        ctx,
        &a,
        session_id,
        exec_given,
        before_state.as_ref(),
        &ledger,
    );
    // The documents, each replaced whole over any newer edit, and the
    // session closed without touching the focus, in one transaction; a
    // second end only replaces the documents.
    let req = end_request(ctx, session_id, a.critique.as_deref(), ledger.len());
    let writes = bodies.iter().map(|(k, b, _)| (*k, b.clone())).collect();
    let ended = ctx
        .store
        .end_with_documents(&ctx.caller, req, writes)
        .await?;
    let documents: serde_json::Map<String, Value> = bodies
        .iter()
        .zip(&ended.revisions)
        .map(|((kind, _, given), revision)| {
            let written = json!({"revision": revision, "stub": !given});
            (kind.as_str().to_owned(), written)
        })
        .collect();
    let after_state = ctx
        .store
        .document_get(tenant, &project, DocumentKind::ExecutiveState, "")
        .await
        .ok()
        .and_then(|d| parse_executive_state(&d.body).ok());
    let exec_moved_during = before_exec
        .updated_at
        .is_some_and(|at| at > session.opened_at);
    let moved = (exec_moved_during, before_state, after_state);
    let signals = signals_moved(ctx, &session, &ledger, moved).await?;
    let status = ctx
        .store
        .session_get(tenant, session_id)
        .await?
        .session
        .status;
    Ok(json!({
        "phase": "end",
        "session_id": session_id,
        "project": project.as_str(),
        "status": status.as_str(),
        "closed_now": ended.closed.is_some(),
        "documents": documents,
        "signals_moved": signals,
    }))
}

/// The three documents an end writes, each with whether the agent gave it:
/// an omitted one is a stub made from the state before and the ledger.
fn end_bodies(
    ctx: &ToolCtx<'_>,
    a: &Args,
    session_id: SessionId,
    exec_given: Option<String>,
    before_state: Option<&Value>,
    ledger: &[brain_core::model::Artifact],
) -> [(DocumentKind, String, bool); 3] {
    let session_id = &session_id;
    [
        (
            DocumentKind::ExecutiveState,
            exec_given.unwrap_or_else(|| stub_executive_state(before_state, ledger)),
            a.executive_state.is_some(),
        ),
        (
            DocumentKind::Critique,
            a.critique
                .clone()
                .unwrap_or_else(|| stub_critique(session_id, ledger)),
            a.critique.is_some(),
        ),
        (
            DocumentKind::SyncNote,
            a.sync
                .clone()
                .unwrap_or_else(|| stub_sync(session_id, &ctx.caller.subject, ledger)),
            a.sync.is_some(),
        ),
    ]
}

/// The bodies an end was given, each bounded and not blank; the executive
/// state's as brain keeps it.
fn given_executive_state(a: &Args) -> Result<Option<String>, DomainError> {
    let exec_text = a.executive_state.clone().map(JsonBody::into_text);
    for (field, body) in [
        ("executive_state", &exec_text),
        ("critique", &a.critique),
        ("sync", &a.sync),
    ] {
        if let Some(b) = body {
            args::max_bytes(field, b, limits::FOCUS_MAX_BYTES)?;
            brain_core::rules::require_not_blank(field, b)?;
        }
    }
    exec_text.as_deref().map(executive_state_body).transpose()
}

/// The session an end names, or the one `brain_session` start opened on
/// this connection.
async fn session_to_end(
    ctx: &ToolCtx<'_>,
    given: Option<&str>,
) -> Result<SessionId, brain_core::error::StoreError> {
    if let Some(id) = given {
        return Ok(SessionId::parse(id)?);
    }
    let found = match &ctx.caller.connection_id {
        Some(conn) => {
            ctx.store
                .session_started_on(&ctx.caller.tenant, conn)
                .await?
        }
        None => None,
    };
    Ok(found.ok_or_else(|| {
        DomainError::invalid_argument(
            "session_id",
            "is required: no session was started on this connection (pass the session_id brain_session start returned)",
        )
    })?)
}

/// Whether this caller may end `session` with `brain_session`: a working
/// session (not a runtime or tracer one) its own brain_session start
/// opened, in the project it names, if any.
fn check_may_end(
    ctx: &ToolCtx<'_>,
    session: &brain_core::model::Session,
    project: Option<&str>,
) -> Result<(), DomainError> {
    if session.project.as_str() == ProjectKey::RUNTIME {
        return Err(DomainError::session_not_found());
    }
    if session.kind == brain_core::model::SessionKind::Tracer {
        return Err(DomainError::new(
            brain_core::ErrorCode::TracerSession,
            "this is a connection's tracer session; end your own working session",
        ));
    }
    // The key is derived from the subject, so it is not enough: the session
    // must be this credential's, with this role, before anything is written.
    if session.client_key.as_str() != client_key(ctx)
        || !brain_core::rules::opened_by_caller(session, &ctx.caller)
    {
        return Err(DomainError::new(
            brain_core::ErrorCode::ClientKeyMismatch,
            "this session was not opened by your brain_session start; end your own session",
        ));
    }
    // end finds the project from the session; naming it is harmless, naming
    // another is a mistake worth saying.
    match project {
        Some(p) if p != session.project.as_str() => Err(DomainError::invalid_argument(
            "project",
            format!(
                "names another project than the session's ({}); omit it on end",
                session.project.as_str()
            ),
        )),
        _ => Ok(()),
    }
}

/// The close a `brain_session` end asks for: keep the focus, summarized by
/// the critique's first line (or the count of the session's artifacts).
fn end_request(
    ctx: &ToolCtx<'_>,
    session_id: SessionId,
    critique: Option<&str>,
    artifacts: usize,
) -> EndRequest {
    let summary = critique
        .and_then(|c| c.lines().find(|l| !l.trim().is_empty()))
        .map(|l| l.trim().trim_start_matches('#').trim().to_owned())
        .filter(|l| !l.is_empty())
        .unwrap_or_else(|| format!("closed with brain_session end ({artifacts} artifacts)"));
    EndRequest {
        session_id,
        expected_client_key: client_key(ctx),
        summary,
        next_focus: String::new(),
        expected_focus_revision: 0,
        nothing_to_capture_reason: None,
        allow_focus_shrink: false,
        dry_run: false,
        keep_focus: true,
        door: brain_core::rules::Door::Profile,
        digest: args::digest(&json!({"phase": "end", "session_id": session_id}), &[]),
        merge: Default::default(),
    }
}

/// Which trait signals moved since the session opened: the pending decisions
/// moved when the executive state was written during the session (by anyone)
/// or this end changed them.
async fn signals_moved(
    ctx: &ToolCtx<'_>,
    session: &brain_core::model::Session,
    ledger: &[brain_core::model::Artifact],
    (exec_moved_during, before, after): (bool, Option<Value>, Option<Value>),
) -> Result<Vec<&'static str>, brain_core::error::StoreError> {
    let tenant = &ctx.caller.tenant;
    let mut moved = Vec::new();
    let focus = ctx.store.focus_get(tenant, &session.project, None).await?;
    if focus.revision != session.started_focus_revision {
        moved.push("focus_revision");
    }
    if !ledger.is_empty() {
        moved.push("ledger_size");
    }
    let pending = |s: &Option<Value>| {
        s.as_ref()
            .and_then(|v| v.get("pending_decisions"))
            .cloned()
            .unwrap_or_else(|| json!([]))
    };
    if exec_moved_during || pending(&before) != pending(&after) {
        moved.push("pending_decisions");
    }
    let others = ctx
        .store
        .session_list(
            tenant,
            &SessionListQuery {
                project: session.project.clone(),
                status: None,
                after: None,
                from: None,
                limit: 100,
                slot: None,
                client_key: None,
            },
        )
        .await?;
    let changed = others.iter().any(|d| {
        d.session.session_id != session.session_id
            && (d.session.opened_at > session.opened_at
                || d.session.ended_at.is_some_and(|t| t > session.opened_at))
    });
    if changed {
        moved.push("open_sessions");
    }
    Ok(moved)
}

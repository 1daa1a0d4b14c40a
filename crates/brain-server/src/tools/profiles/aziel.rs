//! Profile `aziel` (seed `003_…`): raw runtime sessions, opened with
//! `runtime_session_open` and sealed with `runtime_session_close`, answered in
//! the seed's envelope (`code`, `status`, `result`, `display`, `ledger_tip`).
//! A raw session is a brain session in the reserved project `_runtime`; a
//! close is `brain_session_end` without touching any focus, so it lands in the
//! same receipt chain. Raw sessions never closed expire after 6 h — the only
//! sessions besides tracers that the server closes by itself.

use brain_core::DomainError;
use brain_core::error::StoreError;
use brain_core::ids::{ClientKey, ProjectKey, SessionId};
use brain_core::model::{SessionStatus, rfc3339};
use brain_core::requests::{EndRequest, StartRequest, limits};
use brain_core::store::ReceiptQuery;
use rmcp::model::JsonObject;
use serde_json::{Value, json};

use crate::mcp::args;
use crate::tools::{Answer, SeedRefusal, ToolCtx};

/// A seed tool's answer: its envelope, or its refusal's.
type SeedResult = Result<Answer, StoreError>;

pub const OPEN: &str = "runtime_session_open";
pub const CLOSE: &str = "runtime_session_close";

/// How long a raw runtime session may stay unused before the server closes it.
pub const RUNTIME_SESSION_SECS: i64 = 6 * 3600;

mod definitions;
pub use definitions::{CloseArgs, OpenArgs, close_definition, open_definition};

async fn tip(ctx: &ToolCtx<'_>) -> Result<Value, StoreError> {
    let (seq, hash) = ctx.store.ledger_tip(&ctx.caller.tenant).await?;
    Ok(json!({"seq": seq, "hash": hash}))
}

/// The seed's refusal envelope, answered as a tool error (`isError`).
async fn refuse(
    ctx: &ToolCtx<'_>,
    code: &str,
    status: u16,
    message: &str,
    next: &str,
    session: Option<&str>,
) -> SeedResult {
    let envelope = json!({
        "code": code,
        "status": status,
        "result": null,
        "refusal": {"code": code, "message": message},
        "display": {"title": "Refused", "summary": message, "next": next},
        "ledger_tip": tip(ctx).await?,
        "session_id": session,
    });
    Ok(Answer::Refused(SeedRefusal {
        code: code.to_owned(),
        summary: message.to_owned(),
        envelope,
    }))
}

pub async fn open(ctx: &ToolCtx<'_>, raw: JsonObject) -> SeedResult {
    let a: OpenArgs = match args::parse_tool(raw) {
        Ok(a) => a,
        Err(e) => return refusal_from(ctx, &e, None).await,
    };
    let key = match &a.client_key {
        Some(k) => k.clone(),
        None => {
            // Characters, not bytes: a subject may be non-ASCII, and a byte
            // cut inside a character would panic.
            format!("aziel:{}", ctx.caller.subject)
                .chars()
                .take(limits::CLIENT_KEY_MAX_CHARS)
                .collect()
        }
    };
    let client_key = match ClientKey::parse("client_key", &key) {
        Ok(k) => k,
        Err(e) => return refusal_from(ctx, &e, None).await,
    };
    let req = StartRequest {
        project: ProjectKey::runtime(),
        client_key,
        slot: None,
        digest: args::digest(&a, &[]),
    };
    let started = ctx.store.start_session(&ctx.caller, req).await?;
    let id = started.session.session_id;
    Ok(Answer::Done(json!({
        "code": "FG-OK",
        "status": 200,
        "result": {
            "session_id": id,
            "client_key": key,
            "opened_at": rfc3339(&started.session.opened_at),
            "expires_after_secs": RUNTIME_SESSION_SECS,
        },
        "display": {
            "title": "Session opened",
            "summary": format!("Raw session {id} is open."),
            "next": "Use this session_id for the runtime calls; close it with runtime_session_close only if the user asks.",
        },
        "refusal": null,
        "ledger_tip": tip(ctx).await?,
        "session_id": id,
    })))
}

/// A seed refusal not yet answered: its code, HTTP status, message and next step.
struct Refused {
    code: &'static str,
    status: u16,
    message: String,
    next: &'static str,
}

impl Refused {
    fn new(
        code: &'static str,
        status: u16,
        message: impl Into<String>,
        next: &'static str,
    ) -> Self {
        Self {
            code,
            status,
            message: message.into(),
            next,
        }
    }
}

/// Why a close stops before sealing: a refusal in the seed's envelope (with
/// the id the caller gave, once known), or a store failure.
enum Stop {
    Refused(Refused, Option<String>),
    Failed(StoreError),
}

/// The raw session a close names (the id as given, and the session), open,
/// confirmed and the caller's own, checked in the seed's order.
async fn sealable(
    ctx: &ToolCtx<'_>,
    a: &CloseArgs,
) -> Result<(String, brain_core::store::SessionDetail), Stop> {
    let given = match (&a.session_id, &a.id) {
        (Some(s), Some(i)) if s != i => {
            let why = "session_id and id are aliases and hold two different values; send one";
            let r = Refused::new(
                "invalid_argument",
                422,
                why,
                "Call again with only session_id.",
            );
            return Err(Stop::Refused(r, None));
        }
        (Some(s), _) | (None, Some(s)) => s.clone(),
        (None, None) => {
            let next = "Pass the session_id runtime_session_open returned.";
            let r = Refused::new("invalid_argument", 422, "session_id required", next);
            return Err(Stop::Refused(r, None));
        }
    };
    let not_found = || {
        let why = "no raw runtime session with this id in your tenant";
        Refused::new("session_not_found", 404, why, "Check the id.")
    };
    let Ok(session_id) = SessionId::parse(&given) else {
        return Err(Stop::Refused(not_found(), Some(given)));
    };
    // A raw session is one of `_runtime`'s; anything else is not one to seal here.
    let detail = match ctx.store.session_get(&ctx.caller.tenant, session_id).await {
        Ok(d) if d.session.project.as_str() == ProjectKey::RUNTIME => d,
        Ok(_) | Err(StoreError::Domain(_)) => return Err(Stop::Refused(not_found(), Some(given))),
        Err(e) => return Err(Stop::Failed(e)),
    };
    let refused = if detail.session.status != SessionStatus::Open {
        let why = format!(
            "the session is already sealed ({}); a close never reopens it",
            detail.session.status
        );
        Some(Refused::new(
            "session_closed",
            409,
            why,
            "Nothing to do: the session stays sealed.",
        ))
    } else if !a.confirm && !a.dry_run {
        let why = "sealing a session needs confirm=true (or dry_run=true to preview)";
        let next = "Ask the user to confirm, then call again with confirm=true.";
        Some(Refused::new("MCP-CONFIRM-REQUIRED", 428, why, next))
    } else if !brain_core::rules::opened_by_caller(&detail.session, &ctx.caller) {
        // Only the session's own identity may seal it (brain's client-key guard).
        let why = "this raw session was opened by another credential or role; only it, with that role, can seal it";
        Some(Refused::new(
            "client_key_mismatch",
            409,
            why,
            "Leave it to its owner or to expiry.",
        ))
    } else {
        None
    };
    match refused {
        Some(r) => Err(Stop::Refused(r, Some(given))),
        None => Ok((given, detail)),
    }
}

pub async fn close(ctx: &ToolCtx<'_>, raw: JsonObject) -> SeedResult {
    let a: CloseArgs = match args::parse_tool(raw) {
        Ok(a) => a,
        Err(e) => return refusal_from(ctx, &e, None).await,
    };
    let (given, detail) = match sealable(ctx, &a).await {
        Ok(found) => found,
        Err(Stop::Refused(r, given)) => {
            let given = given.as_deref();
            return refuse(ctx, r.code, r.status, &r.message, r.next, given).await;
        }
        Err(Stop::Failed(e)) => return Err(e),
    };
    let session_id = detail.session.session_id;
    let req = EndRequest {
        session_id,
        expected_client_key: detail.session.client_key.as_str().to_owned(),
        summary: "sealed with runtime_session_close".to_owned(),
        next_focus: String::new(),
        expected_focus_revision: 0,
        nothing_to_capture_reason: Some("a raw runtime session has no focus".to_owned()),
        allow_focus_shrink: false,
        dry_run: a.dry_run,
        keep_focus: true,
        door: brain_core::rules::Door::Profile,
        digest: args::digest(&json!({"tool": CLOSE, "session_id": session_id}), &[]),
        merge: Default::default(),
    };
    let ended = match ctx.store.end_session(&ctx.caller, req).await {
        Ok(v) => v,
        Err(StoreError::Domain(e)) => return refusal_from(ctx, &e, Some(&given)).await,
        Err(e) => return Err(e),
    };
    if a.dry_run {
        return Ok(Answer::Done(json!({
            "code": "MCP-DRY-RUN",
            "status": 200,
            "result": {"sealed": false, "would": "seal", "session": detail.session},
            "display": {
                "title": "Dry run",
                "summary": format!("A confirmed close would seal {session_id}; nothing was written."),
                "next": "Call again with confirm=true to seal it.",
            },
            "refusal": null,
            "ledger_tip": tip(ctx).await?,
            "session_id": session_id,
        })));
    }
    if ended["replayed"] == json!(true) {
        // A concurrent close got there first: this one sealed nothing.
        return refuse(
            ctx,
            "session_closed",
            409,
            "the session is already sealed; a close never reopens it",
            "Nothing to do: the session stays sealed.",
            Some(&given),
        )
        .await;
    }
    let (receipt, verified) = close_receipt(ctx, session_id).await?;
    Ok(Answer::Done(json!({
        "code": "FG-OK",
        "status": 200,
        "result": {"sealed": true, "session": ended["session"], "receipt": receipt, "verified": verified},
        "display": {
            "title": "Session sealed",
            "summary": format!("Raw session {session_id} is sealed; its receipts are kept."),
            "next": "Take the next input; further calls on this session_id are refused.",
        },
        "refusal": null,
        "ledger_tip": tip(ctx).await?,
        "session_id": session_id,
    })))
}

async fn refusal_from(ctx: &ToolCtx<'_>, e: &DomainError, given: Option<&str>) -> SeedResult {
    refuse(
        ctx,
        e.code.as_str(),
        e.code.status(),
        &e.message,
        "Fix what the message says and call again.",
        given,
    )
    .await
}

/// The receipt the close wrote, and whether it verifies: its own hash, and
/// its link to the receipt before it.
async fn close_receipt(ctx: &ToolCtx<'_>, session: SessionId) -> Result<(Value, bool), StoreError> {
    let tenant = &ctx.caller.tenant;
    // The session's receipts newest first, one at a time: the close just
    // wrote its own, so each read stops near the tip instead of walking the
    // tenant's chain from its start (and a session of more than a page of
    // receipts no longer hides its close). A few refusals may have come after.
    let mut before = i64::MAX;
    let mut found = None;
    for _ in 0..4 {
        let newest = ctx
            .store
            .receipts_page(
                tenant,
                &ReceiptQuery {
                    project: None,
                    session_id: Some(session),
                    after_seq: 0,
                    before_seq: Some(before),
                    until_seq: None,
                    limit: 1,
                },
            )
            .await?;
        let Some(r) = newest.into_iter().next() else {
            break;
        };
        // A refused end on the session carries its id too; the close is
        // the end that was written (applied or conflicted).
        if r.tool == "brain_session_end" && matches!(r.outcome.as_str(), "ok" | "conflict") {
            found = Some(r);
            break;
        }
        before = r.seq;
    }
    let Some(r) = found else {
        return Ok((Value::Null, false));
    };
    let prev = ctx
        .store
        .receipts_page(
            tenant,
            &ReceiptQuery {
                project: None,
                session_id: None,
                after_seq: r.seq - 2,
                before_seq: None,
                until_seq: None,
                limit: 1,
            },
        )
        .await?;
    let linked = match prev.first() {
        Some(p) if r.seq > 1 => p.seq == r.seq - 1 && p.hash == r.prev_hash,
        _ => r.seq == 1 && r.prev_hash == brain_core::receipt::GENESIS_HASH,
    };
    let verified = linked && r.compute_hash() == r.hash;
    let view = json!({"receipt_id": r.receipt_id, "seq": r.seq, "hash": r.hash, "prev_hash": r.prev_hash, "at": rfc3339(&r.at)});
    Ok((view, verified))
}

use brain_core::ids::SessionId;
use brain_core::requests::{AbandonRequest, limits};
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_abandon";

const DESCRIPTION: &str = "Close an open session for good (confirm: true), keeping its artifacts, without writing any focus: for dropped work, a mistaken start, or a briefing.recovery you will not resume. To write a summary or focus: brain_session_end.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The open session, e.g. briefing.recovery.session_id.
    pub session_id: String,
    /// The session's client_key.
    pub expected_client_key: String,
    /// Why; kept as abandon_reason.
    pub reason: String,
    /// Set true (optional with dry_run), else confirm_required (428).
    #[serde(default)]
    pub confirm: bool,
    /// Check, but write nothing.
    #[serde(default)]
    pub dry_run: bool,
}

pub fn definition() -> Tool {
    define::<Args>(
        NAME,
        "Abandon a session",
        DESCRIPTION,
        schemas::output(
            schemas::props(json!({
                "session": schemas::session_ref(),
                "replayed": {"type": "boolean"},
                "dry_run": {"type": "boolean"},
                "would": {"type": ["string", "null"], "enum": ["abandoned", null]}
            })),
            &["session", "replayed", "dry_run", "would"],
        ),
        Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
        },
    )
}

pub async fn call(ctx: &ToolCtx<'_>, raw: JsonObject) -> ToolResult {
    let a: Args = args::parse_tool(raw)?;
    args::max_chars(
        "expected_client_key",
        &a.expected_client_key,
        limits::CLIENT_KEY_MAX_CHARS,
    )?;
    args::max_bytes("reason", &a.reason, limits::REASON_MAX_BYTES)?;
    let req = AbandonRequest {
        session_id: SessionId::parse(&a.session_id)?,
        digest: args::digest(&a, &["dry_run"]),
        expected_client_key: a.expected_client_key,
        reason: a.reason,
        confirm: a.confirm,
        dry_run: a.dry_run,
    };
    ctx.store.abandon_session(&ctx.caller, req).await
}

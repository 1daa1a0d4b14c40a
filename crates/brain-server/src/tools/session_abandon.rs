use brain_core::ids::SessionId;
use brain_core::requests::{AbandonRequest, limits};
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_abandon";

const DESCRIPTION: &str = "Close an open session without writing any focus, recording why. Use when the work is \
dropped, was started by mistake, or is a briefing.recovery leftover you will not resume; to \
keep what was learned use brain_session_end. Preview with dry_run. The session becomes \
abandoned for good; its artifacts stay. An exact repeat returns the stored result with \
replayed: true. Errors: confirm_required (428), session_not_found, tracer_session, \
client_key_mismatch, session_closed, invalid_argument.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The open session to abandon, e.g. briefing.recovery.session_id.
    pub session_id: String,
    /// The client_key the session was started with; checked before anything else.
    pub expected_client_key: String,
    /// Why the session is abandoned; kept on the session as abandon_reason.
    pub reason: String,
    /// Must be true to abandon, unless dry_run; else confirm_required and nothing changes.
    #[serde(default)]
    pub confirm: bool,
    /// Run every check and answer would, writing nothing, not even a receipt.
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
                "replayed": {"type": "boolean", "description": "A repeat of the closing call: nothing written."},
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

use brain_core::ids::{SessionId, SlotName};
use brain_core::requests::BindRequest;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_bind";

const DESCRIPTION: &str = "Bind an open, unbound session to a named slot, so that its end writes \
that slot's body instead of the project's base focus. Use when the work narrows to one part of the \
project; to bind from the start, pass slot to brain_session_start instead. Returns the slot's body \
and revision: pass that revision as expected_focus_revision to brain_session_end. Binding again to \
the same slot changes nothing; another slot is refused (already_bound). Errors: session_not_found, \
client_key_mismatch, session_closed.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The session to bind, as returned by brain_session_start (sess_ + 32 hex, or a hyphenated UUID).
    pub session_id: String,
    /// The client_key the session was started with; checked before anything else.
    pub expected_client_key: String,
    /// Slot name (letters, digits and . _ / -, ≤ 64). Created empty at revision 0 on first bind.
    pub slot: String,
}

pub fn definition() -> Tool {
    define::<Args>(
        NAME,
        "Bind a session to a slot",
        DESCRIPTION,
        schemas::output(
            schemas::props(
                json!({"session": schemas::session_ref(), "slot": schemas::slot_view()}),
            ),
            &["session", "slot"],
        ),
        Hints {
            read_only: false,
            destructive: false,
            idempotent: true,
        },
    )
}

pub async fn call(ctx: &ToolCtx<'_>, raw: JsonObject) -> ToolResult {
    let a: Args = args::parse_tool(raw)?;
    args::max_chars("expected_client_key", &a.expected_client_key, 200)?;
    let req = BindRequest {
        session_id: SessionId::parse(&a.session_id)?,
        expected_client_key: a.expected_client_key.clone(),
        slot: SlotName::parse(&a.slot)?,
        digest: args::digest(&a, &[]),
    };
    to_result(&ctx.store.bind_session(&ctx.caller, req).await?)
}

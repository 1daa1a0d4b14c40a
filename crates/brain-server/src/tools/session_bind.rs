use brain_core::ids::{SessionId, SlotName};
use brain_core::requests::BindRequest;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_bind";

const DESCRIPTION: &str = "Bind an open, unbound session to a slot, so its end or relay replaces that slot's body \
instead of the base focus. Use when work narrows to one part of the project; to bind at the \
outset pass slot to brain_session_start. An unknown name creates an empty slot at revision \
0, so a misspelling binds an empty slot: brain_focus_get without slot lists the existing \
ones. Returns the slot's body and revision (your end's expected_focus_revision). The same \
slot again answers the same binding; another is refused (already_bound, 409). Errors: \
session_not_found, tracer_session, client_key_mismatch, session_closed.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The open session to bind, as brain_session_start returned it.
    pub session_id: String,
    /// The client_key the session was started with; checked first.
    pub expected_client_key: String,
    /// Slot name, case-sensitive; an existing slot has revision 1 or more in brain_focus_get.
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

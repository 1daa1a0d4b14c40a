use brain_core::ids::{SessionId, SlotName};
use brain_core::requests::BindRequest;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_bind";

const DESCRIPTION: &str = "Bind an open session to a slot (or pass slot to brain_session_start), for a strand of work the base focus should not absorb: its end or relay then replaces the slot's body instead (no unbind). Returns the slot's body and revision, which becomes read_revision; rebinding the same slot moves read_revision to its current revision: merge its returned body into your next_focus. Already bound to another slot: already_bound (409); start a new session for it. Sessions may share a slot: the revision guard arbitrates.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The open session's id (from start, resume or a relay).
    pub session_id: String,
    /// The session's client_key.
    pub expected_client_key: String,
    /// The slot; a new or misspelt name creates an empty one.
    pub slot: String,
}

pub fn definition() -> Tool {
    define::<Args>(
        NAME,
        "Bind to a slot",
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
            idempotent: false,
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

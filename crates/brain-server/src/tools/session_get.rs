use brain_core::ids::SessionId;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_get";

const DESCRIPTION: &str = "Read one session by id: its status, binding, summary, focus outcome, \
whether it is idle, and how many artifacts its ledger holds. Read-only; it does not count as \
activity. To reattach to an open session use brain_session_resume. An id that does not exist in \
your tenant gives session_not_found.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The session to read (sess_ + 32 hex, or a hyphenated UUID).
    pub session_id: String,
}

pub fn definition() -> Tool {
    define::<Args>(
        NAME,
        "Read a session",
        DESCRIPTION,
        schemas::output(
            schemas::props(json!({
                "session": schemas::session(),
                "idle": {"type": "boolean", "description": "Open and unused for longer than the server's idle threshold; it stays open."},
                "ledger_size": {"type": "integer", "description": "Artifacts recorded into this session."}
            })),
            &["session", "idle", "ledger_size"],
        ),
        Hints {
            read_only: true,
            destructive: false,
            idempotent: true,
        },
    )
}

pub async fn call(ctx: &ToolCtx<'_>, raw: JsonObject) -> ToolResult {
    let a: Args = args::parse_tool(raw)?;
    let id = SessionId::parse(&a.session_id)?;
    to_result(&ctx.store.session_get(&ctx.caller.tenant, id).await?)
}

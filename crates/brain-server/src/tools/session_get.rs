use brain_core::ids::SessionId;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_get";

const DESCRIPTION: &str = "Read one session's full record by id, including summary, next_focus, focus outcome, whether \
it is idle and its ledger size. Use it to check a session before resuming or abandoning it, \
or to see what an earlier session concluded; it changes nothing, not even activity. To \
reattach use brain_session_resume; to find sessions, brain_session_list. An id outside your \
tenant gives session_not_found.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The session to read, e.g. from brain_session_list, a briefing or a receipt.
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
                "idle": {"type": "boolean", "description": "Open but unused past the idle threshold; it stays open."},
                "ledger_size": {"type": "integer", "description": "Artifacts in its ledger."}
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

use brain_core::ids::SessionId;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_get";

const DESCRIPTION: &str = "Read one session's record by id, tracers too (its artifacts: brain_recall with its project and session_id). Use it before resuming or abandoning a session, or for what it concluded and whom it relayed to. Find sessions: brain_session_list.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// From brain_session_list, a briefing or a receipt.
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
                "idle": {"type": "boolean"},
                "ledger_size": {"type": "integer"}
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

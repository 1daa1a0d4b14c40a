use brain_core::DomainError;
use brain_core::ids::{ProjectKey, SessionId};
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
    let detail = ctx.store.session_get(&ctx.caller.tenant, id).await?;
    // A compatibility profile's raw runtime session does not exist for
    // brain's own tools (as for the lifecycle tools: rules::check_session);
    // its profile reads it through the store, not through this tool.
    if detail.session.project == ProjectKey::runtime() {
        return Err(DomainError::session_not_found().into());
    }
    to_result(&detail)
}

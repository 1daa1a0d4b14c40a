use brain_core::ids::SessionId;
use brain_core::requests::ResumeRequest;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_resume";

const DESCRIPTION: &str = "Reattach to an open session you started earlier (after a restart or on a \
new connection) and get a fresh briefing. Changes nothing but the session's last activity time. Use \
it instead of brain_session_start when you still hold an open session_id, such as one named in a \
briefing's recovery. For a bound session, the returned slot carries the current revision that \
brain_session_end expects. Errors: session_not_found, client_key_mismatch, session_closed (start a \
new session instead).";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The open session to reattach to (sess_ + 32 hex, or a hyphenated UUID).
    pub session_id: String,
    /// The client_key the session was started with; checked before anything else.
    pub expected_client_key: String,
}

pub fn definition() -> Tool {
    let mut props = schemas::props(json!({
        "session": schemas::session_ref(),
        "briefing": schemas::briefing_ref(),
    }));
    let mut slot = schemas::slot_view();
    slot["type"] = json!(["object", "null"]);
    props.insert("slot".into(), slot);
    define::<Args>(
        NAME,
        "Resume a session",
        DESCRIPTION,
        schemas::output(props, &["session", "briefing", "slot"]),
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
    let req = ResumeRequest {
        session_id: SessionId::parse(&a.session_id)?,
        expected_client_key: a.expected_client_key,
    };
    to_result(&ctx.store.resume_session(&ctx.caller, req).await?)
}

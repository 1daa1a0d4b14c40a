use brain_core::ids::SessionId;
use brain_core::requests::ResumeRequest;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_resume";

const DESCRIPTION: &str = "Re-read an open session's briefing and mark it active: after a restart, a new connection or receiving a relay; optional otherwise (other calls need only session_id and client_key). read_revision is left as it was: if the focus its end writes (briefing.base_focus, or slot if bound) is above session.read_revision, merge its body into your next_focus and pass that revision to end. session_closed is final: start anew.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// From brain_session_start, briefing.recovery or a relay's new_session.
    pub session_id: String,
    /// The session's client_key (after a relay: to_client_key).
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
        door: brain_core::rules::Door::Brain,
    };
    to_result(&ctx.store.resume_session(&ctx.caller, req).await?)
}

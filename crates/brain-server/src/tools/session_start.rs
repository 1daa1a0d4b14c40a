use brain_core::ids::{ClientKey, ProjectKey, SlotName};
use brain_core::requests::StartRequest;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_start";

const DESCRIPTION: &str = "Open a working session in a project and get its briefing: base focus, \
open and recent sessions, and recovery when this client left a session open. Call once at the start \
of a piece of work, before brain_remember and brain_session_end. To continue a session you still \
hold, use brain_session_resume instead. Each call opens a new session and closes none; the project \
(empty focus at revision 0) and the slot are created on first use.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Project to work in: 1–128 characters of letters, digits and . _ / -. Created on first use.
    pub project: String,
    /// Your stable client identity (1–200 characters, not blank). Every later call on this session must repeat it as expected_client_key.
    pub client_key: String,
    /// Optional slot to bind at start (same charset, ≤ 64). The session's end then writes this slot's body instead of the base focus.
    #[serde(default)]
    pub slot: Option<String>,
}

pub fn definition() -> Tool {
    let mut props = schemas::props(json!({
        "session": schemas::session_ref(),
        "briefing": schemas::briefing(),
    }));
    props.insert("slot".into(), {
        let mut s = schemas::slot_view();
        s["type"] = json!(["object", "null"]);
        s
    });
    define::<Args>(
        NAME,
        "Start a session",
        DESCRIPTION,
        schemas::output(props, &["session", "briefing", "slot"]),
        Hints {
            read_only: false,
            destructive: false,
            idempotent: false,
        },
    )
}

pub async fn call(ctx: &ToolCtx<'_>, raw: JsonObject) -> ToolResult {
    let a: Args = args::parse_tool(raw)?;
    let req = StartRequest {
        project: ProjectKey::parse_for_caller(&a.project)?,
        client_key: ClientKey::parse("client_key", &a.client_key)?,
        slot: a.slot.as_deref().map(SlotName::parse).transpose()?,
        digest: args::digest(&a, &[]),
    };
    to_result(&ctx.store.start_session(&ctx.caller, req).await?)
}

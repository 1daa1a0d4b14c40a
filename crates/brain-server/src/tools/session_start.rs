use brain_core::ids::{ClientKey, ProjectKey, SlotName};
use brain_core::requests::StartRequest;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_start";

const DESCRIPTION: &str = "Open a new working session in a project and get its briefing. Call once when work begins; if \
you hold an open session (yours, or briefing.recovery) use brain_session_resume instead, or \
brain_session_abandon to drop it; a second start leaves the first open. Your end passes \
briefing.base_focus.revision (slot.revision when bound). Writes a receipt; project and slot \
are created on first use. To hear while you work that another agent moved the focus, \
resources/subscribe to brain://projects/{project}/focus (or .../slots/{slot}). Errors: \
invalid_argument.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Project to work in; _mcp and _runtime are reserved. Created on first use, empty at revision 0.
    pub project: String,
    /// Your stable client identity, chosen by you; a guard, not authentication. Later calls repeat it as expected_client_key; reuse it after a restart so briefing.recovery finds your open session.
    pub client_key: String,
    /// Slot to bind now (case-sensitive; an unknown name creates an empty one). The end then replaces this slot's body, not the base focus, and expects slot.revision. Omit to stay unbound.
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

use brain_core::ids::{ClientKey, ProjectKey, SlotName};
use brain_core::requests::StartRequest;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, new_projects, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_start";

const DESCRIPTION: &str = "Open a new working session in a project and get its briefing. Always opens a new session: to continue an open one, brain_session_resume it (after a restart, find it: brain_session_list by client_key, status open). briefing.recovery = your newest other open session here (same client_key): resume it and abandon the new one, or abandon the old one.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Project to work in; a new name creates it: created_project true (_mcp, _runtime refused).
    pub project: String,
    /// A stable name you choose (e.g. agent@host) and reuse after a restart, so briefing.recovery finds you; not authentication.
    pub client_key: String,
    /// Slot to bind now (a new name creates it); the end then writes it, not the base focus.
    #[serde(default)]
    pub slot: Option<String>,
}

pub fn definition() -> Tool {
    let mut props = schemas::props(json!({
        "session": schemas::session_ref(),
        "briefing": schemas::briefing(),
    }));
    props.insert("created_project".into(), json!({"type": "boolean"}));
    props.insert("slot".into(), {
        let mut s = schemas::slot_view();
        s["type"] = json!(["object", "null"]);
        s
    });
    define::<Args>(
        NAME,
        "Start a session",
        DESCRIPTION,
        schemas::output(props, &["session", "briefing", "slot", "created_project"]),
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
        client_key: ClientKey::parse_for_caller("client_key", &a.client_key)?,
        slot: a.slot.as_deref().map(SlotName::parse).transpose()?,
        digest: args::digest(&a, &[]),
    };
    let project = req.project.clone();
    let existed = new_projects::existed(ctx, &project).await?;
    let mut out = to_result(&ctx.store.start_session(&ctx.caller, req).await?)?;
    new_projects::note(ctx, &project);
    out["created_project"] = json!(!existed);
    Ok(out)
}

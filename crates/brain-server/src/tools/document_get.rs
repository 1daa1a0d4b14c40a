use brain_core::ids::ProjectKey;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::document_put::{DocName, document_schema};
use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_document_get";

const DESCRIPTION: &str = "Read one of a project's documents — executive_state, critique, \
sync_note, or a named mental_model — with its revision. Read-only. Pass that revision to \
brain_document_put to replace it. A document never written reads as an empty body at revision 0. \
The briefing of brain_session_start already carries the executive state, sync note and mental models.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Project the document belongs to.
    pub project: String,
    /// Which document: executive_state, critique, sync_note or mental_model.
    pub document: DocName,
    /// The mental model's name; only for mental_model.
    #[serde(default)]
    pub name: Option<String>,
}

pub fn definition() -> Tool {
    define::<Args>(
        NAME,
        "Read a document",
        DESCRIPTION,
        schemas::output(
            schemas::props(json!({"document": document_schema()})),
            &["document"],
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
    let project = ProjectKey::parse_for_caller(&a.project)?;
    let name = a.name.unwrap_or_default();
    let doc = ctx
        .store
        .document_get(&ctx.caller.tenant, &project, a.document.into(), &name)
        .await?;
    to_result(&json!({ "document": doc }))
}

use brain_core::ids::{ProjectKey, TenantId};
use brain_core::memory::DocumentKind;
use brain_core::store::Store;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::document_put::{DocName, document_schema};
use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_document_get";

const DESCRIPTION: &str = "Read one project document with its revision (executive_state's body is its JSON text). Use it for the revision brain_document_put needs, after document_conflict, or for the critique and a mental model's full text, which briefings leave out or cut.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The document's project.
    pub project: String,
    /// Which document (the instructions say what each holds).
    pub kind: DocName,
    /// Required for mental_model (names: briefing.mental_models), else omit; an unknown name reads as empty.
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
    let a: Args = args::parse_tool(args::renamed(raw, "document", "kind"))?;
    let project = ProjectKey::parse_for_caller(&a.project)?;
    let kind: DocumentKind = a.kind.into();
    // The same rule as brain_document_put: a name for mental models only.
    let name = match (kind, a.name) {
        (brain_core::memory::DocumentKind::MentalModel, Some(n)) if !n.trim().is_empty() => n,
        (brain_core::memory::DocumentKind::MentalModel, _) => {
            return Err(brain_core::DomainError::invalid_argument(
                "name",
                "is required for mental_model (the model's name)",
            )
            .into());
        }
        (_, Some(_)) => {
            return Err(brain_core::DomainError::invalid_argument(
                "name",
                "is for mental_model only; leave it out for the other documents",
            )
            .into());
        }
        (_, None) => String::new(),
    };
    read(ctx.store, &ctx.caller.tenant, &project, kind, &name).await
}

/// A document (one never written reads as empty at revision 0), as the
/// tool answers it.
pub async fn read(
    store: &dyn Store,
    tenant: &TenantId,
    project: &ProjectKey,
    kind: DocumentKind,
    name: &str,
) -> ToolResult {
    let doc = store.document_get(tenant, project, kind, name).await?;
    to_result(&json!({ "document": doc }))
}

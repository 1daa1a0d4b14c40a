use brain_core::ids::{ProjectKey, SlotName, TenantId};
use brain_core::store::Store;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_focus_get";

const DESCRIPTION: &str = "Read a project's base focus or one slot's body; without slot it also lists the slots. Before ending, re-read what your end writes (slot if bound), merge, and pass its revision as end's expected_focus_revision; past revisions: brain_focus_history.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Project to read; an unknown one reads as empty at revision 0.
    pub project: String,
    /// The slot (unknown: empty at revision 0, not created); omit for the base focus.
    #[serde(default)]
    pub slot: Option<String>,
}

pub fn definition() -> Tool {
    define::<Args>(
        NAME,
        "Read the focus",
        DESCRIPTION,
        schemas::output(
            schemas::props(json!({
                "body": {"type": "string"},
                "revision": {"type": "integer"},
                "updated_at": {"type": ["string", "null"]},
                "updated_by_session": {"type": ["string", "null"]},
                "slots": {
                    "type": ["array", "null"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}, "revision": {"type": "integer"}}, "required": ["name", "revision"]}
                }
            })),
            &[
                "body",
                "revision",
                "updated_at",
                "updated_by_session",
                "slots",
            ],
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
    let slot = a.slot.as_deref().map(SlotName::parse).transpose()?;
    read(ctx.store, &ctx.caller.tenant, &project, slot.as_ref()).await
}

/// The base focus with the project's slots, or a slot's body, as the tool
/// answers it.
pub async fn read(
    store: &dyn Store,
    tenant: &TenantId,
    project: &ProjectKey,
    slot: Option<&SlotName>,
) -> ToolResult {
    // The base focus read also lists the slots, so a misspelt name shows up
    // before a bind creates an empty slot of it.
    let (focus, slots) = match slot {
        Some(name) => (store.focus_get(tenant, project, Some(name)).await?, None),
        None => {
            let (focus, slots) = store.focus_with_slots(tenant, project).await?;
            (focus, Some(slots))
        }
    };
    let mut out = serde_json::to_value(&focus).map_err(brain_core::error::StoreError::backend)?;
    out["slots"] = match slots {
        None => serde_json::Value::Null,
        Some(slots) => json!(
            slots
                .into_iter()
                .map(|(name, revision)| json!({"name": name, "revision": revision}))
                .collect::<Vec<_>>()
        ),
    };
    to_result(&out)
}

use brain_core::DomainError;
use brain_core::ids::{ArtifactId, ProjectKey};
use brain_core::requests::{TodoAckRequest, limits};
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_todo_ack";

const DESCRIPTION: &str = "Acknowledge todos so they leave the inbox, after doing or dismissing them (find them: brain_recall inbox: true); no undo; they stay searchable. Ids already acknowledged or not todos of this project come back untouched (already_acknowledged, not_todos).";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The todos' project.
    pub project: String,
    /// From brain_remember or brain_recall.
    #[schemars(length(min = 1, max = 50))]
    pub artifact_ids: Vec<String>,
    /// What was done or why dismissed, kept as each todo's ack_note.
    #[serde(default)]
    pub note: Option<String>,
}

pub fn definition() -> Tool {
    let ids = json!({"type": "array", "items": {"type": "string"}});
    define::<Args>(
        NAME,
        "Acknowledge todos",
        DESCRIPTION,
        schemas::output(
            schemas::props(json!({
                "acknowledged": ids.clone(),
                "already_acknowledged": ids.clone(),
                "not_todos": ids,
                "inbox_count": {"type": "integer"}
            })),
            &[
                "acknowledged",
                "already_acknowledged",
                "not_todos",
                "inbox_count",
            ],
        ),
        Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
        },
    )
}

pub async fn call(ctx: &ToolCtx<'_>, raw: JsonObject) -> ToolResult {
    let a: Args = args::parse_tool(raw)?;
    if a.artifact_ids.is_empty() || a.artifact_ids.len() > 50 {
        return Err(DomainError::invalid_argument("artifact_ids", "must hold 1 to 50 ids").into());
    }
    let mut ids = Vec::with_capacity(a.artifact_ids.len());
    for (i, raw) in a.artifact_ids.iter().enumerate() {
        let id = ArtifactId::parse(raw).map_err(|_| {
            DomainError::invalid_argument(
                &format!("artifact_ids[{i}]"),
                "must be an artifact id (art_ + 32 hex)",
            )
        })?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if let Some(n) = &a.note {
        args::max_bytes("note", n, limits::REASON_MAX_BYTES)?;
        brain_core::rules::require_not_blank("note", n)?;
    }
    let req = TodoAckRequest {
        project: ProjectKey::parse_for_caller(&a.project)?,
        artifact_ids: ids,
        note: a.note.clone(),
        digest: args::digest(&a, &[]),
    };
    to_result(&ctx.store.todo_ack(&ctx.caller, req).await?)
}

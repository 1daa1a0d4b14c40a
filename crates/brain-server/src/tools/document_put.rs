use brain_core::ids::ProjectKey;
use brain_core::memory::{DocumentKind, DocumentPut};
use brain_core::requests::limits;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_document_put";

const DESCRIPTION: &str = "Replace a project document — executive_state, critique or sync_note \
(mental_model for operators only) — as a whole, under compare-and-swap on its revision. The body \
REPLACES the previous one; executive_state must be JSON with objective, missions[] and \
pending_decisions[]. A stale expected_revision is refused (document_conflict, with \
current_revision): read it with brain_document_get, merge, and write again. Not for facts \
(brain_remember) nor for the focus (brain_session_end).";

#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DocName {
    ExecutiveState,
    Critique,
    SyncNote,
    MentalModel,
}

impl From<DocName> for DocumentKind {
    fn from(d: DocName) -> Self {
        match d {
            DocName::ExecutiveState => DocumentKind::ExecutiveState,
            DocName::Critique => DocumentKind::Critique,
            DocName::SyncNote => DocumentKind::SyncNote,
            DocName::MentalModel => DocumentKind::MentalModel,
        }
    }
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Project the document belongs to (created on first use).
    pub project: String,
    /// Which document: executive_state, critique, sync_note or mental_model (operators only).
    pub document: DocName,
    /// The mental model's name (1–128 characters); only for mental_model.
    #[serde(default)]
    pub name: Option<String>,
    /// The whole new body (≤ 256 KiB). For executive_state: a JSON object, as a string.
    pub body: String,
    /// The revision you read (0 for a document never written).
    pub expected_revision: i64,
}

pub fn document_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": ["executive_state", "critique", "sync_note", "mental_model"]},
            "name": {"type": "string"},
            "body": {"type": "string"},
            "revision": {"type": "integer"},
            "updated_at": {"type": ["string", "null"], "format": "date-time"},
            "updated_by": {"type": ["string", "null"]}
        },
        "required": ["kind", "name", "body", "revision", "updated_at", "updated_by"]
    })
}

pub fn definition() -> Tool {
    define::<Args>(
        NAME,
        "Replace a document",
        DESCRIPTION,
        schemas::output(
            schemas::props(json!({"document": document_schema()})),
            &["document"],
        ),
        Hints {
            read_only: false,
            destructive: true,
            idempotent: false,
        },
    )
}

pub async fn call(ctx: &ToolCtx<'_>, raw: JsonObject) -> ToolResult {
    let a: Args = args::parse_tool(raw)?;
    let digest = args::digest(&a, &[]);
    args::max_bytes("body", &a.body, limits::FOCUS_MAX_BYTES)?;
    if a.expected_revision < 0 {
        return Err(brain_core::DomainError::invalid_argument(
            "expected_revision",
            "must be 0 or more",
        )
        .into());
    }
    let put = DocumentPut {
        project: ProjectKey::parse_for_caller(&a.project)?,
        kind: a.document.into(),
        name: a.name.unwrap_or_default(),
        body: a.body,
        expected_revision: a.expected_revision,
        digest,
    };
    let doc = ctx.store.document_put(&ctx.caller, put).await?;
    to_result(&json!({ "document": doc }))
}

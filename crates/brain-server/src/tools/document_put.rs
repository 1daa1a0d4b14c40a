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

const DESCRIPTION: &str = "Replace a whole project document under compare-and-swap: on success its revision becomes \
expected_revision + 1. executive_state: objective, missions, pending_decisions (choices \
still open; decisions taken go to brain_remember); critique: a review of the approach and \
its risks; sync_note: notes to other agents, in every briefing; mental_model: operator-set \
background. Not for facts (brain_remember) nor the focus (brain_session_end). A stale \
expected_revision is refused with document_conflict (409, details.current_revision), also on \
a retry whose answer was lost: brain_document_get it, and if the body is not yours, merge \
and put with that revision. Errors also: forbidden, invalid_argument.";

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
    /// Project the document belongs to; created on first use.
    pub project: String,
    /// Which document; mental_model needs an operator-role JWT.
    pub document: DocName,
    /// The mental model's name: required for mental_model, refused for the others.
    #[serde(default)]
    pub name: Option<String>,
    /// The whole new body. For executive_state a JSON object as a string: {"objective": string, "missions": [string or {"title": string}], "pending_decisions": [same]}, all three required; the first 3 missions drive the briefing's recall.
    pub body: String,
    /// The document's current revision, from brain_document_get or document_conflict's details.current_revision; 0 for a document never written.
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

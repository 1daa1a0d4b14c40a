use brain_core::ids::ProjectKey;
use brain_core::memory::{DocumentKind, DocumentPut};
use brain_core::requests::limits;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::args::JsonBody;
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_document_put";

const DESCRIPTION: &str = "Replace a whole project document under compare-and-swap (e.g. to update executive_state's missions). The next step belongs in the focus (brain_session_end), decisions in brain_remember. A stale revision is refused (document_conflict, 409, details.current_revision), also on a retry whose answer was lost: reread; if the body is yours it landed, else merge and put again.";

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
    /// The document's project.
    pub project: String,
    /// Which document; mental_model needs an operator-role JWT (no elevation), else forbidden (403).
    pub kind: DocName,
    /// Required for mental_model, else omit; a name not in briefing.mental_models creates one (max 32 per project, else invalid_argument).
    #[serde(default)]
    pub name: Option<String>,
    /// The whole new body, text; executive_state's is a JSON object (or its text): objective (string), missions and pending_decisions (arrays of strings or {title: string}), all required (else invalid_argument), other keys stored as given.
    pub body: JsonBody,
    /// The current revision (0 if never written), from brain_document_get or document_conflict.
    pub expected_revision: i64,
}

pub fn document_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": ["executive_state", "critique", "sync_note", "mental_model"]},
            "name": {"type": "string", "description": "Empty but for mental_model."},
            "body": {"type": "string"},
            "revision": {"type": "integer"},
            "updated_at": {"type": ["string", "null"]},
            "updated_by": {"type": ["string", "null"], "description": "The writer credential's subject."}
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
            schemas::props(
                json!({"document": {"type": "object", "description": "As in brain_document_get."}}),
            ),
            &["document"],
        ),
        Hints {
            read_only: false,
            destructive: true,
            // A repeat changes nothing more: it meets its own revision and is
            // refused (document_conflict), as a repeated end is replayed.
            idempotent: true,
        },
    )
}

pub async fn call(ctx: &ToolCtx<'_>, raw: JsonObject) -> ToolResult {
    let a: Args = args::parse_tool(args::renamed(raw, "document", "kind"))?;
    let digest = args::digest(&a, &[]);
    if a.body.is_object() && !matches!(a.kind, DocName::ExecutiveState) {
        return Err(brain_core::DomainError::invalid_argument("body", "must be a string").into());
    }
    let body = a.body.into_text();
    args::max_bytes("body", &body, limits::FOCUS_MAX_BYTES)?;
    if a.expected_revision < 0 {
        return Err(brain_core::DomainError::invalid_argument(
            "expected_revision",
            "must be 0 or more",
        )
        .into());
    }
    let put = DocumentPut {
        project: ProjectKey::parse_for_caller(&a.project)?,
        kind: a.kind.into(),
        name: a.name.unwrap_or_default(),
        body,
        expected_revision: a.expected_revision,
        digest,
    };
    let doc = ctx.store.document_put(&ctx.caller, put).await?;
    to_result(&json!({ "document": doc }))
}

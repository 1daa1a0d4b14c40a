use brain_core::DomainError;
use brain_core::ids::{ProjectKey, SessionId};
use brain_core::model::ArtifactKind;
use brain_core::requests::{RememberRequest, limits};
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, new_projects, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_remember";

const DESCRIPTION: &str = "Record one artifact whenever you verify a fact, make a decision or defer work. Text is never edited: correct with a new one; a retried call adds a duplicate (check brain_recall first). Not for the focus (brain_session_end) or documents (brain_document_put).";

#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Fact,
    Note,
    Decision,
    Todo,
    Link,
}

impl From<Kind> for ArtifactKind {
    fn from(k: Kind) -> Self {
        match k {
            Kind::Fact => ArtifactKind::Fact,
            Kind::Note => ArtifactKind::Note,
            Kind::Decision => ArtifactKind::Decision,
            Kind::Todo => ArtifactKind::Todo,
            Kind::Link => ArtifactKind::Link,
        }
    }
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// A new name creates it; with session_id, must be the session's project (else invalid_argument).
    pub project: String,
    /// fact (verified), note (context), decision (a choice, with why), todo (for later; in the inbox until brain_todo_ack), link (a URL or path).
    pub kind: Kind,
    /// What brain_recall searches: name the subject in words.
    pub text: String,
    /// Labels; brain_recall's tags filter matches them exactly.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Your open session (pass it whenever you have one), whose ledger it joins; omitted: unattributed.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The session's client_key; required with session_id.
    #[serde(default)]
    pub expected_client_key: Option<String>,
}

pub fn definition() -> Tool {
    let artifact = json!({
        "type": "object",
        "properties": {
            "artifact_id": {"type": "string"},
            "project": {"type": "string"},
            "session_id": {"type": ["string", "null"]},
            "kind": {"type": "string", "enum": ["fact", "note", "decision", "todo", "link"]},
            "text": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "created_at": schemas::timestamp(),
            "acknowledged_at": {"type": ["string", "null"], "description": "Set by brain_todo_ack."},
            "ack_note": {"type": ["string", "null"]}
        },
        "required": ["artifact_id", "project", "session_id", "kind", "text", "tags", "created_at", "acknowledged_at", "ack_note"]
    });
    define::<Args>(
        NAME,
        "Remember an artifact",
        DESCRIPTION,
        schemas::output(
            schemas::props(json!({"artifact": artifact, "created_project": {"type": "boolean"}})),
            &["artifact", "created_project"],
        ),
        Hints {
            read_only: false,
            destructive: false,
            idempotent: false,
        },
    )
}

pub async fn call(ctx: &ToolCtx<'_>, raw: JsonObject) -> ToolResult {
    let a: Args = args::parse_tool(raw)?;
    let digest = args::digest(&a, &[]);
    if a.text.trim().is_empty() {
        return Err(DomainError::invalid_argument("text", "must not be blank").into());
    }
    args::max_bytes("text", &a.text, limits::ARTIFACT_TEXT_MAX_BYTES)?;
    if a.tags.len() > limits::TAGS_MAX {
        return Err(DomainError::invalid_argument(
            "tags",
            format!("may hold at most {} tags", limits::TAGS_MAX),
        )
        .into());
    }
    for t in &a.tags {
        if t.trim().is_empty() || t.chars().count() > limits::TAG_MAX_CHARS {
            return Err(DomainError::invalid_argument(
                "tags",
                "each tag must be 1 to 64 characters",
            )
            .into());
        }
    }
    let session = match (a.session_id, a.expected_client_key) {
        (None, None) => None,
        (Some(id), Some(key)) => {
            args::max_chars("expected_client_key", &key, limits::CLIENT_KEY_MAX_CHARS)?;
            Some((SessionId::parse(&id)?, key))
        }
        (Some(_), None) => {
            return Err(DomainError::invalid_argument(
                "expected_client_key",
                "is required with session_id",
            )
            .into());
        }
        (None, Some(_)) => {
            return Err(DomainError::invalid_argument(
                "session_id",
                "is required with expected_client_key",
            )
            .into());
        }
    };
    let req = RememberRequest {
        project: ProjectKey::parse_for_caller(&a.project)?,
        kind: a.kind.into(),
        text: a.text,
        tags: a.tags,
        session,
        digest,
    };
    let project = req.project.clone();
    let existed = new_projects::existed(ctx, &project).await?;
    let artifact = ctx.store.remember(&ctx.caller, req).await?;
    new_projects::note(ctx, &project);
    to_result(&json!({ "artifact": artifact, "created_project": !existed }))
}

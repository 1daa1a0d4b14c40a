use brain_core::DomainError;
use brain_core::ids::ProjectKey;
use brain_core::store::RecallQuery;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::remember::Kind;
use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_recall";

const DESCRIPTION: &str = "Search a project's artifacts by full text, best first, with a rank (1 best) and a snippet (hits in « »); without query, list them newest first, rank 1, snippet the text's start. Use it before deciding or redoing work; the focus is brain_focus_get's, documents brain_document_get's.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Project to search.
    pub project: String,
    /// Over artifact text, as in a web search: all words must match, a or b matches either, -word excludes, "quotes" a phrase; whole words, no stemming.
    #[serde(default)]
    pub query: Option<String>,
    /// Results per page.
    #[serde(default)]
    pub limit: Option<i64>,
    /// Only these kinds.
    #[serde(default)]
    pub kinds: Vec<Kind>,
    /// Only artifacts with all these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Only todos not yet acknowledged (the briefing's inbox_count).
    #[serde(default)]
    pub inbox: bool,
    /// next_cursor; repeat the other arguments.
    #[serde(default)]
    pub cursor: Option<String>,
}

pub fn definition() -> Tool {
    let hit = json!({
        "type": "object",
        "properties": {
            "artifact": {"type": "object", "description": "As in brain_remember."},
            "rank": {"type": "number", "minimum": 0, "maximum": 1},
            "snippet": {"type": "string"}
        },
        "required": ["artifact", "rank", "snippet"]
    });
    define::<Args>(
        NAME,
        "Recall artifacts",
        DESCRIPTION,
        schemas::output(
            schemas::props(json!({
                "results": {"type": "array", "items": hit},
                "next_cursor": {"type": ["string", "null"]}
            })),
            &["results", "next_cursor"],
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
    if let Some(query) = &a.query
        && (query.trim().is_empty() || query.chars().count() > 1000)
    {
        return Err(DomainError::invalid_argument(
            "query",
            "must be 1 to 1000 characters; omit it to list",
        )
        .into());
    }
    let limit = args::bounded("limit", a.limit, 10, 50)?;
    let offset = args::cursor_offset(a.cursor.as_deref())?;
    if a.tags.len() > brain_core::requests::limits::TAGS_MAX {
        return Err(DomainError::invalid_argument("tags", "at most 16 tags").into());
    }
    let q = RecallQuery {
        project: ProjectKey::parse_for_caller(&a.project)?,
        query: a.query,
        kinds: a.kinds.into_iter().map(Into::into).collect(),
        tags: a.tags,
        inbox: a.inbox,
        limit,
        offset,
    };
    let results = ctx.store.recall(&ctx.caller.tenant, &q).await?;
    let next = (results.len() as i64 == limit).then(|| (offset + limit).to_string());
    to_result(&json!({ "results": results, "next_cursor": next }))
}

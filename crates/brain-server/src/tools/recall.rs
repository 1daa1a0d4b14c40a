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

const DESCRIPTION: &str = "Search a project's artifacts (what brain_remember recorded) by full text, best matches \
first, each with a rank and a snippet (hits marked « »). Use it before deciding or redoing \
work, and to find todo ids for brain_todo_ack; for the focus use brain_focus_get, for \
documents brain_document_get. Query as in a web search: all words must match, `or` allows \
either, a leading - excludes a word, \"quotes\" match a phrase; whole words, no stemming. Only \
text is searched; kinds and tags narrow the results; acknowledged todos are still found. \
Pages with cursor/next_cursor.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Project to search.
    pub project: String,
    /// What to look for in web-search syntax; a query without any word to search returns no results.
    pub query: String,
    /// Results per page.
    #[serde(default)]
    pub limit: Option<i64>,
    /// Only these artifact kinds. Default all.
    #[serde(default)]
    pub kinds: Vec<Kind>,
    /// Only artifacts carrying every one of these tags, exactly as given to brain_remember.
    #[serde(default)]
    pub tags: Vec<String>,
    /// next_cursor from the previous page of the same query and filters; omit for the first page.
    #[serde(default)]
    pub cursor: Option<String>,
}

pub fn definition() -> Tool {
    let hit = json!({
        "type": "object",
        "properties": {
            "artifact": {"type": "object", "description": "Fields as in brain_remember's artifact."},
            "rank": {"type": "number", "minimum": 0, "maximum": 1, "description": "1.0 for this query's best match."},
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
    if a.query.trim().is_empty() || a.query.chars().count() > 1000 {
        return Err(DomainError::invalid_argument("query", "must be 1 to 1000 characters").into());
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
        limit,
        offset,
    };
    let results = ctx.store.recall(&ctx.caller.tenant, &q).await?;
    let next = (results.len() as i64 == limit).then(|| (offset + limit).to_string());
    to_result(&json!({ "results": results, "next_cursor": next }))
}

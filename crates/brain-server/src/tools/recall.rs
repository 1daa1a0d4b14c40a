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

const DESCRIPTION: &str = "Search a project's artifacts by full text and get the best matches \
first, each with a snippet (hits marked « »). Read-only. Query syntax as in a web search: words \
must all match, `or` between words allows either, a leading `-` excludes a word, \"quotes\" match a \
phrase; any language works. Use it to find what was recorded with brain_remember; for the current \
focus use brain_focus_get. Pages with cursor/next_cursor.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Project to search (1–128 characters of letters, digits and . _ / -).
    pub project: String,
    /// What to look for (1–1000 characters), in web-search syntax.
    pub query: String,
    /// Results per page, 1–50. Default 10.
    #[serde(default)]
    pub limit: Option<i64>,
    /// Only these artifact kinds. Default all.
    #[serde(default)]
    pub kinds: Vec<Kind>,
    /// Only artifacts carrying every one of these tags (as given to brain_remember; up to 16). Default no filter.
    #[serde(default)]
    pub tags: Vec<String>,
    /// next_cursor from the previous page, to continue.
    #[serde(default)]
    pub cursor: Option<String>,
}

pub fn definition() -> Tool {
    let hit = json!({
        "type": "object",
        "properties": {
            "artifact": {"type": "object", "description": "The matching artifact."},
            "rank": {"type": "number", "description": "Relevance; higher is better."},
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
                "next_cursor": {"type": ["string", "null"], "description": "Pass as cursor for the next page; null at the end."}
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

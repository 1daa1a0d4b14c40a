use brain_core::DomainError;
use brain_core::error::StoreError;
use brain_core::ids::{ArtifactId, ProjectKey, SessionId};
use brain_core::search_words;
use brain_core::store::RecallQuery;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::remember::Kind;
use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_recall";

const DESCRIPTION: &str = "Search a project's artifacts by full text, best first, with a 0-1 rank (1 best) and a snippet (hits in « »); without query, list them newest first, rank 1, snippet the text's start. Use it before deciding or redoing work; not for the focus (brain_focus_get) or documents (brain_document_get).";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Project to search.
    pub project: String,
    /// Over artifact text, as in a web search: all words must match, x OR y (or x or y) matches either, -word excludes, "quotes" a phrase; whole words, no stemming; at most 8 words, or and excluded ones included.
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
    /// Only this session's ledger.
    #[serde(default)]
    pub session_id: Option<String>,
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
                "next_cursor": {"type": ["string", "null"], "description": "A search or a filtered listing looks through 10,000 artifacts at most, so a page may come short or empty with a cursor: page on until null."}
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
    if let Some(query) = &a.query
        && search_words::words(query).count() > search_words::QUERY_WORDS_MAX
    {
        return Err(DomainError::invalid_argument("query", "must hold at most 8 words").into());
    }
    let limit = args::bounded("limit", a.limit, 10, 50)?;
    // A search pages by offset over its ranking of one window; a listing by
    // keyset, so the todos acknowledged from one page do not shift the next.
    let (offset, before) = match (&a.query, a.cursor.as_deref()) {
        (Some(_), cursor) => search_cursor(cursor)?,
        (None, None) => (0, None),
        (None, Some(c)) => (0, Some(list_cursor(c)?)),
    };
    if a.tags.len() > brain_core::requests::limits::TAGS_MAX {
        return Err(DomainError::invalid_argument("tags", "at most 16 tags").into());
    }
    let searching = a.query.is_some();
    let q = RecallQuery {
        project: ProjectKey::parse_for_caller(&a.project)?,
        query: a.query,
        kinds: a.kinds.into_iter().map(Into::into).collect(),
        tags: a.tags,
        inbox: a.inbox,
        session_id: a.session_id.as_deref().map(SessionId::parse).transpose()?,
        before,
        limit,
        offset,
    };
    // Words are what a search matches, on every store: a query of none
    // matches nothing in any window, so no window is read (and no cursor
    // walks the client through them all).
    if q.query
        .as_deref()
        .is_some_and(|t| search_words::words(t).next().is_none())
    {
        return to_result(&json!({ "results": [], "next_cursor": null }));
    }
    let results = ctx.store.recall(&ctx.caller.tenant, &q).await?;
    let full = results.len() as i64 == limit;
    let next = match results.last() {
        Some(last) if full && !searching => Some(cursor_after(&last.artifact)),
        // A window holds at most LISTING_WINDOW (= MAX_CURSOR_OFFSET)
        // matches, so a page past that offset would be empty anyway.
        _ if full && searching && offset + limit <= args::MAX_CURSOR_OFFSET => {
            Some(search_cursor_at(offset + limit, q.before))
        }
        // A search and a filtered listing look through a window past their
        // cursor: when the project goes on past it, the next page starts
        // after the window's last, however few matched.
        _ if searching => window_end(ctx, &q)
            .await?
            .map(|(at, id)| search_cursor_at(0, Some((at, id)))),
        _ if q.filtered() => window_end(ctx, &q)
            .await?
            .map(|(at, id)| list_cursor_at(at, id)),
        _ => None,
    };
    to_result(&json!({ "results": results, "next_cursor": next }))
}

/// Where the window after `q`'s ends, when the project goes on past it.
async fn window_end(ctx: &ToolCtx<'_>, q: &RecallQuery) -> Result<Option<Keyset>, StoreError> {
    ctx.store.recall_window_end(&ctx.caller.tenant, q).await
}

/// An artifact's place in a project's newest-first order.
type Keyset = (chrono::DateTime<chrono::Utc>, ArtifactId);

/// The listing cursor that pages on after `a` (what `list_cursor` reads).
fn cursor_after(a: &brain_core::model::Artifact) -> String {
    list_cursor_at(a.created_at, a.artifact_id)
}

fn list_cursor_at(at: chrono::DateTime<chrono::Utc>, id: ArtifactId) -> String {
    format!("{}_{}", at.timestamp_micros(), id)
}

/// A search's cursor: the offset in its window's ranking, and where the
/// window starts after the first (`<offset>` or `<offset>@<listing cursor>`).
fn search_cursor_at(offset: i64, window: Option<Keyset>) -> String {
    match window {
        None => offset.to_string(),
        Some((at, id)) => format!("{offset}@{}", list_cursor_at(at, id)),
    }
}

/// What `search_cursor_at` wrote (a bare offset is the first window's, as
/// the cursors before windows were).
fn search_cursor(c: Option<&str>) -> Result<(i64, Option<Keyset>), DomainError> {
    match c.and_then(|c| c.split_once('@')) {
        None => Ok((args::cursor_offset(c)?, None)),
        Some((offset, window)) => Ok((
            args::cursor_offset(Some(offset))?,
            Some(list_cursor(window)?),
        )),
    }
}

/// A listing's cursor: `<created_at µs>_<artifact_id>` of the previous page's last.
fn list_cursor(c: &str) -> Result<Keyset, DomainError> {
    let bad = || DomainError::invalid_argument("cursor", "is not a cursor from this tool");
    let (micros, id) = c.split_once('_').ok_or_else(bad)?;
    let at = micros
        .parse::<i64>()
        .ok()
        .and_then(chrono::DateTime::from_timestamp_micros)
        .ok_or_else(bad)?;
    let id = ArtifactId::parse(id).map_err(|_| bad())?;
    Ok((at, id))
}

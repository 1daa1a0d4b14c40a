use brain_core::DomainError;
use brain_core::ids::TenantId;
use brain_core::ids::{ClientKey, ProjectKey, SessionId, SlotName};
use brain_core::model::SessionStatus;
use brain_core::store::{SessionListQuery, Store};
use chrono::DateTime;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_list";

const DESCRIPTION: &str = "List a project's agent sessions, newest opened first. Use it to find open or idle work to resume or abandon (a relay's receiver: filter by slot, your client_key and status open) or what recent sessions concluded; one by id: brain_session_get.";

#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Open,
    Ended,
    Conflicted,
    Relayed,
    Abandoned,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Project to list.
    pub project: String,
    /// Only this status (idle ones are open).
    #[serde(default)]
    pub status: Option<Status>,
    /// Only this slot's.
    #[serde(default)]
    pub slot: Option<String>,
    /// Only this client_key's.
    #[serde(default)]
    pub client_key: Option<String>,
    /// Sessions per page.
    #[serde(default)]
    pub limit: Option<i64>,
    /// next_cursor; repeat the other arguments.
    #[serde(default)]
    pub cursor: Option<String>,
}

fn parse_cursor(c: &str) -> Result<(DateTime<chrono::Utc>, SessionId), DomainError> {
    let bad = || DomainError::invalid_argument("cursor", "is not a cursor from brain_session_list");
    let (micros, id) = c.split_once(':').ok_or_else(bad)?;
    let micros: i64 = micros.parse().map_err(|_| bad())?;
    let at = DateTime::from_timestamp_micros(micros).ok_or_else(bad)?;
    Ok((at, SessionId::parse(id).map_err(|_| bad())?))
}

pub fn definition() -> Tool {
    let detail = json!({
        "type": "object",
        "properties": {
            "session": schemas::session_ref(),
            "idle": {"type": "boolean"},
            "ledger_size": {"type": "integer"},
            "next_focus_chars": {"type": ["integer", "null"], "description": "Its next_focus's length (next_focus itself is null here); null if open."}
        },
        "required": ["session", "idle", "ledger_size", "next_focus_chars"]
    });
    define::<Args>(
        NAME,
        "List sessions",
        DESCRIPTION,
        schemas::output(
            schemas::props(json!({
                "sessions": {"type": "array", "items": detail},
                "next_cursor": {"type": ["string", "null"], "description": "With slot or client_key, a page looks through 10,000 sessions at most, so it may come short or empty with a cursor: page on until null."}
            })),
            &["sessions", "next_cursor"],
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
    let limit = args::bounded("limit", a.limit, 20, 50)?;
    let q = SessionListQuery {
        project: ProjectKey::parse_for_caller(&a.project)?,
        status: a.status.map(|s| match s {
            Status::Open => SessionStatus::Open,
            Status::Ended => SessionStatus::Ended,
            Status::Conflicted => SessionStatus::Conflicted,
            Status::Relayed => SessionStatus::Relayed,
            Status::Abandoned => SessionStatus::Abandoned,
        }),
        slot: a.slot.as_deref().map(SlotName::parse).transpose()?,
        client_key: a
            .client_key
            .as_deref()
            .map(|k| ClientKey::parse("client_key", k))
            .transpose()?,
        after: a.cursor.as_deref().map(parse_cursor).transpose()?,
        from: None,
        limit,
    };
    page(ctx.store, &ctx.caller.tenant, &q).await
}

/// A page of a project's agent sessions, newest first, as the tool answers
/// it: summaries and sizes, not whole bodies.
pub async fn page(store: &dyn Store, tenant: &TenantId, q: &SessionListQuery) -> ToolResult {
    let limit = q.limit;
    let cursor =
        |(at, id): (DateTime<chrono::Utc>, SessionId)| format!("{}:{}", at.timestamp_micros(), id);
    // A slot or client_key filters within a window of the newest sessions
    // past the cursor. Its end is read first and bounds the page, so the
    // two agree however sessions open or close between them; while the
    // project goes on past it, the next page starts after the window,
    // however few matched.
    let (sessions, window_end) = match q.filtered() {
        true => {
            let end = store.session_list_window_end(tenant, q).await?;
            let bounded = SessionListQuery {
                from: end,
                ..q.clone()
            };
            (store.session_list(tenant, &bounded).await?, end)
        }
        false => (store.session_list(tenant, q).await?, None),
    };
    let next = match sessions.last() {
        Some(d) if sessions.len() as i64 == limit => {
            Some(cursor((d.session.opened_at, d.session.session_id)))
        }
        _ => window_end.map(cursor),
    };
    let mut listed =
        serde_json::to_value(&sessions).map_err(brain_core::error::StoreError::backend)?;
    if let Some(items) = listed.as_array_mut() {
        for (item, d) in items.iter_mut().zip(&sessions) {
            item["session"]["next_focus"] = Value::Null;
            item["next_focus_chars"] =
                json!(d.session.next_focus.as_ref().map(|f| f.chars().count()));
        }
    }
    to_result(&json!({ "sessions": listed, "next_cursor": next }))
}

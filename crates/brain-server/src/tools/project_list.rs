use brain_core::store::ProjectQuery;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_project_list";

const DESCRIPTION: &str = "List your tenant's projects, sorted by name, with base focus revision, slots, open sessions and last activity. Find the project to start in: a new name would create an empty one.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Only names starting with this.
    #[serde(default)]
    pub prefix: Option<String>,
    /// Projects per page.
    #[serde(default)]
    pub limit: Option<i64>,
    /// next_cursor; repeat prefix.
    #[serde(default)]
    pub cursor: Option<String>,
}

pub fn definition() -> Tool {
    let project = json!({
        "type": "object",
        "properties": {
            "project": {"type": "string"},
            "base_revision": {"type": "integer"},
            "slots": {"type": "integer"},
            "open_sessions": {"type": "integer"},
            "last_activity_at": {"type": ["string", "null"]}
        },
        "required": ["project", "base_revision", "slots", "open_sessions", "last_activity_at"]
    });
    define::<Args>(
        NAME,
        "List projects",
        DESCRIPTION,
        schemas::output(
            schemas::props(json!({
                "projects": {"type": "array", "items": project},
                "next_cursor": {"type": ["string", "null"]}
            })),
            &["projects", "next_cursor"],
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
    let limit = args::bounded("limit", a.limit, 50, 100)?;
    // A prefix is a name's beginning: the same characters, the same length.
    if let Some(p) = a.prefix.as_deref()
        && !p.is_empty()
    {
        brain_core::ids::ProjectKey::parse(p).map_err(|_| {
            brain_core::DomainError::invalid_argument(
                "prefix",
                "is not the beginning of a project name (letters, digits, . _ / -, at most 128)",
            )
        })?;
    }
    // A cursor is the previous page's last name.
    if let Some(c) = a.cursor.as_deref() {
        brain_core::ids::ProjectKey::parse(c).map_err(|_| {
            brain_core::DomainError::invalid_argument(
                "cursor",
                "is not a cursor from brain_project_list",
            )
        })?;
    }
    let q = ProjectQuery {
        search: None,
        prefix: a.prefix.as_deref().filter(|p| !p.is_empty()),
        after: a.cursor.as_deref(),
        limit,
    };
    let projects = ctx.store.projects(&ctx.caller.tenant, &q).await?;
    let next = (projects.len() as i64 == limit)
        .then(|| projects.last())
        .flatten()
        .map(|p| p.project.as_str().to_owned());
    // The console's idle count stays out: an agent asks brain_session_list.
    let projects: Vec<_> = projects
        .iter()
        .map(|p| {
            json!({
                "project": p.project,
                "base_revision": p.base_revision,
                "slots": p.slots,
                "open_sessions": p.open_sessions,
                "last_activity_at": p.last_activity_at.as_ref().map(brain_core::model::rfc3339),
            })
        })
        .collect();
    to_result(&json!({ "projects": projects, "next_cursor": next }))
}

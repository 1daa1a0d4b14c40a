use brain_core::diff::{DiffJob, PAGE_BUDGET, unified_page};
use brain_core::ids::{ProjectKey, SlotName, TenantId};
use brain_core::model::Revision;
use brain_core::store::Store;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_focus_history";

const DESCRIPTION: &str = "List the revisions of a project's base focus or of one slot, newest first, each with its unified diff from the one before. Use it to see which session changed the focus or recover dropped text from the diffs; the current body is brain_focus_get's.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Project to read.
    pub project: String,
    /// The slot; omit for the base focus.
    #[serde(default)]
    pub slot: Option<String>,
    /// Revisions per page.
    #[serde(default)]
    pub limit: Option<i64>,
    /// Revisions below this (next_before).
    #[serde(default)]
    pub before_revision: Option<i64>,
}

pub fn definition() -> Tool {
    let entry = json!({
        "type": "object",
        "properties": {
            "revision": {"type": "integer"},
            "body_chars": {"type": "integer"},
            "session_id": {"type": "string"},
            "receipt_seq": {"type": "integer"},
            "created_at": {"type": "string"},
            "diff": {"type": "string"}
        },
        "required": ["revision", "body_chars", "session_id", "receipt_seq", "created_at", "diff"]
    });
    define::<Args>(
        NAME,
        "Focus history",
        DESCRIPTION,
        schemas::output(
            schemas::props(json!({
                "entries": {"type": "array", "items": entry},
                "next_before": {"type": ["integer", "null"]}
            })),
            &["entries", "next_before"],
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
    let project = ProjectKey::parse_for_caller(&a.project)?;
    let slot = a.slot.as_deref().map(SlotName::parse).transpose()?;
    let limit = args::bounded("limit", a.limit, 10, 50)?;
    let at = (&project, slot.as_ref());
    page(ctx.store, &ctx.caller.tenant, at, a.before_revision, limit).await
}

/// A page of the base focus's or a slot's revisions, newest first, each
/// with its diff from the one before, as the tool answers it.
pub async fn page(
    store: &dyn Store,
    tenant: &TenantId,
    (project, slot): (&ProjectKey, Option<&SlotName>),
    before_revision: Option<Revision>,
    limit: i64,
) -> ToolResult {
    let rows = store
        .focus_history(tenant, project, slot, before_revision, limit)
        .await?;
    let shown = rows.len().min(usize::try_from(limit).unwrap_or(0));
    // Revision 1's predecessor is the empty body at revision 0. The page's
    // diffs share one CPU budget, off the async workers (brain_core::diff);
    // each body is shared by the two diffs it is part of, not copied.
    let bodies: Vec<std::sync::Arc<str>> = rows.iter().map(|e| e.body.as_str().into()).collect();
    let empty: std::sync::Arc<str> = "".into();
    let jobs = (0..shown)
        .map(|i| {
            let e = &rows[i];
            let prev = bodies.get(i + 1).cloned().unwrap_or_else(|| empty.clone());
            let prev_rev = rows.get(i + 1).map_or(e.revision - 1, |p| p.revision);
            DiffJob::shared(
                prev,
                bodies[i].clone(),
                format!("revision {prev_rev}"),
                format!("revision {}", e.revision),
            )
        })
        .collect();
    let revisions: Vec<Revision> = rows.iter().take(shown).map(|e| e.revision).collect();
    let diffs = unified_page(tenant.as_str(), jobs, PAGE_BUDGET).await;
    let diffs = within_page_bytes(diffs, &revisions);
    drop(bodies);
    // A list carries sizes, not bodies (SPEC §2.8: session, receipt and
    // diff): the diff holds the replaced wording.
    let entries: Vec<_> = rows
        .iter()
        .zip(diffs)
        .map(|(e, diff)| {
            json!({
                "revision": e.revision,
                "body_chars": e.body.chars().count(),
                "session_id": e.session_id,
                "receipt_seq": e.receipt_seq,
                "created_at": brain_core::model::rfc3339(&e.created_at),
                "diff": diff,
            })
        })
        .collect();
    let next_before = (rows.len() > shown).then(|| rows[shown - 1].revision);
    to_result(&json!({ "entries": entries, "next_before": next_before }))
}

/// The bytes of diff one page answers at most. Fifty revisions alternating
/// between two 256 KiB bodies of a few long lines diff cheaply, well within
/// the page's CPU budget, yet each diff is about 512 KiB: a page of them was
/// some 25 MB of answer (sent twice, as structured content and as text).
pub const PAGE_DIFF_BYTES: usize = 1024 * 1024;

/// `diffs`, newest first, each kept while the page's diffs so far fit
/// [`PAGE_DIFF_BYTES`] (an empty diff stays empty); past that a diff keeps its two header lines and says
/// it was not shown (the "diff not shown" text of a diff too costly).
fn within_page_bytes(diffs: Vec<String>, revisions: &[Revision]) -> Vec<String> {
    let mut spent = 0usize;
    diffs
        .into_iter()
        .zip(revisions)
        .map(|(d, revision)| {
            spent = spent.saturating_add(d.len());
            if d.is_empty() || spent <= PAGE_DIFF_BYTES {
                return d;
            }
            let header: String = d.split_inclusive('\n').take(2).collect();
            format!(
                "{header}@@ diff not shown: the page's diffs passed {PAGE_DIFF_BYTES} bytes; ask for fewer revisions (limit) with before_revision {} @@\n",
                revision.saturating_add(1)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_of_large_diffs_stops_at_its_byte_budget() {
        let big = |rev: usize| {
            format!(
                "--- revision {}\n+++ revision {rev}\n{}",
                rev - 1,
                "x".repeat(400 * 1024)
            )
        };
        let out = within_page_bytes(vec![big(4), big(3), big(2), String::new()], &[4, 3, 2, 1]);
        assert_eq!(out[0], big(4));
        assert_eq!(out[1], big(3));
        assert!(
            out[2].starts_with(
                "--- revision 1\n+++ revision 2\n@@ diff not shown: the page's diffs passed"
            ),
            "{}",
            out[2]
        );
        assert!(out[2].len() < 300);
        assert_eq!(out[3], "", "an unchanged revision's diff stays empty");
        let total: usize = out.iter().map(String::len).sum();
        assert!(total <= PAGE_DIFF_BYTES + 300, "{total}");
    }
}

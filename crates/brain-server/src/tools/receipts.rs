use brain_core::ids::{ProjectKey, SessionId, TenantId};
use brain_core::store::{ReceiptQuery, Store};
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_receipts";

const DESCRIPTION: &str = "List your tenant's receipts: one per mutating call that passed validation, refused or not (not resume, dry runs or replays). Audit who changed what (focus diffs: brain_focus_history). prev_hash links each to the tenant chain's previous receipt, even one the filters hide; ledger_tip is the newest.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Only this project's receipts.
    #[serde(default)]
    pub project: Option<String>,
    /// Only this session's (a tracer's too).
    #[serde(default)]
    pub session_id: Option<String>,
    /// Only seq above this (either order).
    #[serde(default)]
    pub since_seq: Option<i64>,
    /// Seq below this; order newest only (else invalid_argument).
    #[serde(default)]
    pub before_seq: Option<i64>,
    /// oldest (default): ascending, next page since_seq = next_since. newest: descending, next page before_seq = next_before.
    #[serde(default)]
    pub order: Option<Order>,
    /// Receipts per page.
    #[serde(default)]
    pub limit: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    Oldest,
    Newest,
}

pub fn definition() -> Tool {
    define::<Args>(
        NAME,
        "List receipts",
        DESCRIPTION,
        schemas::output(
            schemas::props(json!({
                "receipts": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "receipt_id": {"type": "string"},
                        "tenant": {"type": "string"},
                        "seq": {"type": "integer"},
                        "at": schemas::timestamp(),
                        "tool": {"type": "string"},
                        "project": {"type": ["string", "null"]},
                        "session_id": {"type": ["string", "null"], "description": "Else the connection's tracer; null if neither (e.g. cli)."},
                        "credential_kind": {"type": "string", "enum": ["jwt", "shared_token", "stdio", "cli"]},
                        "subject": {"type": "string"},
                        "token_id": {"type": ["string", "null"]},
                        "connection_id": {"type": ["string", "null"], "description": "Another connection's as fp_ fingerprint."},
                        "elevated": {"type": "boolean"},
                        "outcome": {"type": "string", "description": "ok, conflict or an error code."},
                        "request_digest": {"type": "string"},
                        "prev_hash": {"type": "string"},
                        "hash": {"type": "string"}
                    },
                    "required": ["receipt_id", "tenant", "seq", "at", "tool", "project", "session_id", "credential_kind",
                                 "subject", "token_id", "connection_id", "elevated", "outcome", "request_digest", "prev_hash", "hash"]
                }},
                "ledger_tip": {
                    "type": "object",
                    "properties": {"seq": {"type": "integer"}, "hash": {"type": "string"}},
                    "required": ["seq", "hash"]
                },
                "next_since": {"type": ["integer", "null"], "description": "For order oldest. A filtered page reads 10,000 receipts of the chain at most, so it may come short or empty with a cursor: page on until null."},
                "next_before": {"type": ["integer", "null"], "description": "For order newest; as next_since."}
            })),
            &["receipts", "ledger_tip", "next_since", "next_before"],
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
    let q = ReceiptQuery {
        project: a
            .project
            .as_deref()
            .map(ProjectKey::parse_for_caller)
            .transpose()?,
        session_id: a.session_id.as_deref().map(SessionId::parse).transpose()?,
        after_seq: match a.since_seq {
            Some(n) if n < 0 => {
                return Err(brain_core::DomainError::invalid_argument(
                    "since_seq",
                    "must be 0 or more",
                )
                .into());
            }
            n => n.unwrap_or(0),
        },
        before_seq: match a.before_seq {
            Some(n) if n < 1 => {
                return Err(brain_core::DomainError::invalid_argument(
                    "before_seq",
                    "must be 1 or more",
                )
                .into());
            }
            n => n,
        },
        until_seq: None,
        limit,
    };
    let q = match (a.order, q.before_seq) {
        (Some(Order::Newest), None) => ReceiptQuery {
            before_seq: Some(i64::MAX),
            ..q
        },
        (Some(Order::Oldest), Some(_)) => {
            return Err(brain_core::DomainError::invalid_argument(
                "order",
                "oldest pages with since_seq; before_seq pages newest first",
            )
            .into());
        }
        _ => q,
    };
    let on = ctx.caller.connection_id.as_deref();
    page(ctx.store, &ctx.caller.tenant, &q, on).await
}

/// How many receipts of the chain a filtered page looks through. A filter
/// (project, session) is not in the chain's index, so a page that found
/// fewer than its limit read every receipt after its cursor: 40 ms at
/// 300,000 receipts for a session with none left. A page reads at most this
/// window and names the next cursor while the chain goes on past it.
pub const FILTERED_WINDOW: i64 = 10_000;

/// A page of the tenant's receipts with the ledger tip, as the tool answers
/// it; `on` is the MCP connection the call came on (`None`: no connection).
pub async fn page(
    store: &dyn Store,
    tenant: &TenantId,
    q: &ReceiptQuery,
    on: Option<&str>,
) -> ToolResult {
    let limit = q.limit;
    let (seq, hash) = store.ledger_tip(tenant).await?;
    let filtered = q.project.is_some() || q.session_id.is_some();
    // The window this page reads, never past the tip it answers with, and
    // where the next page starts if the chain goes on past the window (oldest
    // first: the window's last seq; newest first: one above its first).
    let (q, past_window) = match q.before_seq {
        None => {
            let until = match filtered {
                true => q.after_seq.saturating_add(FILTERED_WINDOW).min(seq),
                false => seq,
            };
            let q = ReceiptQuery {
                until_seq: Some(until),
                ..q.clone()
            };
            (q, (filtered && until < seq).then_some(until))
        }
        Some(before) => {
            let before = before.min(seq.saturating_add(1));
            let after = match filtered {
                true => q.after_seq.max(before.saturating_sub(FILTERED_WINDOW + 1)),
                false => q.after_seq,
            };
            let onward = (after > q.after_seq).then_some(after + 1);
            let q = ReceiptQuery {
                after_seq: after,
                before_seq: Some(before),
                ..q.clone()
            };
            (q, onward)
        }
    };
    let mut receipts = store.receipts_page(tenant, &q).await?;
    // A connection id is a bearer capability: only the connection the call
    // came on is shown as itself, every other as its fingerprint.
    for r in &mut receipts {
        if r.connection_id.is_some() && r.connection_id.as_deref() != on {
            r.connection_id = r
                .connection_id
                .as_deref()
                .map(brain_core::operators::connection_fingerprint);
        }
    }
    let next = match (receipts.len() as i64 == limit)
        .then(|| receipts.last().map(|r| r.seq))
        .flatten()
    {
        // Newest first, a full page that ends at its window's floor: the
        // next page is below the window, or there is none past since_seq.
        Some(n) if q.before_seq.is_none() || n > q.after_seq + 1 => Some(n),
        Some(_) | None => past_window,
    };
    let (next_since, next_before) = match q.before_seq {
        None => (next, None),
        Some(_) => (None, next),
    };
    to_result(&json!({
        "receipts": receipts,
        "ledger_tip": {"seq": seq, "hash": hash},
        "next_since": next_since,
        "next_before": next_before,
    }))
}

use brain_core::ids::{ProjectKey, SessionId};
use brain_core::store::ReceiptQuery;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_receipts";

const DESCRIPTION: &str = "List your tenant's receipts — one per mutating call, whatever its \
outcome — oldest first after since_seq, optionally for one project or session, with the ledger \
tip (the newest hash). Read-only. Use it to audit who did what on which connection (connections \
other than yours show as a fingerprint); each receipt hashes the one before, so any edit breaks \
the chain. Pages with \
since_seq/next_since.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Only this project's receipts.
    #[serde(default)]
    pub project: Option<String>,
    /// Only this session's receipts (sess_ + 32 hex).
    #[serde(default)]
    pub session_id: Option<String>,
    /// Only receipts after this seq (next_since of the previous page). Default 0.
    #[serde(default)]
    pub since_seq: Option<i64>,
    /// Receipts per page, 1–100. Default 50.
    #[serde(default)]
    pub limit: Option<i64>,
}

pub fn definition() -> Tool {
    define::<Args>(
        NAME,
        "List receipts",
        DESCRIPTION,
        schemas::output(
            schemas::props(json!({
                "receipts": {"type": "array", "items": {"type": "object"}},
                "ledger_tip": {
                    "type": "object",
                    "properties": {"seq": {"type": "integer"}, "hash": {"type": "string"}},
                    "required": ["seq", "hash"]
                },
                "next_since": {"type": ["integer", "null"], "description": "Pass as since_seq for the next page; null at the end."}
            })),
            &["receipts", "ledger_tip", "next_since"],
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
        after_seq: a.since_seq.unwrap_or(0).max(0),
        limit,
    };
    let mut receipts = ctx.store.receipts_page(&ctx.caller.tenant, &q).await?;
    // A connection id is a bearer capability: only the connection the call
    // came on is shown as itself, every other as its fingerprint.
    for r in &mut receipts {
        if r.connection_id.is_some() && r.connection_id != ctx.caller.connection_id {
            r.connection_id = r
                .connection_id
                .as_deref()
                .map(brain_core::operators::connection_fingerprint);
        }
    }
    let (seq, hash) = ctx.store.ledger_tip(&ctx.caller.tenant).await?;
    let next = (receipts.len() as i64 == limit)
        .then(|| receipts.last().map(|r| r.seq))
        .flatten();
    to_result(
        &json!({ "receipts": receipts, "ledger_tip": {"seq": seq, "hash": hash}, "next_since": next }),
    )
}

use brain_core::ids::{ProjectKey, SessionId};
use brain_core::store::ReceiptQuery;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, to_result};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_receipts";

const DESCRIPTION: &str = "List your tenant's receipts, oldest first: one per mutating call that passed validation, \
refused or not (none for reads, resume, dry runs or replays). Use it to audit who changed what, \
e.g. the call behind a focus revision (brain_focus_history's receipt_seq); for current state \
read brain_session_get or brain_focus_get instead. Fields: receipt_id, seq, at, tool, project, \
session_id (calls naming no session are filed under the connection's tracer session), \
credential_kind, subject, token_id, connection_id (others' shown as an fp_ fingerprint), \
elevated, outcome (ok, conflict or an error code), request_digest, prev_hash, hash. Each hash \
covers the one before; ledger_tip is the newest seq and hash. Pages with since_seq/next_since.";

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Only this project's receipts (1–128 characters of letters, digits and . _ / -).
    #[serde(default)]
    pub project: Option<String>,
    /// Only receipts filed under this session (sess_ + 32 hex, or a hyphenated UUID): an agent session, or a tracer session for a connection's other calls.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Only receipts with seq above this: next_since from the previous page. Default 0, from the first receipt.
    #[serde(default)]
    pub since_seq: Option<i64>,
    /// Receipts per page, 1–100; default 50.
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

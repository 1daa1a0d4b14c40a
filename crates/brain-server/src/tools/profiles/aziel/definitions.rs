//! The two seed tools' definitions: descriptions, arguments and the
//! envelope their answers share.

use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{CLOSE, OPEN};
use crate::mcp::schemas;
use crate::tools::{Hints, define};

const OPEN_DESCRIPTION: &str = "Open a raw runtime session — a bare session id (sess_ + 32 \
lowercase hex) with no focus, briefing or documents, for runtime flows written against \
aziel-runtime that pass one along — which runtime_session_close later seals. Its answers use the \
aziel envelope (code, status, result, display), not brain's. Use when a runtime flow asks for a session; for a working \
session with a briefing and focus use brain_session_start (or brain_session) instead. Each call \
opens a new session and writes one receipt: reuse the id you have. Unless sealed, the session is \
closed by the server (abandoned, reason expired) after 6 h unused. Errors: invalid_argument (422).";

const CLOSE_DESCRIPTION: &str = "Seal a raw session from runtime_session_open so further calls \
on that session_id are refused, keeping its receipts; not for working sessions \
(brain_session_end, brain_session, brain_session_abandon). Use only when the user asks to close \
the session; otherwise leave it to expire (6 h unused). Requires confirm=true, or dry_run=true to \
preview. Only the credential that opened it may seal it. A second close never reopens it. \
Refusals: MCP-CONFIRM-REQUIRED 428, invalid_argument 422, session_not_found 404, session_closed \
and client_key_mismatch 409. Returns the sealed session, the close receipt and whether it \
verifies against the chain.";

// Unknown keys are ignored, as the seed documents ("Extra keys are ignored").
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct OpenArgs {
    /// Label stored on the session (1–200 characters, non-blank); default aziel:<your subject>. It does not authorise the close: the opening credential does.
    #[serde(default)]
    pub client_key: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct CloseArgs {
    /// The raw session id from runtime_session_open (sess_ + 32 lowercase hex); required unless id is given (neither: invalid_argument "session_id required"; malformed or unknown: session_not_found).
    #[serde(default)]
    #[schemars(regex(pattern = r"^sess_[a-f0-9]{32}$"))]
    pub session_id: Option<String>,
    /// Alias of session_id; send one of the two, never two different values.
    #[serde(default)]
    #[schemars(regex(pattern = r"^sess_[a-f0-9]{32}$"))]
    pub id: Option<String>,
    /// Consent to seal the session (not authentication). Without it (or dry_run) the call is refused with MCP-CONFIRM-REQUIRED.
    #[serde(default)]
    pub confirm: bool,
    /// Preview only: every check runs and nothing is written; MCP-DRY-RUN when a confirmed call would proceed.
    #[serde(default)]
    pub dry_run: bool,
}

fn envelope_schema(codes: &str, result: &str) -> std::sync::Arc<JsonObject> {
    let props = schemas::props(json!({
        "code": {"type": "string", "description": codes},
        "status": {"type": "integer", "description": "HTTP-like status: 200 ok, 400+ refused."},
        "result": {"type": ["object", "null"], "description": result},
        "display": {
            "type": "object",
            "description": "Show title and summary to the user, then do what next says.",
            "properties": {
                "title": {"type": "string", "description": "Short result title."},
                "summary": {"type": "string", "description": "One-line outcome or refusal reason."},
                "next": {"type": "string", "description": "What to do after showing it."}
            }
        },
        "refusal": {"type": ["object", "null"], "description": "{code, message} when refused."},
        "ledger_tip": {"type": "object", "description": "The tenant's receipt chain tip {seq, hash} after the call."},
        "session_id": {"type": ["string", "null"], "description": "The raw session the call was about."}
    }));
    schemas::output(props, &["code", "status", "display", "ledger_tip"])
}

pub fn open_definition() -> Tool {
    define::<OpenArgs>(
        OPEN,
        "Open a raw runtime session",
        OPEN_DESCRIPTION,
        envelope_schema(
            "FG-OK, or invalid_argument when refused.",
            "{session_id, client_key, opened_at, expires_after_secs}; null when refused.",
        ),
        Hints {
            read_only: false,
            destructive: false,
            idempotent: false,
        },
    )
}

pub fn close_definition() -> Tool {
    define::<CloseArgs>(
        CLOSE,
        "Seal a raw runtime session",
        CLOSE_DESCRIPTION,
        envelope_schema(
            "FG-OK, MCP-DRY-RUN, MCP-CONFIRM-REQUIRED, invalid_argument, session_not_found, session_closed or client_key_mismatch.",
            "{sealed, session, receipt, verified} (a dry run: {sealed: false, would, session} with the session as it is now); null when refused.",
        ),
        Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
        },
    )
}

use brain_core::requests::{RelayRequest, limits};
use rmcp::model::{JsonObject, Tool};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, session_end};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_relay";

const DESCRIPTION: &str = "Hand a bound session's slot to another client: this session closes as relayed, writing \
next_focus into the slot with brain_session_end's checks, codes and compare-and-swap \
(slot_focus_shrink), and a new session bound to the slot opens for to_client_key. To stop \
without a successor use brain_session_end. The receiver calls brain_session_resume with \
new_session.session_id and to_client_key, then ends with the returned slot.revision. An unbound \
session is refused (relay_requires_slot, 409). A stale revision closes this session as \
conflicted, writes no focus and opens no session (new_session null; slot shows the current \
body); a dry run opens none either. An exact repeat returns the stored result with replayed: \
true.";

session_end::end_args!(Args {
    /// The receiving client's client_key (non-blank, ≤ 200 characters); the new session is opened for it.
    pub to_client_key: String,
});

impl Args {
    /// The end half of the relay, and the receiver.
    fn split(self) -> (session_end::Args, String) {
        let end = session_end::Args {
            session_id: self.session_id,
            expected_client_key: self.expected_client_key,
            summary: self.summary,
            next_focus: self.next_focus,
            expected_focus_revision: self.expected_focus_revision,
            nothing_to_capture_reason: self.nothing_to_capture_reason,
            allow_focus_shrink: self.allow_focus_shrink,
            dry_run: self.dry_run,
        };
        (end, self.to_client_key)
    }
}

/// The relay's own words for the fields it shares with brain_session_end
/// (whose argument struct it flattens): the same field means a slot here.
const PARAMS: &[(&str, &str)] = &[
    (
        "session_id",
        "The open session that holds the slot, bound at start or with brain_session_bind (sess_ + 32 hex, or a hyphenated UUID).",
    ),
    (
        "expected_client_key",
        "The client_key this session was started (or relayed) with; checked first, client_key_mismatch otherwise.",
    ),
    (
        "summary",
        "What this session did and learned (non-blank, ≤ 32 KiB); kept on the relayed session and shown in later briefings' recent_sessions.",
    ),
    (
        "next_focus",
        "The whole new slot body the receiver starts from (non-blank, ≤ 256 KiB). Start from the current body and carry forward every durable decision, commitment and deadline, plus what the receiver should do next.",
    ),
    (
        "expected_focus_revision",
        "The slot's current revision, as start, bind, resume or a previous relay returned it; never started_focus_revision. Any other value closes this session as conflicted and opens no new one.",
    ),
    (
        "nothing_to_capture_reason",
        "Optional honest statement that this session produced nothing durable; omit it when it did. Non-blank when given (≤ 4 KiB); kept on the session.",
    ),
    (
        "allow_focus_shrink",
        "Override of the 70% shrink guard: allowed for operator- or relay-role tokens (or with an operator's /brain-admin elevation), else focus_shrink_override_refused (403).",
    ),
    (
        "dry_run",
        "true to run every check and answer what would happen (would: applied, unchanged or conflict), writing nothing: no receipt, no new session (new_session and slot are null). Default false.",
    ),
    (
        "to_client_key",
        "The receiving client's client_key (non-blank, ≤ 200 characters). The new session is opened for it; the receiver passes it as expected_client_key to brain_session_resume and to its own end.",
    ),
];

pub fn definition() -> Tool {
    let mut props = schemas::end_properties();
    props.insert("new_session".into(), {
        let mut s = schemas::session_ref();
        s["type"] = json!(["object", "null"]);
        s
    });
    props.insert("slot".into(), {
        let mut s = schemas::slot_view();
        s["type"] = json!(["object", "null"]);
        s
    });
    let mut required = schemas::END_REQUIRED.to_vec();
    required.extend(["new_session", "slot"]);
    let mut tool = define::<Args>(
        NAME,
        "Relay a slot to another client",
        DESCRIPTION,
        schemas::output(props, &required),
        Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
        },
    );
    let mut input = (*tool.input_schema).clone();
    if let Some(serde_json::Value::Object(props)) = input.get_mut("properties") {
        for (name, text) in PARAMS {
            if let Some(serde_json::Value::Object(p)) = props.get_mut(*name) {
                p.insert("description".into(), json!(text));
            }
        }
    }
    tool.input_schema = std::sync::Arc::new(input);
    tool
}

pub async fn call(ctx: &ToolCtx<'_>, raw: JsonObject) -> ToolResult {
    let a: Args = args::parse_tool(raw)?;
    args::max_chars(
        "to_client_key",
        &a.to_client_key,
        limits::CLIENT_KEY_MAX_CHARS,
    )?;
    // A key that could never open the new session is refused now, not after
    // the slot was written (blank is step 4 of the order of checks, later).
    if !a.to_client_key.trim().is_empty() {
        brain_core::ids::ClientKey::parse("to_client_key", &a.to_client_key)?;
    }
    let digest = args::digest(&a, &["dry_run"]);
    let (end, to_client_key) = a.split();
    let req = RelayRequest {
        end: end.into_request(digest)?,
        to_client_key,
    };
    ctx.store.relay_session(&ctx.caller, req).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use brain_core::error::ErrorCode;

    fn obj(v: serde_json::Value) -> JsonObject {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn flattened_arguments_parse_and_unknown_fields_are_refused() {
        let base = json!({
            "session_id": "sess_0123456789abcdef0123456789abcdef",
            "expected_client_key": "a", "summary": "s", "next_focus": "n",
            "expected_focus_revision": 0, "to_client_key": "b"
        });
        let a: Args = args::parse(obj(base.clone())).unwrap();
        assert_eq!(a.to_client_key, "b");
        let mut bad = base.clone();
        bad["surprise"] = json!(1);
        let e = args::parse::<Args>(obj(bad)).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert_eq!(e.details["field"], json!("surprise"));
        let mut bad = base;
        bad["expected_focus_revision"] = json!("zero");
        let e = args::parse::<Args>(obj(bad)).unwrap_err();
        assert_eq!(e.details["field"], json!("expected_focus_revision"));
    }
}

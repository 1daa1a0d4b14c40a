use brain_core::requests::{RelayRequest, limits};
use rmcp::model::{JsonObject, Tool};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, session_end};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_relay";

const DESCRIPTION: &str = "Hand a bound session's slot to another client: ends this session as \
relayed, writing next_focus into the slot under the same checks as brain_session_end (with \
slot_focus_shrink), and opens a new session for to_client_key bound to the same slot. Give the \
receiver new_session.session_id and slot.revision, the revision it must pass at its own end. An \
unbound session is refused (relay_requires_slot); a stale revision closes this session as \
conflicted and opens no new one (new_session: null). A relay by a credential with role operator or \
relay may set allow_focus_shrink. To finish without handing over, use brain_session_end.";

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
    define::<Args>(
        NAME,
        "Relay a slot to another client",
        DESCRIPTION,
        schemas::output(props, &required),
        Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
        },
    )
}

pub async fn call(ctx: &ToolCtx<'_>, raw: JsonObject) -> ToolResult {
    let a: Args = args::parse_tool(raw)?;
    args::max_chars(
        "to_client_key",
        &a.to_client_key,
        limits::CLIENT_KEY_MAX_CHARS,
    )?;
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

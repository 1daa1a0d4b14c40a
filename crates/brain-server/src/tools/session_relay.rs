use brain_core::requests::{RelayRequest, limits};
use rmcp::model::{JsonObject, Tool};
use serde_json::json;

use super::{Hints, ToolCtx, ToolResult, define, session_end};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_relay";

const DESCRIPTION: &str = "Hand a bound session's slot to a successor: this session closes as relayed, writing next_focus into the slot under brain_session_end's revision and 70% checks (slot_focus_shrink, 409, session stays open). A new session bound to the slot opens for to_client_key: the receiver resumes new_session.session_id (you pass it to the receiver, or it finds it with brain_session_list). Unbound: relay_requires_slot (409). A stale revision (relay never merges) closes this session as conflicted and opens none (new_session null): start anew on the slot, merge your text into slot.body and relay again. No successor: brain_session_end.";

session_end::end_args!(Args {
    /// The receiving client's client_key; the new session is opened for it.
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
            merge: false,
        };
        (end, self.to_client_key)
    }
}

/// The relay's own words for the fields it shares with brain_session_end
/// (whose argument struct it flattens): the same field means a slot here.
const PARAMS: &[(&str, &str)] = &[
    ("session_id", "The open, bound session."),
    ("expected_client_key", "This session's client_key."),
    ("summary", "What was done; later briefings show it."),
    (
        "next_focus",
        "The whole new slot body the receiver starts from, with what to do next.",
    ),
    (
        "expected_focus_revision",
        "session.read_revision (the slot's) or a merged brain_focus_get's.",
    ),
    (
        "nothing_to_capture_reason",
        "Why nothing durable was done; pass the slot's body unchanged as next_focus.",
    ),
    (
        "allow_focus_shrink",
        "Lift the 70% guard: operator- or relay-role JWTs only, no elevation needed; else focus_shrink_override_refused (403).",
    ),
    ("dry_run", "Check, but write nothing."),
    ("to_client_key", "The receiver's client_key (may be yours)."),
];

pub fn definition() -> Tool {
    // Every field it returns is typed: end's, but focus_at_end (the slot
    // carries that body and revision), and the relay's own.
    let mut props = schemas::end_properties();
    props.remove("focus_at_end");
    // A relay does not merge.
    props.remove("merge");
    props.insert(
        "focus_outcome".into(),
        json!({"type": "string", "enum": ["applied", "unchanged", "conflict"]}),
    );
    props.insert(
        "would".into(),
        json!({"type": ["string", "null"], "enum": ["applied", "unchanged", "conflict", null]}),
    );
    // brain_session_end's schema describes these; the types suffice here.
    for v in props.values_mut() {
        if let Some(o) = v.as_object_mut() {
            o.remove("description");
        }
    }
    props.insert(
        "new_session".into(),
        json!({"type": ["object", "null"], "description": "The receiver's session, as brain_session_get's."}),
    );
    props.insert(
        "slot".into(),
        schemas::described(schemas::slot_view(), "As written, or current on conflict."),
    );
    let required: Vec<&str> = schemas::END_REQUIRED
        .iter()
        .copied()
        .filter(|f| *f != "focus_at_end")
        .chain(["new_session", "slot"])
        .collect();
    let output = schemas::output(props, &required);
    let mut tool = define::<Args>(
        NAME,
        "Relay a slot",
        DESCRIPTION,
        output,
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
        brain_core::ids::ClientKey::parse_for_caller("to_client_key", &a.to_client_key)?;
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

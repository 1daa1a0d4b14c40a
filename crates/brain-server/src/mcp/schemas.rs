//! Output schemas, written as data from shared fragments.
//!
//! Every output schema also admits the tool-error envelope (`{"error": …}`,
//! its fields typed once in the server instructions rather than sixteen times):
//! widely deployed clients (TypeScript SDK 1.x) validate `structuredContent`
//! against `outputSchema` even when `isError` is true, and would otherwise
//! hide brain's error codes behind a schema failure.

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::{Value, json};

fn nullable(mut v: Value) -> Value {
    if let Some(t) = v.get("type").cloned() {
        v["type"] = json!([t, "null"]);
    }
    v
}

/// `v` with a description.
pub fn described(mut v: Value, text: &str) -> Value {
    v["description"] = json!(text);
    v
}

/// An RFC 3339 time (the instructions say so once); its field name says
/// what happened then.
pub fn timestamp() -> Value {
    json!({"type": "string"})
}

pub fn session() -> Value {
    json!({
        "type": "object",
        "properties": {
            "session_id": {"type": "string"},
            "project": {"type": "string"},
            "client_key": {"type": "string"},
            "kind": {"type": "string", "enum": ["agent", "tracer"]},
            "bound_slot": {"type": ["string", "null"]},
            "started_focus_revision": {"type": "integer", "description": "The base focus's, even if bound."},
            "read_revision": {"type": ["integer", "null"], "description": "Of the focus its end writes, as last read: end's expected_focus_revision after a restart; null for tracers."},
            "relayed_from": {"type": ["string", "null"]},
            "relayed_to": {"type": ["string", "null"]},
            "status": {"type": "string", "enum": ["open", "ended", "conflicted", "relayed", "abandoned"]},
            "opened_at": timestamp(),
            "last_activity_at": timestamp(),
            "ended_at": nullable(timestamp()),
            "summary": {"type": ["string", "null"]},
            "next_focus": {"type": ["string", "null"]},
            "nothing_to_capture_reason": {"type": ["string", "null"]},
            "focus_outcome": {"type": ["string", "null"], "enum": ["applied", "unchanged", "conflict", null], "description": "A merged end shows applied."},
            "abandon_reason": {"type": ["string", "null"]},
            "opened_by": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": ["jwt", "shared_token", "stdio"]},
                    "subject": {"type": "string"}
                },
                "required": ["kind", "subject"]
            }
        },
        "required": ["session_id", "project", "client_key", "kind", "bound_slot", "started_focus_revision",
                     "read_revision", "relayed_from", "relayed_to", "status", "opened_at", "last_activity_at", "ended_at", "opened_by"]
    })
}

/// The session object where another tool's result carries it: its shape is
/// the one `brain_session_get` declares, as the instructions say (one full
/// copy in tools/list instead of nine).
pub fn session_ref() -> Value {
    json!({"type": "object"})
}

/// The briefing where a second tool returns it (brain_session_start declares it whole).
pub fn briefing_ref() -> Value {
    json!({"type": "object", "description": "As in brain_session_start."})
}

pub fn focus_ref(desc: Option<&str>) -> Value {
    let mut v = json!({
        "type": "object",
        "properties": {
            "body": {"type": "string"},
            "revision": {"type": "integer"}
        },
        "required": ["body", "revision"]
    });
    if let Some(d) = desc {
        v["description"] = json!(d);
    }
    v
}

pub fn slot_view() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "body": {"type": "string"},
            "revision": {"type": "integer"}
        },
        "required": ["name", "body", "revision"]
    })
}

const BRIEFING_REQUIRED: &[&str] = &[
    "base_focus",
    "slot",
    "executive_state",
    "brief",
    "mental_models",
    "recall",
    "inbox_count",
    "sync_note",
    "open_sessions",
    "recent_sessions",
    "recovery",
];

pub fn briefing() -> Value {
    json!({
        "type": "object",
        "properties": {
            "base_focus": focus_ref(None),
            "slot": {
                "type": ["object", "null"],
                "properties": {"name": {"type": "string"}, "revision": {"type": "integer"}},
                "required": ["name", "revision"]
            },
            "executive_state": {"type": ["object", "null"]},
            "brief": {
                "type": ["object", "null"],
                "description": "Daily digest, stale after 26h.",
                "properties": {
                    "body": {"type": "string"},
                    "generated_at": timestamp(),
                    "stale": {"type": "boolean"}
                },
                "required": ["body", "generated_at", "stale"]
            },
            "mental_models": {
                "type": "array",
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "body": {"type": "string"}, "truncated": {"type": "boolean"}}, "required": ["name", "body"]}
            },
            "recall": {
                "type": "array",
                "description": "For executive_state's first 3 missions.",
                "items": {"type": "object", "properties": {"mission": {"type": "string"}, "artifacts": {"type": "array", "description": "brain_remember's artifacts."}}, "required": ["mission", "artifacts"]}
            },
            "inbox_count": {"type": "integer"},
            "sync_note": {"type": ["string", "null"]},
            "open_sessions": {"type": "integer"},
            "recent_sessions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "session_id": {"type": "string"},
                        "status": {"type": "string"},
                        "summary": {"type": ["string", "null"]},
                        "ended_at": nullable(timestamp())
                    },
                    "required": ["session_id", "status", "summary", "ended_at"]
                }
            },
            "recovery": {
                "type": ["object", "null"],
                "properties": {
                    "session_id": {"type": "string"},
                    "opened_at": timestamp(),
                    "last_activity_at": timestamp(),
                    "idle": {"type": "boolean"},
                    "ledger_size": {"type": "integer"}
                },
                "required": ["session_id", "opened_at", "last_activity_at", "idle", "ledger_size"]
            }
        },
        "required": BRIEFING_REQUIRED
    })
}

pub fn end_properties() -> serde_json::Map<String, Value> {
    let v = json!({
        "session": session_ref(),
        "replayed": {"type": "boolean"},
        "dry_run": {"type": "boolean"},
        "would": {"type": ["string", "null"], "enum": ["applied", "merged", "unchanged", "conflict", null]},
        "focus_outcome": {"type": "string", "enum": ["applied", "merged", "unchanged", "conflict"]},
        "merge": {
            "type": "object",
            "description": "merge on a stale revision: base_revision, onto_revision, conflicts, text (diff3-marked)."
        },
        "focus_at_end": focus_ref(Some("As this end left it, or found it on conflict.")),
        "focus_revision_at_end": {"type": "integer"},
        "current_focus": {"type": ["string", "null"], "description": "The body now if a replay finds others wrote since, else null."},
        "current_focus_revision": {"type": "integer", "description": "Now; past focus_revision_at_end only on such a replay."},
        "focus_diff": {"type": "string", "description": "Old to new; on conflict yours to current."},
        "unattributed_in_window": {
            "type": "object",
            "description": "Artifacts recorded meanwhile without session_id (pass it to brain_remember).",
            "properties": {
                "count": {"type": "integer"},
                "ids": {"type": "array", "items": {"type": "string"}, "maxItems": 20}
            },
            "required": ["count", "ids"]
        },
        "remaining_open_session_count": {"type": "integer"}
    });
    match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

pub const END_REQUIRED: &[&str] = &[
    "session",
    "replayed",
    "dry_run",
    "would",
    "focus_outcome",
    "focus_at_end",
    "focus_revision_at_end",
    "current_focus",
    "current_focus_revision",
    "focus_diff",
    "unattributed_in_window",
    "remaining_open_session_count",
];

/// An enum lists every value a field takes, null included: its `type` says
/// nothing more.
fn drop_types_beside_enums(v: &mut Value) {
    match v {
        Value::Object(o) => {
            if o.contains_key("enum") {
                o.remove("type");
            }
            o.values_mut().for_each(drop_types_beside_enums);
        }
        Value::Array(a) => a.iter_mut().for_each(drop_types_beside_enums),
        _ => {}
    }
}

/// An output schema: the success shape, or the error envelope.
pub fn output(properties: serde_json::Map<String, Value>, required: &[&str]) -> Arc<JsonObject> {
    let mut schema = json!({
        "type": "object",
        "properties": properties,
        "anyOf": [
            {"required": required},
            {"required": ["error"]}
        ]
    });
    drop_types_beside_enums(&mut schema);
    match schema {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

/// Build a properties map from `json!({...})`.
pub fn props(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

//! Output schemas, written as data from shared fragments.
//!
//! Every output schema also admits the tool-error envelope (`{"error": …}`):
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

pub fn timestamp(desc: &str) -> Value {
    json!({"type": "string", "format": "date-time", "description": desc})
}

pub fn session() -> Value {
    json!({
        "type": "object",
        "description": "One working session.",
        "properties": {
            "session_id": {"type": "string", "description": "sess_ + 32 lowercase hex."},
            "project": {"type": "string"},
            "client_key": {"type": "string"},
            "kind": {"type": "string", "enum": ["agent", "tracer"]},
            "bound_slot": {"type": ["string", "null"], "description": "The slot this session writes at its end; null writes the base focus."},
            "started_focus_revision": {"type": "integer", "description": "Base focus revision when the session opened. Not the revision to pass at the end of a bound session."},
            "status": {"type": "string", "enum": ["open", "ended", "conflicted", "relayed", "abandoned"]},
            "opened_at": timestamp("When the session opened."),
            "last_activity_at": timestamp("Last call that touched the session."),
            "ended_at": nullable(timestamp("When the session closed.")),
            "summary": {"type": ["string", "null"]},
            "next_focus": {"type": ["string", "null"]},
            "nothing_to_capture_reason": {"type": ["string", "null"]},
            "focus_outcome": {"type": ["string", "null"], "enum": ["applied", "unchanged", "conflict", null]},
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
                     "status", "opened_at", "last_activity_at", "ended_at", "opened_by"]
    })
}

/// The session object where another tool's result carries it: its key fields
/// typed, the rest as `brain_session_get` declares them (one full copy in
/// tools/list instead of nine).
pub fn session_ref() -> Value {
    json!({
        "type": "object",
        "description": "The session; every field as brain_session_get's output schema declares it.",
        "properties": {
            "session_id": {"type": "string"},
            "status": {"type": "string", "enum": ["open", "ended", "conflicted", "relayed", "abandoned"]},
            "bound_slot": {"type": ["string", "null"]}
        },
        "required": ["session_id", "status", "bound_slot"]
    })
}

/// The briefing where a second tool returns it (brain_session_start declares it whole).
pub fn briefing_ref() -> Value {
    json!({
        "type": "object",
        "description": "The briefing; every field as brain_session_start's output schema declares it.",
        "required": ["base_focus", "inbox_count", "open_sessions", "recent_sessions"]
    })
}

pub fn focus_ref(desc: &str) -> Value {
    json!({
        "type": "object",
        "description": desc,
        "properties": {
            "body": {"type": "string"},
            "revision": {"type": "integer"}
        },
        "required": ["body", "revision"]
    })
}

pub fn slot_view() -> Value {
    json!({
        "type": "object",
        "description": "A slot body; pass its revision as expected_focus_revision when ending a session bound to it.",
        "properties": {
            "name": {"type": "string"},
            "body": {"type": "string"},
            "revision": {"type": "integer"}
        },
        "required": ["name", "body", "revision"]
    })
}

pub fn briefing() -> Value {
    json!({
        "type": "object",
        "description": "Recalculated from its sources on every call.",
        "properties": {
            "base_focus": focus_ref("The project's base focus."),
            "slot": nullable(slot_view()),
            "executive_state": {"type": ["object", "null"], "description": "objective, missions[], pending_decisions[]; null until written."},
            "brief": {
                "type": ["object", "null"],
                "description": "The server's daily brief; stale when older than 26 h.",
                "properties": {
                    "body": {"type": "string"},
                    "generated_at": {"type": "string", "format": "date-time"},
                    "stale": {"type": "boolean"}
                },
                "required": ["body", "generated_at", "stale"]
            },
            "mental_models": {
                "type": "array",
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "body": {"type": "string"}}, "required": ["name", "body"]}
            },
            "recall": {
                "type": "array",
                "description": "For each of the first 3 missions, its top 3 artifacts.",
                "items": {"type": "object", "properties": {"mission": {"type": "string"}, "artifacts": {"type": "array"}}, "required": ["mission", "artifacts"]}
            },
            "inbox_count": {"type": "integer", "description": "Todo artifacts not yet acknowledged."},
            "sync_note": {"type": ["string", "null"], "description": "The cross-agent sync note; null until written."},
            "open_sessions": {"type": "integer", "description": "Open agent sessions in the project, this one included."},
            "recent_sessions": {
                "type": "array",
                "description": "The last 5 closed sessions, newest first.",
                "items": {
                    "type": "object",
                    "properties": {
                        "session_id": {"type": "string"},
                        "status": {"type": "string"},
                        "summary": {"type": ["string", "null"]},
                        "ended_at": nullable(timestamp("When it closed."))
                    },
                    "required": ["session_id", "status", "summary", "ended_at"]
                }
            },
            "recovery": {
                "type": ["object", "null"],
                "description": "This client's previous session in the project, still open: resume or abandon it.",
                "properties": {
                    "session_id": {"type": "string"},
                    "opened_at": timestamp("When it opened."),
                    "last_activity_at": timestamp("Its last activity."),
                    "idle": {"type": "boolean"},
                    "ledger_size": {"type": "integer"}
                },
                "required": ["session_id", "opened_at", "last_activity_at", "idle", "ledger_size"]
            }
        },
        "required": ["base_focus", "slot", "executive_state", "brief", "mental_models", "recall",
                     "inbox_count", "sync_note", "open_sessions", "recent_sessions", "recovery"]
    })
}

pub fn end_properties() -> serde_json::Map<String, Value> {
    let v = json!({
        "session": session_ref(),
        "replayed": {"type": "boolean", "description": "True when this answers a repeat of the call that closed the session; nothing was written."},
        "dry_run": {"type": "boolean"},
        "would": {"type": ["string", "null"], "description": "On a dry run, what a real call would do: applied, unchanged or conflict."},
        "focus_outcome": {"type": "string", "enum": ["applied", "unchanged", "conflict"]},
        "focus_at_end": focus_ref("The focus as this end left or found it."),
        "focus_revision_at_end": {"type": "integer"},
        "current_focus": {"type": ["string", "null"], "description": "The body as it stands now when it differs from focus_at_end's (a replay after others wrote); null when it is that body: each body is carried once."},
        "current_focus_revision": {"type": "integer"},
        "focus_diff": {"type": "string", "description": "Unified diff: previous → new, or proposal → current on conflict."},
        "unattributed_in_window": {
            "type": "object",
            "description": "Artifacts of the project created during the session that belong to no session: a measure, never a gate.",
            "properties": {
                "count": {"type": "integer"},
                "ids": {"type": "array", "items": {"type": "string"}, "description": "Up to 20 ids."}
            },
            "required": ["count", "ids"]
        },
        "remaining_open_session_count": {"type": "integer", "description": "Open agent sessions left in the project."}
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

fn error_envelope() -> Value {
    json!({
        "type": "object",
        "description": "Instead of the result when isError: {code, message, status, details}.",
        "required": ["code", "message", "status"]
    })
}

/// An output schema: the success shape, or the error envelope.
pub fn output(properties: serde_json::Map<String, Value>, required: &[&str]) -> Arc<JsonObject> {
    let mut props = properties;
    props.insert("error".into(), error_envelope());
    let schema = json!({
        "type": "object",
        "properties": props,
        "anyOf": [
            {"required": required},
            {"required": ["error"]}
        ]
    });
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

//! The tables an export carries, with each column's kind, in the order
//! they are written and read back.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Text,
    Int,
    Flag,
    Uuid,
    Time,
    Json,
    Strings,
    /// A calendar day, `YYYY-MM-DD`.
    Date,
}

pub(super) struct Table {
    pub(super) name: &'static str,
    /// The primary key after `tenant_id`, which every table starts with.
    pub(super) key: &'static [&'static str],
    pub(super) columns: &'static [(&'static str, Kind)],
}

use Kind::*;

/// Columns exported as an expression over their table's row rather than as
/// stored: (table, column, expression). A focus row names its history row
/// for its body (`focus_body!`); the export carries the text itself, so the
/// file reads the same whichever build or store imports it.
pub(super) const READ_AS: &[(&str, &str, &str)] =
    &[("focus_bodies", "body", crate::focus_body!("focus_bodies"))];

/// Every table that holds a tenant's rows, parents before children.
pub(super) const TABLES: &[Table] = &[
    Table {
        name: "tenants",
        key: &[],
        columns: &[("tenant_id", Text), ("created_at", Time)],
    },
    Table {
        name: "receipt_heads",
        key: &[],
        columns: &[("tenant_id", Text), ("seq", Int), ("hash", Text)],
    },
    Table {
        name: "projects",
        key: &["project"],
        columns: &[("tenant_id", Text), ("project", Text), ("created_at", Time)],
    },
    Table {
        name: "focus_bodies",
        key: &["project", "slot"],
        columns: &[
            ("tenant_id", Text),
            ("project", Text),
            ("slot", Text),
            ("body", Text),
            ("revision", Int),
            ("updated_at", Time),
            ("updated_by_session", Uuid),
        ],
    },
    Table {
        name: "focus_history",
        key: &["project", "slot", "revision"],
        columns: &[
            ("tenant_id", Text),
            ("project", Text),
            ("slot", Text),
            ("revision", Int),
            ("body", Text),
            ("session_id", Uuid),
            ("receipt_seq", Int),
            ("created_at", Time),
        ],
    },
    Table {
        name: "sessions",
        key: &["session_id"],
        columns: &[
            ("tenant_id", Text),
            ("session_id", Uuid),
            ("project", Text),
            ("client_key", Text),
            ("kind", Text),
            ("bound_slot", Text),
            ("started_focus_revision", Int),
            ("status", Text),
            ("opened_at", Time),
            ("last_activity_at", Time),
            ("ended_at", Time),
            ("summary", Text),
            ("next_focus", Text),
            ("nothing_to_capture_reason", Text),
            ("abandon_reason", Text),
            ("focus_outcome", Text),
            ("opened_by_kind", Text),
            ("opened_by_subject", Text),
            ("close_digest", Text),
            ("close_result", Json),
            ("opened_by_role", Text),
            ("opened_by_credential", Text),
            ("read_revision", Int),
            ("relayed_from", Uuid),
            ("next_focus_revision", Int),
        ],
    },
    Table {
        name: "artifacts",
        key: &["artifact_id"],
        columns: &[
            ("tenant_id", Text),
            ("artifact_id", Uuid),
            ("project", Text),
            ("session_id", Uuid),
            ("kind", Text),
            ("text", Text),
            ("tags", Strings),
            ("created_at", Time),
            ("acknowledged_at", Time),
            ("ack_note", Text),
        ],
    },
    Table {
        name: "documents",
        key: &["project", "kind", "name"],
        columns: &[
            ("tenant_id", Text),
            ("project", Text),
            ("kind", Text),
            ("name", Text),
            ("body", Text),
            ("revision", Int),
            ("updated_at", Time),
            ("updated_by", Text),
        ],
    },
    Table {
        name: "daily_briefs",
        key: &["project", "day"],
        columns: &[
            ("tenant_id", Text),
            ("project", Text),
            ("day", Date),
            ("body", Text),
            ("generated_at", Time),
        ],
    },
    Table {
        name: "elevations",
        key: &["elevation_id"],
        columns: &[
            ("tenant_id", Text),
            ("elevation_id", Uuid),
            ("credential_id", Text),
            ("subject", Text),
            ("connection_id", Text),
            ("session_id", Uuid),
            ("reason", Text),
            ("granted_at", Time),
            ("expires_at", Time),
            ("revoked_at", Time),
        ],
    },
    Table {
        name: "mcp_connections",
        key: &["connection_id"],
        columns: &[
            ("tenant_id", Text),
            ("connection_id", Text),
            ("credential_kind", Text),
            ("credential_id", Text),
            ("opened_at", Time),
            ("last_seen_at", Time),
            ("closed_at", Time),
            ("init_params", Json),
            ("tracer_session_id", Uuid),
            ("role", Text),
        ],
    },
    Table {
        name: "shared_tokens",
        key: &["token_id"],
        columns: &[
            ("tenant_id", Text),
            ("token_id", Uuid),
            ("name", Text),
            ("token_hash", Text),
            ("created_at", Time),
            ("revoked_at", Time),
        ],
    },
    Table {
        name: "receipts",
        key: &["seq"],
        columns: &[
            ("tenant_id", Text),
            ("seq", Int),
            ("receipt_id", Uuid),
            ("at", Time),
            ("tool", Text),
            ("project", Text),
            ("session_id", Uuid),
            ("credential_kind", Text),
            ("subject", Text),
            ("token_id", Text),
            ("connection_id", Text),
            ("elevated", Flag),
            ("outcome", Text),
            ("request_digest", Text),
            ("prev_hash", Text),
            ("hash", Text),
        ],
    },
];

//! The statements a store writes in its dialect. Each field's comment gives
//! its parameters in order (`$1`, `$2`, … or `?1`, `?2`, …) and the columns
//! it returns; [`super::ops`] binds and reads them.

/// One store's statement texts.
#[derive(Debug)]
pub struct Sql {
    /// tenant, credential_id, now, connection_id, session_id → `found`: the
    /// credential holds a live elevation for the connection or, with no
    /// connection, for the session.
    pub elevation_active: &'static str,
    /// tenant, connection_id → credential_id, role, closed.
    pub connection_owner: &'static str,
    /// tenant, elevation_id, credential_id, subject, connection_id,
    /// session_id, reason, granted_at, expires_at.
    pub elevation_insert: &'static str,
    /// tenant, elevation_id, credential_id, at → the elevation's columns;
    /// keeps an earlier `revoked_at`.
    pub elevation_revoke: &'static str,
    /// tenant, credential_id, now → live elevations' columns, oldest first.
    pub elevation_list: &'static str,
    /// tenant, token_id, name, token_hash, created_at; inserts nothing when
    /// the name is live in the tenant.
    pub token_insert: &'static str,
    /// tenant, name, now → the revoked token's columns.
    pub token_revoke: &'static str,
    /// tenant → the tenant's tokens' columns, oldest first.
    pub token_list: &'static str,
    /// token_hash → tenant_id and the live token's columns.
    pub token_find: &'static str,
    /// → `found`: any live token in any tenant.
    pub token_exists: &'static str,

    /// tenant, connection_id, credential_kind, credential_id, at (opened
    /// and last seen), init_params, tracer_session_id, role.
    pub connection_insert: &'static str,
    /// tenant, connection_id → credential_kind, credential_id, role,
    /// closed_at, last_seen_at, init_params, tracer_session_id.
    pub connection_get: &'static str,
    /// tenant, connection_id, now: last seen now, unless closed.
    pub connection_touch: &'static str,
    /// tenant, connection_id, now → tracer_session_id; keeps an earlier
    /// `closed_at`.
    pub connection_close: &'static str,
    /// tenant, session_id, now: end an open tracer session.
    pub tracer_close: &'static str,
    /// tenant, credential_kind, credential_id, seen_since, role → `mine` (open
    /// connections of this credential and role seen since), `total` (the
    /// tenant's).
    pub connection_open_count: &'static str,
    /// now, seen_before → tenant_id, connection_id, tracer_session_id of every
    /// open connection last seen at or before, closed now (all tenants).
    pub connection_expire: &'static str,
    /// tenant, connection_id → session_id of the newest successful
    /// `brain_session_start` receipt on the connection.
    pub session_started_on: &'static str,
    /// now, runtime project, active_before: abandon open agent sessions of the
    /// project idle since (all tenants).
    pub runtime_expire: &'static str,
}

/// The columns of an elevation, for a store's statements.
#[macro_export]
macro_rules! elevation_columns {
    () => {
        "elevation_id, subject, connection_id, session_id, reason, granted_at, expires_at, revoked_at"
    };
}

/// The columns of a shared token, for a store's statements.
#[macro_export]
macro_rules! token_columns {
    () => {
        "token_id, name, created_at, revoked_at"
    };
}

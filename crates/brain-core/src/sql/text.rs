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

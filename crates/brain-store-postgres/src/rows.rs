//! Row mapping: SQL column lists and their conversion into domain types.

use brain_core::error::StoreError;
use brain_core::ids::{ClientKey, ProjectKey, ReceiptId, SessionId, SlotName, TenantId};
use brain_core::model::{
    CredentialKind, Focus, FocusOutcome, OpenedBy, Role, Session, SessionKind, SessionStatus,
};
use brain_core::receipt::Receipt;
use brain_core::rules::CloseRecord;
use sqlx::Row;
use sqlx::postgres::PgRow;

use crate::db;

pub(crate) const SESSION_COLUMNS: &str = "session_id, project, client_key, kind, bound_slot, \
    started_focus_revision, status, opened_at, last_activity_at, ended_at, summary, next_focus, \
    nothing_to_capture_reason, focus_outcome, abandon_reason, opened_by_kind, opened_by_subject, \
    opened_by_role, opened_by_credential, close_digest, close_result";

pub(crate) const RECEIPT_COLUMNS: &str = "tenant_id, seq, receipt_id, at, tool, project, session_id, \
    credential_kind, subject, token_id, connection_id, elevated, outcome, request_digest, prev_hash, hash";

/// A stored value that no longer parses is corruption, not a caller error.
fn corrupt(what: &str) -> StoreError {
    StoreError::Backend(format!("stored {what} does not parse"))
}

pub(crate) fn session(row: &PgRow) -> Result<(Session, Option<CloseRecord>), StoreError> {
    let project: String = row.try_get("project").map_err(db)?;
    let client_key: String = row.try_get("client_key").map_err(db)?;
    let kind: String = row.try_get("kind").map_err(db)?;
    let bound_slot: Option<String> = row.try_get("bound_slot").map_err(db)?;
    let status: String = row.try_get("status").map_err(db)?;
    let focus_outcome: Option<String> = row.try_get("focus_outcome").map_err(db)?;
    let opened_by_kind: String = row.try_get("opened_by_kind").map_err(db)?;
    let opened_by_role: String = row.try_get("opened_by_role").map_err(db)?;
    let close_digest: Option<String> = row.try_get("close_digest").map_err(db)?;
    let close_result: Option<serde_json::Value> = row.try_get("close_result").map_err(db)?;
    let session = Session {
        session_id: SessionId::from_uuid(row.try_get("session_id").map_err(db)?),
        project: ProjectKey::parse(&project).map_err(|_| corrupt("project"))?,
        client_key: ClientKey::parse("client_key", &client_key)
            .map_err(|_| corrupt("client_key"))?,
        kind: SessionKind::parse(&kind).ok_or_else(|| corrupt("session kind"))?,
        bound_slot: bound_slot
            .map(|s| SlotName::parse(&s).map_err(|_| corrupt("slot")))
            .transpose()?,
        started_focus_revision: row.try_get("started_focus_revision").map_err(db)?,
        status: SessionStatus::parse(&status).ok_or_else(|| corrupt("status"))?,
        opened_at: row.try_get("opened_at").map_err(db)?,
        last_activity_at: row.try_get("last_activity_at").map_err(db)?,
        ended_at: row.try_get("ended_at").map_err(db)?,
        summary: row.try_get("summary").map_err(db)?,
        next_focus: row.try_get("next_focus").map_err(db)?,
        nothing_to_capture_reason: row.try_get("nothing_to_capture_reason").map_err(db)?,
        focus_outcome: focus_outcome
            .map(|s| FocusOutcome::parse(&s).ok_or_else(|| corrupt("focus_outcome")))
            .transpose()?,
        abandon_reason: row.try_get("abandon_reason").map_err(db)?,
        opened_by: OpenedBy {
            kind: CredentialKind::parse(&opened_by_kind)
                .ok_or_else(|| corrupt("credential kind"))?,
            subject: row.try_get("opened_by_subject").map_err(db)?,
            role: Role::parse(&opened_by_role).ok_or_else(|| corrupt("role"))?,
            credential_id: row.try_get("opened_by_credential").map_err(db)?,
        },
    };
    let close = match (close_digest, close_result) {
        (Some(digest), Some(result)) => Some(CloseRecord { digest, result }),
        _ => None,
    };
    Ok((session, close))
}

pub(crate) fn focus(row: &PgRow) -> Result<Focus, StoreError> {
    Ok(Focus {
        body: row.try_get("body").map_err(db)?,
        revision: row.try_get("revision").map_err(db)?,
        updated_at: row.try_get("updated_at").map_err(db)?,
        updated_by_session: row
            .try_get::<Option<uuid::Uuid>, _>("updated_by_session")
            .map_err(db)?
            .map(SessionId::from_uuid),
    })
}

pub(crate) fn receipt(row: &PgRow) -> Result<Receipt, StoreError> {
    let tenant: String = row.try_get("tenant_id").map_err(db)?;
    let kind: String = row.try_get("credential_kind").map_err(db)?;
    Ok(Receipt {
        receipt_id: ReceiptId::from_uuid(row.try_get("receipt_id").map_err(db)?),
        tenant: TenantId::parse(&tenant).map_err(|_| corrupt("tenant"))?,
        seq: row.try_get("seq").map_err(db)?,
        at: row.try_get("at").map_err(db)?,
        tool: row.try_get("tool").map_err(db)?,
        project: row.try_get("project").map_err(db)?,
        session_id: row
            .try_get::<Option<uuid::Uuid>, _>("session_id")
            .map_err(db)?
            .map(SessionId::from_uuid),
        credential_kind: CredentialKind::parse(&kind).ok_or_else(|| corrupt("credential kind"))?,
        subject: row.try_get("subject").map_err(db)?,
        token_id: row.try_get("token_id").map_err(db)?,
        connection_id: row.try_get("connection_id").map_err(db)?,
        elevated: row.try_get("elevated").map_err(db)?,
        outcome: row.try_get("outcome").map_err(db)?,
        request_digest: row.try_get("request_digest").map_err(db)?,
        prev_hash: row.try_get("prev_hash").map_err(db)?,
        hash: row.try_get("hash").map_err(db)?,
    })
}

pub(crate) const ARTIFACT_COLUMNS: &str =
    "artifact_id, project, session_id, kind, text, tags, created_at, acknowledged_at, ack_note";

pub(crate) fn artifact(row: &PgRow) -> Result<brain_core::model::Artifact, StoreError> {
    let project: String = row.try_get("project").map_err(db)?;
    let kind: String = row.try_get("kind").map_err(db)?;
    Ok(brain_core::model::Artifact {
        artifact_id: brain_core::ids::ArtifactId::from_uuid(
            row.try_get("artifact_id").map_err(db)?,
        ),
        project: ProjectKey::parse(&project).map_err(|_| corrupt("project"))?,
        session_id: row
            .try_get::<Option<uuid::Uuid>, _>("session_id")
            .map_err(db)?
            .map(SessionId::from_uuid),
        kind: brain_core::model::ArtifactKind::parse(&kind)
            .ok_or_else(|| corrupt("artifact kind"))?,
        text: row.try_get("text").map_err(db)?,
        tags: row.try_get("tags").map_err(db)?,
        created_at: row.try_get("created_at").map_err(db)?,
        acknowledged_at: row.try_get("acknowledged_at").map_err(db)?,
        ack_note: row.try_get("ack_note").map_err(db)?,
    })
}

//! Row mapping: the column lists both stores select, and their conversion
//! into domain types. Each store's [`Row`] reads its own encodings.

use super::{Row, corrupt};
use brain_core::error::StoreError;
use brain_core::ids::{
    ArtifactId, ClientKey, ProjectKey, ReceiptId, SessionId, SlotName, TenantId,
};
use brain_core::model::{
    Artifact, ArtifactKind, CredentialKind, Focus, FocusOutcome, OpenedBy, Role, Session,
    SessionKind, SessionStatus,
};
use brain_core::receipt::Receipt;
use brain_core::rules::CloseRecord;

pub const SESSION_COLUMNS: &str = crate::session_columns!();

pub fn session(row: &dyn Row) -> Result<(Session, Option<CloseRecord>), StoreError> {
    let session = Session {
        session_id: SessionId::from_uuid(row.uuid("session_id")?),
        project: project(row)?,
        client_key: ClientKey::parse("client_key", &row.text("client_key")?)
            .map_err(|_| corrupt("client_key"))?,
        kind: SessionKind::parse(&row.text("kind")?).ok_or_else(|| corrupt("session kind"))?,
        bound_slot: row
            .opt_text("bound_slot")?
            .map(|s| SlotName::parse(&s).map_err(|_| corrupt("slot")))
            .transpose()?,
        started_focus_revision: row.int("started_focus_revision")?,
        read_revision: row.opt_int("read_revision")?,
        relayed_from: row.opt_uuid("relayed_from")?.map(SessionId::from_uuid),
        relayed_to: None,
        status: SessionStatus::parse(&row.text("status")?).ok_or_else(|| corrupt("status"))?,
        opened_at: row.time("opened_at")?,
        last_activity_at: row.time("last_activity_at")?,
        ended_at: row.opt_time("ended_at")?,
        summary: row.opt_text("summary")?,
        next_focus: row.opt_text("next_focus")?,
        nothing_to_capture_reason: row.opt_text("nothing_to_capture_reason")?,
        focus_outcome: row
            .opt_text("focus_outcome")?
            .map(|s| FocusOutcome::parse(&s).ok_or_else(|| corrupt("focus_outcome")))
            .transpose()?,
        abandon_reason: row.opt_text("abandon_reason")?,
        opened_by: OpenedBy {
            kind: credential_kind(row, "opened_by_kind")?,
            subject: row.text("opened_by_subject")?,
            role: Role::parse(&row.text("opened_by_role")?).ok_or_else(|| corrupt("role"))?,
            credential_id: row.opt_text("opened_by_credential")?,
        },
    };
    let close = match (row.opt_text("close_digest")?, row.opt_json("close_result")?) {
        (Some(digest), Some(result)) => Some(CloseRecord { digest, result }),
        _ => None,
    };
    let mut session = session;
    // A relay's receiver is in its stored answer; an unbound session read
    // the base revision it started at (rows before read_revision was kept).
    session.relayed_to = close
        .as_ref()
        .and_then(|c| c.result.get("new_session")?.get("session_id")?.as_str())
        .and_then(|id| SessionId::parse(id).ok());
    if session.read_revision.is_none() && session.bound_slot.is_none() {
        session.read_revision = Some(session.started_focus_revision);
    }
    Ok((session, close))
}

pub fn focus(row: &dyn Row) -> Result<Focus, StoreError> {
    Ok(Focus {
        body: row.text("body")?,
        revision: row.int("revision")?,
        updated_at: row.opt_time("updated_at")?,
        updated_by_session: row
            .opt_uuid("updated_by_session")?
            .map(SessionId::from_uuid),
    })
}

pub fn receipt(row: &dyn Row) -> Result<Receipt, StoreError> {
    Ok(Receipt {
        receipt_id: ReceiptId::from_uuid(row.uuid("receipt_id")?),
        tenant: TenantId::parse(&row.text("tenant_id")?).map_err(|_| corrupt("tenant"))?,
        seq: row.int("seq")?,
        at: row.time("at")?,
        tool: row.text("tool")?,
        project: row.opt_text("project")?,
        session_id: row.opt_uuid("session_id")?.map(SessionId::from_uuid),
        credential_kind: credential_kind(row, "credential_kind")?,
        subject: row.text("subject")?,
        token_id: row.opt_text("token_id")?,
        connection_id: row.opt_text("connection_id")?,
        elevated: row.flag("elevated")?,
        outcome: row.text("outcome")?,
        request_digest: row.text("request_digest")?,
        prev_hash: row.text("prev_hash")?,
        hash: row.text("hash")?,
    })
}

pub fn artifact(row: &dyn Row) -> Result<Artifact, StoreError> {
    Ok(Artifact {
        artifact_id: ArtifactId::from_uuid(row.uuid("artifact_id")?),
        project: project(row)?,
        session_id: row.opt_uuid("session_id")?.map(SessionId::from_uuid),
        kind: ArtifactKind::parse(&row.text("kind")?).ok_or_else(|| corrupt("artifact kind"))?,
        text: row.text("text")?,
        tags: row.strings("tags")?,
        created_at: row.time("created_at")?,
        acknowledged_at: row.opt_time("acknowledged_at")?,
        ack_note: row.opt_text("ack_note")?,
    })
}

fn project(row: &dyn Row) -> Result<ProjectKey, StoreError> {
    ProjectKey::parse(&row.text("project")?).map_err(|_| corrupt("project"))
}

fn credential_kind(row: &dyn Row, col: &str) -> Result<CredentialKind, StoreError> {
    CredentialKind::parse(&row.text(col)?).ok_or_else(|| corrupt("credential kind"))
}

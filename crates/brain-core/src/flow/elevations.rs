//! Elevations granted and revoked at `/brain-admin` (SPEC §4): who may, on
//! what, and the receipt each writes.

use super::{WriteTx, draft, refuse};
use crate::error::{DomainError, ErrorCode, StoreError};
use crate::ids::ElevationId;
use crate::model::{Caller, now_micros};
use crate::operators::{
    Elevation, ElevationRequest, ElevationTarget, check_elevation_request, check_operator,
    may_elevate_connection, may_elevate_session, target_not_found,
};

const GRANT: &str = "brain_admin_elevation_grant";
const REVOKE: &str = "brain_admin_elevation_revoke";

/// Grant an elevation on one of the caller's own operator connections or
/// sessions; any other target reads as not found.
pub async fn elevation_grant<T: WriteTx>(
    mut tx: T,
    caller: &Caller,
    req: &ElevationRequest,
) -> Result<Elevation, StoreError> {
    let target_session = match &req.target {
        ElevationTarget::Session(id) => Some(*id),
        ElevationTarget::Connection(_) => None,
    };
    let receipt = |r| draft(GRANT, None, target_session, &req.digest, r);
    if let Err(e) = check_elevation_request(caller, req) {
        return refuse(tx, caller, false, receipt(Err(&e)), e).await;
    }
    let target_ok = match &req.target {
        ElevationTarget::Connection(id) => tx
            .connection_owner(id)
            .await?
            .is_some_and(|owner| may_elevate_connection(caller, &owner)),
        ElevationTarget::Session(id) => tx
            .lock_session(*id)
            .await?
            .is_some_and(|(s, _)| may_elevate_session(caller, &s)),
    };
    if !target_ok {
        let e = target_not_found();
        return refuse(tx, caller, false, receipt(Err(&e)), e).await;
    }
    let now = now_micros();
    let e = Elevation {
        id: ElevationId::new_random(),
        subject: caller.subject.clone(),
        mcp_session_id: match &req.target {
            ElevationTarget::Connection(id) => Some(id.clone()),
            ElevationTarget::Session(_) => None,
        },
        session_id: target_session,
        reason: req.reason.clone(),
        granted_at: now,
        expires_at: now + chrono::Duration::seconds(req.ttl_secs),
        revoked_at: None,
    };
    tx.grant_elevation(caller, &e).await?;
    tx.commit(Some((caller, receipt(Ok(()))))).await?;
    Ok(e)
}

/// Revoke one of the caller's credential's elevations.
pub async fn elevation_revoke<T: WriteTx>(
    mut tx: T,
    caller: &Caller,
    id: ElevationId,
    digest: &str,
) -> Result<Elevation, StoreError> {
    if let Err(e) = check_operator(caller) {
        let d = draft(REVOKE, None, None, digest, Err(&e));
        return refuse(tx, caller, false, d, e).await;
    }
    let Some(e) = tx.revoke_elevation(caller, id, now_micros()).await? else {
        let e = DomainError::new(
            ErrorCode::NotFound,
            "no elevation with this id was granted to your credential",
        );
        let d = draft(REVOKE, None, None, digest, Err(&e));
        return refuse(tx, caller, false, d, e).await;
    };
    let d = draft(REVOKE, None, e.session_id, digest, Ok(()));
    tx.commit(Some((caller, d))).await?;
    Ok(e)
}

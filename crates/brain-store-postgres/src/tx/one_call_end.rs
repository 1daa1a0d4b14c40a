//! An end or relay in one call on PostgreSQL
//! (`brain_core::flow::close_in_one_call`): its read, without locks and
//! outside the transaction (`brain_peek_close`), and its write (`brain_end`,
//! or `brain_relay` with the receiver's session), which joins the tenant's
//! group commit as a start or a remember does.

use brain_core::error::StoreError;
use brain_core::flow::{CloseWrite, DecidedOn, PeekedClose};
use brain_core::ids::SessionId;
use brain_core::model::Caller;
use brain_core::store::{LockedClose, Unattributed};
use brain_store_sqlx::Cols;
use brain_store_sqlx::sql::{BoxRow, rows};
use chrono::{DateTime, Utc};
use sqlx::Row;

use super::Tx;
use crate::one_call_writes::{self, On};
use crate::{db, dialect};

impl Tx {
    /// The session, its target body and the close's counts, read in one
    /// statement on a connection of its own, so that this transaction is
    /// still untouched for the write to join its tenant's group commit.
    /// `None` once a statement of this transaction has run.
    pub(super) async fn peek(
        &mut self,
        id: SessionId,
        until: DateTime<Utc>,
    ) -> Result<Option<PeekedClose>, StoreError> {
        let Some(warm) = self.untouched() else {
            return Ok(None);
        };
        // A kept connection may have died since its last write (a database
        // restart): the read is then left to the locked way, which begins
        // again on another connection, so the call does not fail for it.
        let Ok(mut held) = warm.take().await else {
            return Ok(None);
        };
        let row = sqlx::query("SELECT * FROM brain_peek_close($1, $2, $3)")
            .bind(self.tenant.as_str())
            .bind(id.as_uuid())
            .bind(until)
            .fetch_optional(held.conn())
            .await;
        let row = match row {
            Ok(row) => row,
            // Any failure of the read (a lost connection, a statement
            // timeout) leaves the close to the locked way, which answers the
            // failure itself if it persists: a close never fails for the read
            // it could have done without. The connection is not kept.
            Err(e) => {
                brain_store_sqlx::lost::note(&e);
                tracing::debug!("a close's read without locks failed: it closes with locks");
                return Ok(None);
            }
        };
        warm.give(held);
        let Some(row) = row else {
            return Ok(Some(PeekedClose {
                loaded: None,
                unattributed: Unattributed::default(),
                open_agents: 0,
                base_revision: 0,
            }));
        };
        let (unattributed, open_agents) = super::closing::counts(&row)?;
        let base_revision = row.try_get("base_revision").map_err(db)?;
        let row: BoxRow = Box::new(Cols::<dialect::Pg, _>::new(row));
        let (session, close_record) = rows::session(row.as_ref())?;
        Ok(Some(PeekedClose {
            loaded: Some(LockedClose {
                session,
                close_record,
                target: rows::focus(row.as_ref())?,
            }),
            unattributed,
            open_agents,
            base_revision,
        }))
    }

    /// `brain_end` (`brain_relay`) in the tenant's group commit; `false` (nothing written,
    /// the transaction still untouched) when the session, its body or the
    /// answer's counts moved since [`Tx::peek`].
    pub(super) async fn end_in_one_call(
        &mut self,
        caller: &Caller,
        w: CloseWrite<'_>,
        on: DecidedOn<'_>,
    ) -> Result<bool, StoreError> {
        let (Some(warm), Some(groups)) = (self.untouched(), self.groups.clone()) else {
            return Ok(false);
        };
        self.one_receipt()?;
        let written = one_call_writes::end(On::Group(warm, groups), caller, &w, on).await;
        let written = self.heal(written)?;
        self.placed = written;
        Ok(written)
    }
}

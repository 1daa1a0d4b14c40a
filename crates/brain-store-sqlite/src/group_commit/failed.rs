//! How a batch that did not commit failed, and what its members are told.

use brain_core::error::StoreError;

pub(super) type Outcome = Result<(), Failed>;

/// How a batch that did not commit failed.
#[derive(Clone, Debug)]
pub(super) enum Failed {
    /// Rolled back: nothing of it was written.
    Nothing(String),
    /// The COMMIT failed in its I/O: the WAL's commit frame may be on disk
    /// (it would be recovered at the next open), so whether the writes took
    /// effect is unknown.
    Unknown,
}

impl From<Failed> for StoreError {
    fn from(f: Failed) -> Self {
        match f {
            Failed::Nothing(why) => StoreError::Backend(why),
            Failed::Unknown => StoreError::Domain(brain_core::DomainError::outcome_unknown()),
        }
    }
}

/// Whether a failed COMMIT may still have written: an I/O error (an fsync
/// that failed after the commit frame was written), a corrupt or foreign
/// file. Any other error (busy, a constraint checked at commit, a full
/// disk before the frame was complete) leaves the transaction rolled back,
/// or open for the ROLLBACK that follows.
pub(super) fn commit_may_have_written(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(d) = e else {
        return false;
    };
    // SQLite's extended result codes carry the primary code in the low byte.
    let primary = d
        .code()
        .and_then(|c| c.parse::<i64>().ok())
        .map(|c| c & 0xff);
    matches!(primary, Some(10 | 11 | 26)) // SQLITE_IOERR, _CORRUPT, _NOTADB
}

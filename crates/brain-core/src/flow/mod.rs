//! The session calls (start, resume with its briefing, bind, remember, end,
//! relay, abandon; documents, elevations and connections) as one algorithm
//! each, over the operations a store's write transaction offers ([`WriteTx`]). A
//! store supplies how each reaches its data; the order of checks, what is written and what is
//! answered live here once, one module per concern.

mod abandon;
mod close;
mod close_answer;
mod close_in_one_call;
mod connections;
mod contention;
mod documents;
mod elevations;
mod end_with_documents;
mod memory;
mod open;
mod port;
mod projects;
mod receipts;

pub use abandon::abandon;
pub use close::close;
pub use close_answer::{MERGED, wrote_body};
pub use connections::{connection_open, over_cap};
pub use documents::document_put;
pub use elevations::{elevation_grant, elevation_revoke};
pub use end_with_documents::{EndedWithDocuments, end_with_documents};
pub use memory::{remember, todo_ack};
pub use open::{bind, briefing, mission_recalls, resume, start};
pub use port::{
    CloseWrite, DecidedOn, DocumentLock, FocusWrite, NewConnection, PeekedClose, Receipting,
    StoredNextFocus, WriteTx,
};
pub use projects::{PROJECT_DELETED, project_delete};
pub use receipts::{draft, refuse};

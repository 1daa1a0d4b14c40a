//! The compatibility profiles' tools (SPEC §2.10): adapters over brain's own
//! store calls, one module per seed server.

pub mod aziel;
pub mod brain_core;

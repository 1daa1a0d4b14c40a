//! brain-core: the meaning of brain, free of HTTP and SQL.
//!
//! - [`feed`]: focus bodies as MCP resources, and the change events stores announce.
//! - [`flow`]: every mutation (start, bind, resume, remember, end, relay, abandon) and the
//!   briefing, written once over a store's write transaction ([`flow::WriteTx`]).
//! - [`ids`]: validated newtypes for every identifier a caller can send.
//! - [`error`]: the SPEC's error codes and the domain error carrying them.
//! - [`memory`]: documents, recall hits, history, the daily brief.
//! - [`model`]: sessions, focus bodies, artifacts, receipts as plain data.
//! - [`rules`]: the shrink guard, the order of checks of end/relay/abandon, compare-and-swap.
//! - [`digest`]: canonical JSON, request digests and receipt hashing.
//! - [`receipt`]: receipts and the per-tenant hash chain.
//! - [`diff`]: unified diffs between focus bodies.
//! - [`operators`]: elevations and shared tokens.
//! - [`outcome`]: results of closing calls and replays.
//! - [`requests`]: what each tool asks of a store, already parsed.
//! - [`store`]: the `Store` trait every backend implements.
//! - [`text`]: text hygiene: no NUL or other C0 control in anything a caller sends.
//! - [`writes`]: the session calls of every store, over its [`writes::Backend`].
//!
//! A store only opens a transaction and implements [`flow::WriteTx`]'s loads
//! and writes; [`flow`] loads and locks state through it, asks [`rules`] to
//! decide, applies the decision and the receipt, and commits. Rules live here once.
#![forbid(unsafe_code)]

pub mod diff;
pub mod digest;
pub mod error;
pub mod feed;
pub mod flow;
pub mod focus_cache;
pub mod ids;
pub mod memory;
pub mod merge;
pub mod model;
pub mod operators;
pub mod outcome;
pub mod receipt;
pub mod requests;
pub mod rules;
pub mod search_words;
pub mod store;
pub mod text;
pub mod writes;

pub use error::{DomainError, ErrorCode};

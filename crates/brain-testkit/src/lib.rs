//! brain-testkit (dev only): isolated databases, the behaviour story every store
//! must pass, and helpers that run the real server for black-box tests.
//!
//! - [`db`]: a fresh PostgreSQL database per test, dropped afterwards.
//! - [`app`]: the real server on port 0 on either store (`BRAIN_TEST_STORE=sqlite`
//!   picks SQLite, PostgreSQL otherwise), tokens, and an rmcp client.
//! - [`pg_proxy`]: a PostgreSQL wire proxy that injects faults and lists statements.
//! - [`sqlite`]: a fresh SQLite file per test.
//! - [`story`]: store-level behaviour, written once against `dyn Store`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod app;
pub mod db;
pub mod pg_proxy;
pub mod sqlite;
pub mod story;

pub use db::TestDb;
pub use sqlite::TestSqlite;

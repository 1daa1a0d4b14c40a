//! brain-server: the front door of brain.
//!
//! - [`briefs`]: the daily-brief scheduler.
//! - [`config`]: flags and `BRAIN_*` environment (SPEC §7).
//! - [`auth`]: JWT validation into a `Principal`.
//! - [`http`]: routes and layers — Host/Origin guard, authentication, the MCP
//!   connection registry, health, RFC 9728 metadata.
//! - [`mcp`]: the rmcp `ServerHandler`, argument parsing, error mapping, output schemas.
//! - [`tools`]: one module per MCP tool: its definition as data and its handler;
//!   `tools::profiles` holds the compatibility profiles' adapters.
//! - [`profiles`]: which tool sets `BRAIN_TOOL_PROFILES` turns on.
//! - [`refusal`]: a refused or failed call, in one shape at every door.
//! - [`metrics`]: Prometheus metrics.
//! - [`serve`]: store selection and the listener (with `TCP_NODELAY`).
//! - [`stdio`]: `brain stdio`, the same tools over stdin/stdout.
//! - [`cli`]: `brain serve | migrate | token mint`.
//! - [`health`]: `brain healthcheck`, for container runtimes without curl.
//! - [`dev`]: `brain serve --dev`, the one-command local start.
//! - [`telemetry`]: logging set-up.
#![forbid(unsafe_code)]

pub mod auth;
pub mod briefs;
pub mod cli;
pub mod config;
pub mod dev;
pub mod health;
pub mod http;
pub mod jwks;
pub mod mcp;
pub mod metrics;
pub mod portable;
pub mod profiles;
pub mod refusal;
pub mod serve;
pub mod stall;
pub mod stdio;
pub mod telemetry;
pub mod token;
pub mod tools;

use brain_core::ids::SessionId;
use brain_core::requests::{EndRequest, limits};
use rmcp::model::{JsonObject, Tool};

use super::{Hints, ToolCtx, ToolResult, define};
use crate::mcp::{args, schemas};

pub const NAME: &str = "brain_session_end";

const DESCRIPTION: &str = "End a session with a summary and the next focus. If expected_focus_revision is current, next_focus replaces the base focus, or the bound slot's body (same text: outcome unchanged). If stale, the session closes as conflicted (a result, not an error; summary kept; or see merge). Then start anew (with the slot, if bound), merge your text into focus_at_end.body and end that session with its read_revision. Before any revision check, a next_focus under 70% of the current body's length is refused (base_focus_shrink or slot_focus_shrink, 409, details.floor), session left open: restore what was dropped. Hand a slot on: brain_session_relay; close without writing: brain_session_abandon.";

/// The arguments of an end; relay adds its own fields to the same list, so the
/// two tools cannot drift apart.
macro_rules! end_args {
    ($name:ident { $($extra:tt)* }) => {
        #[derive(Debug, Clone, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// The open session to end.
            pub session_id: String,
            /// The session's client_key.
            pub expected_client_key: String,
            /// What was done and learned; later briefings show it.
            pub summary: String,
            /// The WHOLE next focus: carry over every durable decision, commitment and deadline.
            pub next_focus: String,
            /// The revision next_focus builds on: session.read_revision, or a merged brain_focus_get's.
            pub expected_focus_revision: i64,
            /// Why the session produced nothing durable (stored); still pass summary, and the current body unchanged as next_focus.
            #[serde(default)]
            pub nothing_to_capture_reason: Option<String>,
            /// Lift the 70% guard: an operator-role JWT with an active elevation only (agents: omit), else focus_shrink_override_refused (403).
            #[serde(default)]
            pub allow_focus_shrink: bool,
            /// Check, but write nothing.
            #[serde(default)]
            pub dry_run: bool,
            $($extra)*
        }
    };
}
pub(crate) use end_args;

end_args!(Args {
    /// On a stale revision, merge three-way instead: disjoint edits apply (focus_outcome merged); overlapping ones still conflict, with merge.text (diff3 markers) to resolve in a new session.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub merge: bool,
});

impl Args {
    /// Validate lengths and ids and build the request with the given replay digest.
    pub fn into_request(self, digest: String) -> Result<EndRequest, brain_core::DomainError> {
        args::max_chars(
            "expected_client_key",
            &self.expected_client_key,
            limits::CLIENT_KEY_MAX_CHARS,
        )?;
        args::max_bytes("summary", &self.summary, limits::SUMMARY_MAX_BYTES)?;
        args::max_bytes("next_focus", &self.next_focus, limits::FOCUS_MAX_BYTES)?;
        if let Some(r) = &self.nothing_to_capture_reason {
            args::max_bytes("nothing_to_capture_reason", r, limits::REASON_MAX_BYTES)?;
        }
        if self.expected_focus_revision < 0 {
            return Err(brain_core::DomainError::invalid_argument(
                "expected_focus_revision",
                "must be 0 or more",
            ));
        }
        Ok(EndRequest {
            session_id: SessionId::parse(&self.session_id)?,
            expected_client_key: self.expected_client_key,
            summary: self.summary,
            next_focus: self.next_focus,
            expected_focus_revision: self.expected_focus_revision,
            nothing_to_capture_reason: self.nothing_to_capture_reason,
            allow_focus_shrink: self.allow_focus_shrink,
            dry_run: self.dry_run,
            keep_focus: false,
            door: brain_core::rules::Door::Brain,
            digest,
            merge: if self.merge {
                brain_core::requests::MergeStep::Asked
            } else {
                brain_core::requests::MergeStep::Off
            },
        })
    }
}

pub fn definition() -> Tool {
    define::<Args>(
        NAME,
        "End a session",
        DESCRIPTION,
        schemas::output(schemas::end_properties(), schemas::END_REQUIRED),
        Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
        },
    )
}

pub async fn call(ctx: &ToolCtx<'_>, raw: JsonObject) -> ToolResult {
    let a: Args = args::parse_tool(raw)?;
    let digest = args::digest(&a, &["dry_run"]);
    let req = a.into_request(digest)?;
    ctx.store.end_session(&ctx.caller, req).await
}

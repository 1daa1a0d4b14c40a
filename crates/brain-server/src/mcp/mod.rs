//! The MCP face of brain: an rmcp `ServerHandler` over a prebuilt tool list.
//!
//! Tool definitions are built once at start-up and shared (`Arc`), so neither
//! `tools/list` nor `tools/call` rebuilds a router. The handler's only
//! per-connection memory is resource subscriptions (bounded, dropped with the
//! connection); everything else a call needs is in the request's extensions
//! (the authenticated principal) or in the store.

pub mod args;
pub mod errors;
mod resources;
pub mod schemas;
pub mod subscriptions;

use crate::refusal::Refusal;
use std::sync::Arc;

use brain_core::DomainError;
use brain_core::model::Caller;
use brain_core::store::Store;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::auth::{Principal, Tracer};
use crate::tools::{self, ToolCtx};

pub const INSTRUCTIONS: &str =
    "brain keeps durable working sessions over a project's shared, revisioned focus.

Words:
- tenant = your credential's organisation, whose data alone you see.
- focus = the project's base text of what matters next, with a revision; slot = a named \
sub-focus with its own body and revision. Project and slot names are case-sensitive; start \
or bind with a new slot name creates an empty slot, start or a first write with a new project \
name creates the project.
- session = one unit of work, guarded by your client_key (pass it as expected_client_key; the \
session a relay opens is guarded by the relay's to_client_key); idle = open but with no start, bind, resume or remember \
on it (nor the relay that opened it) past the server's threshold (6 h by default).
- artifact = one record (fact, note, decision, todo, link); ledger = a session's artifacts \
(its ledger_size); one recorded without session_id is unattributed; inbox = todos not yet acknowledged.
- documents (free text, except executive_state): executive_state (objective, missions, \
pending_decisions = choices still open), critique (review of the approach), sync_note (the \
current note to other agents, replaced whole; a lasting remark is a note artifact), \
mental_model (operator-set background).
- receipt = hash-chained audit record of a mutation, in the tenant's receipt chain (its newest \
is ledger_tip); token_id = the JWT's jti or the shared token's id, null for stdio; \
credential_kind cli = the operator's command line.
- tracer = the server's per-connection session, not yours (you cannot resume or end it).
- roles: agent (every shared_token and stdio caller too), operator (a JWT role for humans; an \
elevation is an operator's grant at /brain-admin, not something an agent can obtain), \
relay (an orchestrator's JWT); the allow_focus_shrink arguments say who may lift the 70% \
guard; every role may call brain_session_relay.

Flow: brain_session_start, read the briefing; if briefing.recovery is set, either resume it and \
abandon the new session, or abandon the old one; brain_remember \
with session_id as you learn; brain_session_end with a summary, the WHOLE next focus and the \
revision you read; its focus_outcome conflict closes the session as status conflicted (merge: \
true merges disjoint edits instead). Sessions never close on their own.

Every tool:
- A refusal is an isError result whose structuredContent is {error: {code, message, status \
(HTTP-like), details}}. Arguments that do not fit the schema, any argument a schema does not \
list, and a reserved project (_mcp, _runtime) are refused (invalid_argument, 422) and write \
nothing; every other refusal of a write records only its receipt.
- A call acting on a session may answer session_not_found (404), or (each 409) tracer_session (the \
id is a connection's tracer), client_key_mismatch or session_closed; another session's \
client_key is in brain_session_get's session.
- An exact repeat (the same arguments) of end, relay or abandon returns the \
stored result with replayed: true; a dry_run writes nothing and answers as the call would, \
with its outcome in would.
- Lists page with the next_* value they return, and their filters combine (AND).
- idempotentHint means no further effect on data, a receipt or activity time aside (a repeat \
may be refused, e.g. document_conflict); resume \
only marks activity and, like reads, dry runs and replays, writes no receipt.
- A result's session object is brain_session_get's; a result holds every field its output \
schema lists, the nullable ones null when empty (only end's merge and a mental model's \
truncated may be absent); times are RFC 3339 UTC.
- A focus, slot or document never written reads as empty at revision 0 (a read creates \
nothing).

Changes: the focus and each slot are resources (brain://projects/{project}/focus, \
.../slots/{slot}); resources/subscribe to them (or, on protocol 2026-07-28, \
subscriptions/listen) to hear when another agent changes them.

Verifying receipts: request_digest = hex SHA-256 of the call's arguments as compact \
sorted-key JSON (the replay key); hash = hex SHA-256 of the receipt without hash, as compact sorted-key \
JSON, UTF-8 unescaped, with connection_id raw. Other connections' ids are shown as fp_ \
fingerprints, so only your own connection's (or a connectionless) receipts re-hash; check the \
others by their prev_hash links. prev_hash = the previous receipt's hash, 64 zeros for the \
first.";

#[derive(Clone)]
pub struct BrainMcp {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Store>,
    tools: Vec<Tool>,
    /// This replica's resource subscriptions, shared by all its connections.
    subscriptions: Arc<subscriptions::Subscriptions>,
    /// The caller when there is no HTTP request at all (`brain stdio`).
    local: Option<Principal>,
    known_projects: tools::new_projects::KnownProjects,
}

impl BrainMcp {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self::with_profiles(store, Default::default())
    }

    /// A handler offering the tools of these compatibility profiles.
    pub fn with_profiles(store: Arc<dyn Store>, profiles: crate::profiles::Profiles) -> Self {
        Self {
            inner: Arc::new(Inner {
                store,
                tools: tools::definitions_for(profiles),
                subscriptions: Default::default(),
                local: None,
                known_projects: Default::default(),
            }),
        }
    }

    /// This handler's subscriptions.
    pub fn subscriptions(&self) -> Arc<subscriptions::Subscriptions> {
        self.inner.subscriptions.clone()
    }

    /// Deliver every focus change the store announces (any replica) to this
    /// handler's subscribers; retried until the store accepts the listener.
    pub fn watch_focus(&self, stop: tokio_util::sync::CancellationToken) {
        let store = self.inner.store.clone();
        let subs = self.inner.subscriptions.clone();
        tokio::spawn(async move {
            let listener: brain_core::feed::FocusListener = {
                let subs = subs.clone();
                Arc::new(move |change| subs.deliver(change))
            };
            loop {
                match store.watch_focus(listener.clone()).await {
                    Ok(()) => return,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot listen for focus changes yet; retrying")
                    }
                }
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
                }
            }
        });
    }

    /// A handler for a local transport, acting as `principal` on every call.
    pub fn local(store: Arc<dyn Store>, principal: Principal) -> Self {
        Self {
            inner: Arc::new(Inner {
                store,
                tools: tools::definitions(),
                subscriptions: Default::default(),
                local: Some(principal),
                known_projects: Default::default(),
            }),
        }
    }

    /// The calling principal and connection, as the front door recorded them
    /// in the HTTP request's extensions.
    fn caller(&self, ctx: &RequestContext<RoleServer>) -> Option<Caller> {
        let Some(parts) = ctx.extensions.get::<http::request::Parts>() else {
            return self.inner.local.as_ref().map(|p| p.caller(None));
        };
        let principal = parts.extensions.get::<Principal>()?;
        let connection = parts
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let tracer = parts.extensions.get::<Tracer>().map(|t| t.0);
        Some(principal.caller_on(connection, tracer))
    }
}

/// The front door authenticates before rmcp sees a request; without a
/// principal here the wiring is wrong, and nothing is served.
fn unauthenticated() -> ErrorData {
    tracing::error!("MCP request without an authenticated principal");
    ErrorData::internal_error("not authenticated", None)
}

impl ServerHandler for BrainMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .build(),
        )
        .with_server_info(Implementation::new("brain", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let caller = self.caller(&context).ok_or_else(unauthenticated)?;
        let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
        resources::list(self.inner.store.as_ref(), &caller, cursor).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let caller = self.caller(&context).ok_or_else(unauthenticated)?;
        resources::read(self.inner.store.as_ref(), &caller, &request.uri)
            .await
            .map(Into::into)
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = self.caller(&context).ok_or_else(unauthenticated)?;
        resources::subscribe(
            self.inner.store.as_ref(),
            &self.inner.subscriptions,
            &caller,
            &request.uri,
            context.peer.clone(),
            self.inner.local.is_some(),
        )
        .await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(resources::listen_filter(requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let caller = self
            .caller(context.request_context())
            .ok_or_else(unauthenticated)?;
        // The stream lasts only while the credential that opened it holds.
        let watching = context
            .request_context()
            .extensions
            .get::<http::request::Parts>()
            .and_then(|p| p.extensions.get::<crate::http::streams::CredentialWatch>())
            .and_then(|w| w.start());
        resources::listen(&self.inner.subscriptions, &caller, context, watching).await
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = self.caller(&context).ok_or_else(unauthenticated)?;
        resources::unsubscribe(
            &self.inner.subscriptions,
            &caller,
            &request.uri,
            self.inner.local.is_some(),
        );
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.inner.tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        if !self.inner.tools.iter().any(|t| t.name == name) {
            return Err(unknown_tool(name));
        }
        let request_id = context
            .extensions
            .get::<http::request::Parts>()
            .map(|p| crate::http::meta::request_id(&p.headers).to_owned())
            .unwrap_or_else(|| "-".to_owned());
        let Some(caller) = self.caller(&context) else {
            // The front door always authenticates first; reaching here means a wiring bug.
            tracing::error!(tool = name, "tool call without an authenticated principal");
            return Ok(Refusal::from(DomainError::internal())
                .into_tool_result(name)
                .into());
        };
        let ctx = ToolCtx {
            store: self.inner.store.as_ref(),
            caller,
            known: Some(&self.inner.known_projects),
        };
        let started = std::time::Instant::now();
        let args = request.arguments.unwrap_or_default();
        let (result, outcome) = match tools::call(name, &ctx, args).await {
            Some(Ok(tools::Answer::Done(value))) => {
                (CallToolResult::structured(value), "ok".to_owned())
            }
            Some(Ok(tools::Answer::Refused(r))) => {
                let mut answer = CallToolResult::structured_error(r.envelope);
                answer.content = vec![rmcp::model::ContentBlock::text(format!(
                    "{}: {}",
                    r.code, r.summary
                ))];
                (answer, r.code)
            }
            Some(Err(e)) => {
                let refusal =
                    Refusal::from(errors::with_usage(ctx.store, &ctx.caller.tenant, e).await);
                let code = refusal.code().as_str().to_owned();
                (refusal.into_tool_result(name), code)
            }
            None => return Err(unknown_tool(name)),
        };
        crate::metrics::tool_call(name, &outcome, started.elapsed().as_secs_f64());
        tracing::info!(
            request_id,
            tool = name,
            tenant = %ctx.caller.tenant,
            outcome,
            latency_ms = started.elapsed().as_secs_f64() * 1000.0,
            "tool call"
        );
        Ok(result.into())
    }
}

/// The longest tool name an error echoes (the longest of brain's is 29).
const MAX_ECHOED_TOOL_NAME: usize = 64;

/// JSON-RPC's answer to an unknown tool (SPEC §2: -32602). rmcp logs this
/// message at warn, so a client's name is echoed only when it is short and
/// plain: a made-up 1 MiB name must not become 1 MiB of log.
fn unknown_tool(name: &str) -> ErrorData {
    let plain = name.len() <= MAX_ECHOED_TOOL_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./".contains(&b));
    let message = if plain {
        format!("unknown tool: {name}; tools/list names the tools")
    } else {
        format!(
            "unknown tool (a name of {} bytes, not shown); tools/list names the tools",
            name.len()
        )
    };
    ErrorData::invalid_params(message, None)
}

#[cfg(test)]
mod unknown_tool_tests {
    use super::unknown_tool;

    #[test]
    fn a_long_or_odd_name_is_not_echoed() {
        let long = "x".repeat(65);
        assert!(!unknown_tool(&long).message.contains(&long));
        assert!(!unknown_tool("a\nb").message.contains("a\nb"));
        assert!(unknown_tool("brain_nope").message.contains("brain_nope"));
    }
}

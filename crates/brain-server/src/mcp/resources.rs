//! A project's base focus and slots as MCP resources (SPEC §2.11): listing,
//! reading, templates, and subscriptions. Every call is scoped to the caller's
//! tenant; a URI that is malformed or names nothing in the tenant is the same
//! "no such resource" (-32002), so another tenant's names cannot be probed.

use crate::refusal::Refusal;
use brain_core::error::{DomainError, ErrorCode, StoreError};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

use brain_core::feed::{self, FOCUS_TEMPLATE, SLOT_TEMPLATE};
use brain_core::ids::{ProjectKey, SlotName};
use brain_core::model::Caller;
use brain_core::store::{FocusResource, Store};
use rmcp::ErrorData;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, MetaObject, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, SubscriptionFilter,
};
use rmcp::service::{Peer, RoleServer, SubscriptionContext};
use serde_json::json;

use super::subscriptions::{MAX_LISTENS_PER_CREDENTIAL, MAX_PER_CONNECTION, Subscriptions};

/// Resources per `resources/list` page.
pub const PAGE: i64 = 100;
const MIME: &str = "text/markdown";

fn not_found() -> ErrorData {
    let e = DomainError::new(ErrorCode::NotFound, "no such resource in your tenant");
    Refusal::from(e).into_rpc_error("resources")
}

/// A store failure, logged, answered without its text.
fn internal(e: StoreError) -> ErrorData {
    Refusal::from(e).into_rpc_error("resources")
}

fn meta(v: serde_json::Value) -> Option<MetaObject> {
    match v {
        serde_json::Value::Object(m) => Some(MetaObject(m)),
        _ => None,
    }
}

fn entry(r: &FocusResource) -> Resource {
    let uri = feed::uri(&r.project, r.slot.as_ref());
    let (name, what) = match &r.slot {
        None => (
            format!("{} focus", r.project),
            format!("Base focus of project {}", r.project),
        ),
        Some(s) => (
            format!("{} slot {s}", r.project),
            format!("Slot {s} of project {}", r.project),
        ),
    };
    let mut res = Resource::new(uri, name)
        .with_description(format!("{what}, revision {}", r.revision))
        .with_mime_type(MIME);
    res.meta = meta(json!({"revision": r.revision}));
    res
}

pub async fn list(
    store: &dyn Store,
    caller: &Caller,
    cursor: Option<&str>,
) -> Result<ListResourcesResult, ErrorData> {
    let after = match cursor {
        None => None,
        Some(c) => Some(feed::parse_uri(c).ok_or_else(|| {
            ErrorData::invalid_params("cursor is not one this server returned", None)
        })?),
    };
    let rows = store
        .focus_resources(
            &caller.tenant,
            after.as_ref().map(|(p, s)| (p, s.as_ref())),
            PAGE,
        )
        .await
        .map_err(internal)?;
    let next = (rows.len() as i64 == PAGE)
        .then(|| rows.last().map(|r| feed::uri(&r.project, r.slot.as_ref())))
        .flatten();
    let mut out = ListResourcesResult::with_all_items(rows.iter().map(entry).collect());
    out.next_cursor = next;
    Ok(out)
}

pub fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![
        ResourceTemplate::new(FOCUS_TEMPLATE, "project focus")
            .with_description("A project's base focus; subscribe to hear when an end changes it.")
            .with_mime_type(MIME),
        ResourceTemplate::new(SLOT_TEMPLATE, "project slot")
            .with_description("One slot's body; subscribe to hear when an end or relay changes it.")
            .with_mime_type(MIME),
    ])
}

/// The project and slot a URI names, when the tenant holds it.
async fn resolve(
    store: &dyn Store,
    caller: &Caller,
    uri: &str,
) -> Result<(ProjectKey, Option<SlotName>), ErrorData> {
    let (project, slot) = feed::parse_uri(uri).ok_or_else(not_found)?;
    if project.as_str() == ProjectKey::TRACERS || project.as_str() == ProjectKey::RUNTIME {
        return Err(not_found());
    }
    let exists = store
        .focus_exists(&caller.tenant, &project, slot.as_ref())
        .await
        .map_err(internal)?;
    if !exists {
        return Err(not_found());
    }
    Ok((project, slot))
}

pub async fn read(
    store: &dyn Store,
    caller: &Caller,
    uri: &str,
) -> Result<ReadResourceResult, ErrorData> {
    let (project, slot) = resolve(store, caller, uri).await?;
    let focus = store
        .focus_get(&caller.tenant, &project, slot.as_ref())
        .await
        .map_err(internal)?;
    Ok(ReadResourceResult::new(vec![
        ResourceContents::TextResourceContents {
            uri: uri.to_owned(),
            mime_type: Some(MIME.to_owned()),
            text: focus.body,
            meta: meta(json!({
                "revision": focus.revision,
                "updated_by_session": focus.updated_by_session,
            })),
        },
    ]))
}

/// The connection a subscription belongs to: the MCP connection, or, on a
/// local transport (stdio), its one connection. A request over HTTP without a
/// connection (stateless) has nothing a subscription could live and die with.
fn connection_of(caller: &Caller, local: bool) -> Result<&str, ErrorData> {
    match (caller.connection_id.as_deref(), local) {
        (Some(c), _) => Ok(c),
        (None, true) => Ok("local"),
        (None, false) => Err(ErrorData::invalid_request(
            "resources/subscribe needs a stateful connection (initialize, then send Mcp-Session-Id)",
            None,
        )),
    }
}

pub async fn subscribe(
    store: &dyn Store,
    subs: &Arc<Subscriptions>,
    caller: &Caller,
    uri: &str,
    peer: Peer<RoleServer>,
    local: bool,
) -> Result<(), ErrorData> {
    let connection = connection_of(caller, local)?;
    let (project, slot) = resolve(store, caller, uri).await?;
    // Keyed by the canonical spelling (`%2F`, never `%2f`): the one deliveries use.
    let uri = feed::uri(&project, slot.as_ref());
    subs.subscribe(&caller.tenant, connection, &uri, peer)
        .map_err(|_| {
            ErrorData::invalid_request(
                format!(
                    "at most {MAX_PER_CONNECTION} subscriptions per connection; unsubscribe one first"
                ),
                None,
            )
        })
}

/// The part of a `subscriptions/listen` filter brain honours: focus and slot
/// URIs in their canonical spelling (the one notifications carry), not of the
/// server's own projects, at most [`MAX_PER_CONNECTION`]. Whether each exists
/// is not asked (the acknowledgment goes out before the caller is known); a
/// URI names a resource of the caller's tenant only, and one never written
/// simply stays quiet until it is.
pub fn listen_filter(requested: &SubscriptionFilter) -> SubscriptionFilter {
    let honoured = requested
        .resource_subscriptions
        .iter()
        .flatten()
        .filter(|uri| match feed::parse_uri(uri) {
            Some((project, slot)) => {
                project.as_str() != ProjectKey::TRACERS
                    && project.as_str() != ProjectKey::RUNTIME
                    && feed::uri(&project, slot.as_ref()) == **uri
            }
            None => false,
        })
        .take(MAX_PER_CONNECTION)
        .cloned()
        .collect::<Vec<_>>();
    SubscriptionFilter::builder()
        .resource_subscriptions(honoured)
        .build()
}

/// Serve one `subscriptions/listen` stream until its request ends: its URIs
/// join this replica's registry (the same deliveries as `resources/subscribe`,
/// fed from every replica's writes), scoped to the caller's tenant.
pub async fn listen(
    subs: &Arc<Subscriptions>,
    caller: &Caller,
    context: SubscriptionContext,
    credential: Option<crate::http::streams::Watching>,
) -> Result<(), ErrorData> {
    let uris = context
        .accepted()
        .resource_subscriptions
        .clone()
        .unwrap_or_default();
    if uris.is_empty() {
        return Ok(());
    }
    let listening = subs
        .listen(
            &caller.tenant,
            &listener_key(caller),
            &uris,
            context.sink().clone(),
        )
        .map_err(|_| {
            ErrorData::invalid_request(
                format!(
                    "at most {MAX_LISTENS_PER_CREDENTIAL} subscriptions/listen streams per credential; close one first"
                ),
                None,
            )
        })?;
    let peer = context.request_context().peer.clone();
    // A JWT's expiry or a shared token's revocation ends the stream (no
    // watch: a credential that never lapses, as `brain stdio`'s).
    let lapsed = credential
        .as_ref()
        .map_or_else(CancellationToken::new, |w| w.lapsed.clone());
    // The request's token is cancelled when the client cancels it or the
    // server shuts down; a connection that vanished is noticed here too.
    loop {
        tokio::select! {
            _ = context.cancelled() => break,
            _ = lapsed.cancelled() => {
                return Err(ErrorData::invalid_request(
                    "the credential this stream was opened with expired or was revoked; listen again with a valid one",
                    None,
                ));
            }
            _ = listening.deaf().cancelled() => {
                return Err(ErrorData::internal_error(
                    "a notification could not be delivered to this stream within 5 s; listen again",
                    None,
                ));
            }
            _ = tokio::time::sleep(std::time::Duration::from_secs(15)) => {
                if peer.is_transport_closed() {
                    break;
                }
            }
        }
    }
    Ok(())
}

/// The listen budget's key: the same parts as every per-credential limit
/// (tenant, kind, id, role), so one subject in two tenants, or an agent
/// token of an operator's subject, cannot spend the other's streams.
pub fn listener_key(caller: &Caller) -> String {
    crate::http::limits::key_of(
        &caller.tenant,
        &caller.kind,
        &caller.credential_id,
        &caller.role,
    )
}

pub fn unsubscribe(subs: &Subscriptions, caller: &Caller, uri: &str, local: bool) {
    if let (Ok(connection), Some((project, slot))) =
        (connection_of(caller, local), feed::parse_uri(uri))
    {
        subs.unsubscribe(
            &caller.tenant,
            connection,
            &feed::uri(&project, slot.as_ref()),
        );
    }
}

//! Who listens to which focus resource, on this replica (SPEC §2.11).
//!
//! Two kinds of holder, one registry. A `resources/subscribe` subscription
//! (protocol 2025-11-25) belongs to one MCP connection and one tenant and
//! dies with the connection (the registry forgets it on close and expiry,
//! and a failed send drops it): at most [`MAX_PER_CONNECTION`] per
//! connection, and the connections themselves are capped per credential. A
//! `subscriptions/listen` stream (2026-07-28) is its own holder, alive while
//! its request is: at most [`MAX_PER_CONNECTION`] URIs each and
//! [`MAX_LISTENS_PER_CREDENTIAL`] streams per credential on a replica. So
//! memory is bounded per credential either way.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brain_core::feed::FocusChange;
use brain_core::ids::TenantId;
use rmcp::service::{Peer, RoleServer, SubscriptionSink};
use tokio_util::sync::CancellationToken;

pub const MAX_PER_CONNECTION: usize = 64;

/// `subscriptions/listen` streams one credential may hold open on a replica.
pub const MAX_LISTENS_PER_CREDENTIAL: usize = 8;

/// A notification that cannot be queued within this long (a client that
/// stopped reading its stream) ends that subscription instead of a task.
const SEND_WITHIN: Duration = Duration::from_secs(5);

type Key = (TenantId, String);

/// Where a holder's notifications go.
#[derive(Clone)]
enum Target {
    /// A connection's peer (`resources/subscribe`).
    Connection(Peer<RoleServer>),
    /// A listen request's stream (`subscriptions/listen`), and the token
    /// that ends the request when a send to it fails: a stream that can no
    /// longer hear must not stay open and counted against its credential.
    Stream(SubscriptionSink, CancellationToken),
}

impl Target {
    fn closed(&self) -> bool {
        match self {
            Target::Connection(p) => p.is_transport_closed(),
            // Its handler removes it when the request ends.
            Target::Stream(_, _) => false,
        }
    }

    async fn notify(&self, uri: String) -> bool {
        let sent = match self {
            Target::Connection(peer) => {
                let param = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
                tokio::time::timeout(SEND_WITHIN, peer.notify_resource_updated(param))
                    .await
                    .map(|r| r.is_ok())
            }
            Target::Stream(sink, _) => {
                tokio::time::timeout(SEND_WITHIN, sink.notify_resource_updated(uri))
                    .await
                    .map(|r| r.is_ok())
            }
        };
        let sent = sent.unwrap_or(false);
        if let (false, Target::Stream(_, deaf)) = (sent, self) {
            deaf.cancel();
        }
        sent
    }
}

#[derive(Default)]
struct State {
    /// (tenant, uri) → holder id (a connection id, or a listen stream's) → target.
    by_uri: HashMap<Key, HashMap<String, Target>>,
    /// holder id → its (tenant, uri) keys.
    by_connection: HashMap<String, HashSet<Key>>,
    /// per-credential key → its open listen streams.
    listens: HashMap<String, usize>,
}

#[derive(Default)]
pub struct Subscriptions {
    state: Mutex<State>,
}

/// A connection already holds `MAX_PER_CONNECTION` subscriptions.
#[derive(Debug)]
pub struct Full;

/// A listen stream, registered until it is dropped.
pub struct Listening {
    subs: Arc<Subscriptions>,
    holder: String,
    credential: String,
    deaf: CancellationToken,
}

impl Listening {
    /// Cancelled when a notification to this stream could not be sent.
    pub fn deaf(&self) -> &CancellationToken {
        &self.deaf
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.subs.forget(&self.holder);
        self.subs.with(|s| {
            if let Some(n) = s.listens.get_mut(&self.credential) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    s.listens.remove(&self.credential);
                }
            }
        });
    }
}

impl Subscriptions {
    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        match self.state.lock() {
            Ok(mut g) => f(&mut g),
            Err(p) => f(&mut p.into_inner()),
        }
    }

    /// Subscribe `connection` (of `tenant`) to `uri`; a repeat is a no-op.
    pub fn subscribe(
        &self,
        tenant: &TenantId,
        connection: &str,
        uri: &str,
        peer: Peer<RoleServer>,
    ) -> Result<(), Full> {
        let key = (tenant.clone(), uri.to_owned());
        if peer.is_transport_closed() {
            // Closed while the subscribe was being checked: nothing to keep.
            return Ok(());
        }
        self.with(|s| {
            let mine = s.by_connection.entry(connection.to_owned()).or_default();
            if !mine.contains(&key) && mine.len() >= MAX_PER_CONNECTION {
                return Err(Full);
            }
            mine.insert(key.clone());
            s.by_uri
                .entry(key)
                .or_default()
                .insert(connection.to_owned(), Target::Connection(peer));
            Ok(())
        })
    }

    /// Register a listen stream of `credential` (of `tenant`) for `uris`
    /// (canonical, at most [`MAX_PER_CONNECTION`] taken); `Full` when the
    /// credential already holds [`MAX_LISTENS_PER_CREDENTIAL`] streams here.
    /// `credential` is the whole per-credential key (tenant, kind, id, role):
    /// one subject's token in two tenants holds two separate budgets.
    pub fn listen(
        self: &Arc<Self>,
        tenant: &TenantId,
        credential: &str,
        uris: &[String],
        sink: SubscriptionSink,
    ) -> Result<Listening, Full> {
        let holder = format!("listen:{}", uuid::Uuid::new_v4());
        let deaf = CancellationToken::new();
        self.with(|s| {
            let open = s.listens.entry(credential.to_owned()).or_default();
            if *open >= MAX_LISTENS_PER_CREDENTIAL {
                return Err(Full);
            }
            *open += 1;
            for uri in uris.iter().take(MAX_PER_CONNECTION) {
                let key = (tenant.clone(), uri.clone());
                s.by_connection
                    .entry(holder.clone())
                    .or_default()
                    .insert(key.clone());
                s.by_uri
                    .entry(key)
                    .or_default()
                    .insert(holder.clone(), Target::Stream(sink.clone(), deaf.clone()));
            }
            Ok(())
        })?;
        Ok(Listening {
            subs: Arc::clone(self),
            holder,
            credential: credential.to_owned(),
            deaf,
        })
    }

    pub fn unsubscribe(&self, tenant: &TenantId, connection: &str, uri: &str) {
        let key = (tenant.clone(), uri.to_owned());
        self.with(|s| remove(s, connection, &key));
    }

    /// Drop every subscription of a closed connection.
    pub fn forget(&self, connection: &str) {
        self.with(|s| {
            for key in s.by_connection.remove(connection).unwrap_or_default() {
                if let Some(peers) = s.by_uri.get_mut(&key) {
                    peers.remove(connection);
                    if peers.is_empty() {
                        s.by_uri.remove(&key);
                    }
                }
            }
        });
    }

    /// Drop the subscriptions of connections whose transport has closed (the
    /// session ended by rmcp's own idle reaper, or closed through another
    /// replica): run by the expiry sweep, so such entries cannot pile up.
    pub fn prune_closed(&self) -> usize {
        self.with(|s| {
            let dead: Vec<(String, Key)> = s
                .by_uri
                .iter()
                .flat_map(|(k, peers)| {
                    peers
                        .iter()
                        .filter(|(_, p)| p.closed())
                        .map(move |(c, _)| (c.clone(), k.clone()))
                })
                .collect();
            for (c, k) in &dead {
                remove(s, c, k);
            }
            dead.len()
        })
    }

    /// How many subscriptions this replica holds (for tests and gauges).
    pub fn len(&self) -> usize {
        self.with(|s| s.by_connection.values().map(HashSet::len).sum())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Tell every subscriber of the changed resource, each on its own task
    /// so a slow client delays no one; a failed send ends its subscription.
    pub fn deliver(self: &Arc<Self>, change: FocusChange) {
        let uri = change.uri();
        let key = (change.tenant, uri.clone());
        let targets: Vec<(String, Target)> = self.with(|s| {
            s.by_uri
                .get(&key)
                .map(|m| m.iter().map(|(c, t)| (c.clone(), t.clone())).collect())
                .unwrap_or_default()
        });
        for (holder, target) in targets {
            let this = Arc::clone(self);
            let key = key.clone();
            let uri = uri.clone();
            tokio::spawn(async move {
                if !target.notify(uri).await {
                    this.with(|s| remove(s, &holder, &key));
                }
            });
        }
    }
}

fn remove(s: &mut State, connection: &str, key: &Key) {
    if let Some(mine) = s.by_connection.get_mut(connection) {
        mine.remove(key);
        if mine.is_empty() {
            s.by_connection.remove(connection);
        }
    }
    if let Some(peers) = s.by_uri.get_mut(key) {
        peers.remove(connection);
        if peers.is_empty() {
            s.by_uri.remove(key);
        }
    }
}

//! Who listens to which focus resource, on this replica (SPEC §2.11).
//!
//! A subscription belongs to one MCP connection and one tenant; it dies with
//! the connection (the registry forgets it on close and expiry, and a failed
//! send drops it). At most `MAX_PER_CONNECTION` per connection, and the
//! connections themselves are capped per credential, so memory is bounded per
//! credential.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brain_core::feed::FocusChange;
use brain_core::ids::TenantId;
use rmcp::service::{Peer, RoleServer};

pub const MAX_PER_CONNECTION: usize = 64;

/// A notification that cannot be queued within this long (a client that
/// stopped reading its stream) ends that subscription instead of a task.
const SEND_WITHIN: Duration = Duration::from_secs(5);

type Key = (TenantId, String);

#[derive(Default)]
struct State {
    /// (tenant, uri) → connection id → the connection's peer.
    by_uri: HashMap<Key, HashMap<String, Peer<RoleServer>>>,
    /// connection id → its (tenant, uri) keys.
    by_connection: HashMap<String, HashSet<Key>>,
}

#[derive(Default)]
pub struct Subscriptions {
    state: Mutex<State>,
}

/// A connection already holds `MAX_PER_CONNECTION` subscriptions.
#[derive(Debug)]
pub struct Full;

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
                .insert(connection.to_owned(), peer);
            Ok(())
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
                        .filter(|(_, p)| p.is_transport_closed())
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
        let peers: Vec<(String, Peer<RoleServer>)> = self.with(|s| {
            s.by_uri
                .get(&key)
                .map(|m| m.iter().map(|(c, p)| (c.clone(), p.clone())).collect())
                .unwrap_or_default()
        });
        for (connection, peer) in peers {
            let this = Arc::clone(self);
            let key = key.clone();
            let uri = uri.clone();
            tokio::spawn(async move {
                let param = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
                let sent =
                    tokio::time::timeout(SEND_WITHIN, peer.notify_resource_updated(param)).await;
                if !matches!(sent, Ok(Ok(()))) {
                    this.with(|s| remove(s, &connection, &key));
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

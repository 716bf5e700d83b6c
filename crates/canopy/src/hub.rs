//! What the connections of one store in this process share: change
//! subscriptions (the [`Subscriber`] interface and the events it gets are
//! defined here; the `subscribe` module runs them), operational data providers
//! and a copy of the operational state each connection pushed (the state
//! itself is in the store). One hub per store (by backend and location),
//! found through a process-wide registry.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::time::Instant;

use canopy_core::diff::Change;
use canopy_core::path::Path;
use canopy_core::tree::Container;
use canopy_store::keys::Datastore;
use canopy_store::lease::Lease;
use canopy_store::StoreUrl;

/// What a subscriber is told about a transaction.
#[derive(Debug)]
pub struct ChangeEvent<'a> {
    /// The datastore the transaction changes.
    pub datastore: Datastore,
    /// The subscribed subtree.
    pub subtree: &'a Path,
    /// The store revision the transaction committed (only in `apply`).
    pub revision: Option<u64>,
    pub(crate) all: &'a [Change],
    /// Indexes into `all` of the changes inside the subtree; `None`: all of them.
    pub(crate) picked: Option<&'a [u32]>,
}

impl<'a> ChangeEvent<'a> {
    /// The transaction's changes inside the subtree, in order.
    pub fn changes(&self) -> impl ExactSizeIterator<Item = &'a Change> + '_ {
        let all = self.all;
        let n = self.picked.map_or(all.len(), <[u32]>::len);
        (0..n).map(move |i| match self.picked {
            Some(p) => &all[p[i] as usize],
            None => &all[i],
        })
    }
}

/// A change subscriber. Every method has a default that does nothing.
///
/// Callbacks run on the committing thread while the transaction holds its
/// connection: they must not read or write through the connection that
/// commits (doing so returns [`Error::Usage`]); other connections are free.
pub trait Subscriber: Send + Sync {
    /// May reject the transaction with a reason; nothing is stored then.
    fn validate(&self, _event: &ChangeEvent<'_>) -> std::result::Result<(), String> {
        Ok(())
    }

    /// The transaction is stored.
    fn apply(&self, _event: &ChangeEvent<'_>) {}

    /// The transaction this subscriber validated is not stored after all.
    fn abort(&self, _event: &ChangeEvent<'_>) {}

    /// Whether deletes must be delivered with what they deleted
    /// ([`canopy_core::diff::Change::Deleted`]). A subscriber that only needs
    /// the paths (a change log, a cache invalidator) returns `false`: then a
    /// deleted subtree may arrive as [`canopy_core::diff::Change::Erased`],
    /// which the engine removes with one range delete without reading it.
    fn wants_old_values(&self) -> bool {
        true
    }
}

/// One subscription as the hub keeps it.
pub(crate) struct Entry {
    pub id: u64,
    pub ds: Datastore,
    pub subtree: Path,
    pub priority: i32,
    pub subscriber: Box<dyn Subscriber>,
}

/// Supplies operational state for a subtree when someone reads it: gets the
/// provider's subtree path, returns a tree from the datastore root holding
/// the state (an error message makes the read fail).
pub type ProvideFn = dyn Fn(&Path) -> std::result::Result<Container, String> + Send + Sync;

pub(crate) struct ProviderEntry {
    pub id: u64,
    pub subtree: Path,
    pub provide: Box<ProvideFn>,
}

#[derive(Default)]
pub(crate) struct Hub {
    next: AtomicU64,
    /// Every subscription, in calling order; replaced whole on each change so
    /// that a commit takes it with one reference count.
    subs: RwLock<Arc<Vec<Arc<Entry>>>>,
    providers: RwLock<Vec<Arc<ProviderEntry>>>,
    /// The operational state each connection of this process pushed, by
    /// connection id: the same as its records in the store (which other
    /// processes read), kept here so that this process reads it without
    /// loading it.
    pub pushed: Mutex<BTreeMap<u64, Pushed>>,
    /// Whether this process's listener of the store's change log runs (see
    /// `Store::listen`).
    pub listener: Mutex<bool>,
    /// This process's lease on a store that keeps leases, taken when a
    /// connection first writes a record tied to it (a lock, pushed state);
    /// dropped with the hub, after the connections removed their records.
    pub lease: Mutex<Option<Box<dyn Lease>>>,
    /// What the server last said of other processes' leases: held (and
    /// when it was asked) or ended.
    pub lease_answers: Mutex<HashMap<u64, (bool, Instant)>>,
}

/// A connection's pushed state.
#[derive(Default)]
pub(crate) struct Pushed {
    pub tree: Container,
    /// When the connection first pushed (nanoseconds since the Unix epoch).
    pub since: u64,
}

impl Hub {
    /// This process's lease: its identity and whether it was lost.
    pub fn lease_state(&self) -> Option<(u64, bool)> {
        self.lease.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(|l| (l.id(), l.lost()))
    }

    pub fn subscribe(&self, ds: Datastore, subtree: Path, priority: i32, subscriber: Box<dyn Subscriber>) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut g = self.subs.write().unwrap_or_else(|p| p.into_inner());
        let mut subs = (**g).clone();
        subs.push(Arc::new(Entry { id, ds, subtree, priority, subscriber }));
        // Highest priority first; equal priorities in subscription order.
        subs.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.id.cmp(&b.id)));
        *g = Arc::new(subs);
        id
    }

    pub fn unsubscribe(&self, id: u64) {
        let mut g = self.subs.write().unwrap_or_else(|p| p.into_inner());
        let subs: Vec<Arc<Entry>> = g.iter().filter(|e| e.id != id).cloned().collect();
        *g = Arc::new(subs);
    }

    /// Every subscription, in calling order.
    pub fn subscribers(&self) -> Arc<Vec<Arc<Entry>>> {
        self.subs.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn add_provider(&self, subtree: Path, provide: Box<ProvideFn>) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.providers.write().unwrap_or_else(|p| p.into_inner()).push(Arc::new(ProviderEntry {
            id,
            subtree,
            provide,
        }));
        id
    }

    pub fn remove_provider(&self, id: u64) {
        self.providers.write().unwrap_or_else(|p| p.into_inner()).retain(|e| e.id != id);
    }

    pub fn providers(&self) -> Vec<Arc<ProviderEntry>> {
        self.providers.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// A registered operational data provider; dropping it (or
/// [`Provider::cancel`]) removes it.
pub struct Provider {
    pub(crate) hub: Arc<Hub>,
    pub(crate) id: u64,
}

impl Provider {
    /// Removes the provider.
    pub fn cancel(self) {}
}

impl Drop for Provider {
    fn drop(&mut self) {
        self.hub.remove_provider(self.id);
    }
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider").field("id", &self.id).finish()
    }
}

/// The hub of the store `url` names. Memory stores are each their own store.
pub(crate) fn hub_for(url: &str) -> Arc<Hub> {
    static HUBS: OnceLock<Mutex<HashMap<String, Weak<Hub>>>> = OnceLock::new();
    static UNIQUE: AtomicU64 = AtomicU64::new(0);
    let identity = match StoreUrl::parse(url) {
        Ok(u) if u.scheme.as_deref() == Some("memory") => {
            format!("memory#{}", UNIQUE.fetch_add(1, Ordering::Relaxed))
        }
        // A server's store: its address and the namespace in it (one
        // server holds many stores), without the credentials.
        Ok(u) if u.location.starts_with("//") => {
            let place = u.location.rsplit_once('@').map_or(&u.location[2..], |(_, at)| at);
            let ns: Vec<String> =
                ["schema", "prefix"].iter().filter_map(|k| u.params.get(*k).map(|v| format!("{k}={v}"))).collect();
            format!("{}://{place}?{}", u.scheme.as_deref().unwrap_or(""), ns.join("&"))
        }
        Ok(u) => {
            let place = std::fs::canonicalize(&u.location)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| u.location.clone());
            format!("{}:{place}", u.scheme.as_deref().unwrap_or("lmdb"))
        }
        Err(_) => url.to_string(),
    };
    let mut hubs = HUBS.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    hubs.retain(|_, w| w.strong_count() > 0);
    if let Some(h) = hubs.get(&identity).and_then(Weak::upgrade) {
        return h;
    }
    let h = Arc::new(Hub::default());
    hubs.insert(identity, Arc::downgrade(&h));
    h
}

//! Change subscriptions: callbacks on a subtree of a datastore that take part
//! in every transaction that changes it.
//!
//! Each transaction that changes a subscribed subtree calls, in priority order
//! (highest first; equal priorities in the order they subscribed):
//! 1. `validate` on every matching subscriber, before anything is stored. The
//!    first one that rejects (or panics) aborts the transaction: the
//!    subscribers that had accepted get `abort`, the committer gets
//!    [`Error::Rejected`], and nothing is stored.
//! 2. After the store commits, `apply` on every matching subscriber; when
//!    storing fails instead, `abort`.
//!
//! Each subscriber sees only the changes inside its subtree (a change of an
//! ancestor that includes the subtree, such as deleting its parent, is
//! delivered whole). Subscriptions belong to the process: every connection
//! ([`crate::Store`]) of the same store in the process triggers them.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use canopy_core::diff::{Change, Subtree};
use canopy_core::path::{Path, Selector};
use canopy_core::tree::{Container, Node};
use canopy_store::keys::Datastore;

use crate::error::{Error, Result};
pub use crate::hub::{ChangeEvent, Subscriber};
use crate::hub::{Entry, Hub};

/// A registered subscriber. Dropping the handle (or [`Subscription::cancel`])
/// unsubscribes.
pub struct Subscription {
    hub: Arc<Hub>,
    id: u64,
}

impl Subscription {
    /// Unsubscribes.
    pub fn cancel(self) {}
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.hub.unsubscribe(self.id);
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription").field("id", &self.id).finish()
    }
}

pub(crate) fn subscribe(
    hub: &Arc<Hub>,
    ds: Datastore,
    subtree: Path,
    priority: i32,
    subscriber: Box<dyn Subscriber>,
) -> Subscription {
    let id = hub.subscribe(ds, subtree, priority, subscriber);
    Subscription { hub: hub.clone(), id }
}

/// Whether `change` concerns the subtree `sub`: it lies inside it, or it is
/// the creation, deletion or move of an ancestor that holds the subtree. A
/// subscription segment without a selector matches every entry of its list.
pub(crate) fn concerns(sub: &Path, change: &Change) -> bool {
    let at = change.path();
    let matched = sub
        .segments
        .iter()
        .zip(&at.segments)
        .all(|(s, c)| s.name == c.name && (matches!(s.selector, Selector::None) || s.selector == c.selector));
    if !matched || at.segments.len() >= sub.segments.len() {
        return matched;
    }
    let rest = Path { segments: sub.segments[at.segments.len()..].to_vec() };
    let holds = |node: &Subtree| match node {
        Subtree::Node(Node::Container(c)) | Subtree::Entry(c) => {
            // Below the ancestor, any entry of a list the subscription names
            // without keys will do.
            holds_path(c, &rest.segments)
        }
        _ => false,
    };
    match change {
        Change::Created { node, .. } | Change::Deleted { node, .. } => holds(node),
        // What was erased is not known: it may hold what the subscription names.
        Change::Moved { .. } | Change::Erased { .. } => true,
        Change::Modified { .. } | Change::Meta { .. } => false,
    }
}

/// Whether `c` has a node at `segs` (a segment without a selector matches any entry).
fn holds_path(c: &Container, segs: &[canopy_core::Segment]) -> bool {
    let Some((seg, rest)) = segs.split_first() else { return true };
    match (c.children.get(&seg.name), &seg.selector) {
        (None, _) => false,
        (Some(_), _) if rest.is_empty() && matches!(seg.selector, Selector::None) => true,
        (Some(Node::Container(c)), Selector::None) => holds_path(c, rest),
        (Some(Node::List(l)), Selector::None) => l.entries().any(|e| holds_path(e, rest)),
        (Some(Node::List(l)), sel) => l.find(sel).is_some_and(|(_, e)| holds_path(e, rest)),
        (Some(Node::LeafList(v)), Selector::Value(x)) => rest.is_empty() && v.iter().any(|e| e.value.as_text() == *x),
        _ => false,
    }
}

/// The subscribers a transaction's changes concern, with the indexes of the
/// changes each one sees. Empty when nobody is subscribed.
pub(crate) struct Matched {
    /// Each subscriber with the index of its changes in `picks`.
    subs: Vec<(Arc<Entry>, usize)>,
    /// The changes of each distinct subtree: indexes into the transaction's
    /// changes, `None` for all of them. Subscribers of one subtree share one.
    picks: Vec<Option<Vec<u32>>>,
}

impl Matched {
    pub fn find(hub: &Hub, ds: Datastore, changes: &[Change]) -> Matched {
        Matched::find_among(&hub.subscribers(), ds, changes)
    }

    /// [`Matched::find`] among the subscribers `all` (the hub's at one moment).
    pub fn find_among(all: &[Arc<Entry>], ds: Datastore, changes: &[Change]) -> Matched {
        let mut m = Matched { subs: Vec::new(), picks: Vec::new() };
        if all.is_empty() {
            return m;
        }
        // Subtrees already matched: (subtree, index into picks, any change).
        let mut seen: Vec<(&Path, usize, bool)> = Vec::new();
        for e in all.iter().filter(|e| e.ds == ds) {
            let (at, any) = match seen.iter().find(|(p, _, _)| **p == e.subtree) {
                Some(&(_, at, any)) => (at, any),
                None => {
                    let pick = if e.subtree.is_root() || changes.iter().all(|c| concerns(&e.subtree, c)) {
                        None
                    } else {
                        Some(
                            (0..changes.len() as u32).filter(|&i| concerns(&e.subtree, &changes[i as usize])).collect(),
                        )
                    };
                    let any = pick.as_ref().is_none_or(|p: &Vec<u32>| !p.is_empty());
                    m.picks.push(pick);
                    seen.push((&e.subtree, m.picks.len() - 1, any));
                    (m.picks.len() - 1, any)
                }
            };
            if any {
                m.subs.push((e.clone(), at));
            }
        }
        m
    }

    fn event<'a>(&'a self, e: &'a Entry, at: usize, changes: &'a [Change], revision: Option<u64>) -> ChangeEvent<'a> {
        ChangeEvent { datastore: e.ds, subtree: &e.subtree, revision, all: changes, picked: self.picks[at].as_deref() }
    }

    /// Runs the validate phase. On a rejection, the subscribers that had
    /// accepted are told to abort and the rejection is returned.
    pub fn validate(&self, conn: u64, changes: &[Change]) -> Result<()> {
        if self.subs.is_empty() {
            return Ok(());
        }
        in_callback(conn, || {
            for (n, (e, at)) in self.subs.iter().enumerate() {
                let ev = self.event(e, *at, changes, None);
                let verdict = match catch_unwind(AssertUnwindSafe(|| e.subscriber.validate(&ev))) {
                    Ok(v) => v,
                    Err(panic) => Err(format!("the subscriber panicked: {}", panic_text(&*panic))),
                };
                if let Err(reason) = verdict {
                    self.abort_first(n, changes);
                    return Err(Error::Rejected { subtree: e.subtree.to_string(), datastore: e.ds, reason });
                }
            }
            Ok(())
        })
    }

    /// Tells the first `n` subscribers that the transaction is not stored
    /// (inside [`in_callback`]).
    fn abort_first(&self, n: usize, changes: &[Change]) {
        for (e, at) in self.subs[..n].iter().rev() {
            let ev = self.event(e, *at, changes, None);
            let _ = catch_unwind(AssertUnwindSafe(|| e.subscriber.abort(&ev)));
        }
    }

    /// Storing failed after every subscriber validated.
    pub fn abort(&self, conn: u64, changes: &[Change]) {
        if !self.subs.is_empty() {
            in_callback(conn, || self.abort_first(self.subs.len(), changes));
        }
    }

    /// The transaction is stored at `revision`. A panicking subscriber does
    /// not stop the others (the transaction is committed already).
    pub fn apply(&self, conn: u64, changes: &[Change], revision: u64) {
        if self.subs.is_empty() {
            return;
        }
        in_callback(conn, || {
            for (e, at) in &self.subs {
                let ev = self.event(e, *at, changes, Some(revision));
                let _ = catch_unwind(AssertUnwindSafe(|| e.subscriber.apply(&ev)));
            }
        })
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

thread_local! {
    /// Connections (by id) that are calling callbacks on this thread while
    /// holding their own locks.
    static CALLING: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` as a callback of connection `conn`.
fn in_callback<T>(conn: u64, f: impl FnOnce() -> T) -> T {
    CALLING.with(|c| c.borrow_mut().push(conn));
    let out = f();
    CALLING.with(|c| c.borrow_mut().pop());
    out
}

/// Refuses to use connection `conn` from inside one of its own callbacks
/// (its locks are held: waiting for them would never end).
pub(crate) fn check_not_calling(conn: u64) -> Result<()> {
    if CALLING.with(|c| c.borrow().contains(&conn)) {
        return Err(Error::Usage(
            "a subscriber or provider callback used the connection that is calling it; use another connection \
             (Store::open) inside callbacks"
                .into(),
        ));
    }
    Ok(())
}

/// Runs a provider callback (see [`crate::Store::provide`]) the same way.
pub(crate) fn call_guarded<T>(conn: u64, f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    in_callback(conn, || catch_unwind(AssertUnwindSafe(f))).map_err(|p| format!("it panicked: {}", panic_text(&*p)))
}

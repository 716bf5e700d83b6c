//! What the server remembers of commits: the revision at which each subtree
//! last changed (for `ETag` and `Last-Modified`, like etcd's `mod_revision`),
//! and a bounded log of recent commits that change streams replay from.
//!
//! Commits made through this process arrive as subscription events (paths
//! only: deletes need not be read for this). A revision that appears in the
//! store without an event (another process committed) moves the floor: every
//! subtree then counts as changed at that revision, since what changed is not
//! known. That only ever makes an `ETag` change too often, never too rarely.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use canopy::{Change, ChangeEvent, Datastore, Path, Subscriber};
use canopy_core::Selector;

/// One commit as the log keeps it.
#[derive(Debug)]
pub struct Event {
    pub revision: u64,
    pub datastore: Datastore,
    pub time: SystemTime,
    pub changes: Vec<Change>,
}

/// Commits kept for change streams to resume from.
const LOG_EVENTS: usize = 4096;
/// Changes kept in the log at most (a bulk import is one event of many).
const LOG_CHANGES: usize = 500_000;

/// When a subtree last changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub revision: u64,
    pub time: SystemTime,
}

impl Stamp {
    fn max(self, other: Stamp) -> Stamp {
        if other.revision > self.revision {
            other
        } else {
            self
        }
    }

    /// The entity tag: the revision, quoted.
    pub fn etag(&self) -> String {
        format!("\"{}\"", self.revision)
    }
}

#[derive(Default)]
struct Trie {
    /// The newest change at or below this node.
    below: Option<Stamp>,
    /// The newest change that created, deleted or replaced this node whole.
    whole: Option<Stamp>,
    children: HashMap<String, Trie>,
}

/// The trie's keys of a path: the name, then the selector for entries, so
/// that a whole list has a node of its own.
fn keys(path: &Path) -> impl Iterator<Item = String> + '_ {
    path.segments.iter().flat_map(|seg| {
        let sel = match &seg.selector {
            Selector::None => None,
            Selector::Keys(kv) => Some(kv.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>().join("\u{0}")),
            Selector::Value(v) => Some(format!("={v}")),
            Selector::Position(n) => Some(format!("#{n}")),
        };
        std::iter::once(seg.name.to_string()).chain(sel)
    })
}

struct State {
    floor: Stamp,
    /// The newest revision this tracker accounted for.
    seen: u64,
    tries: HashMap<Datastore, Trie>,
    log: VecDeque<Arc<Event>>,
    log_changes: usize,
    /// The log holds every commit after this revision.
    complete_after: u64,
}

impl State {
    /// Accounts for commits up to `revision` that no event explained:
    /// everything counts as changed then, and the log starts again.
    fn unexplained(&mut self, revision: u64) {
        self.floor = Stamp { revision, time: SystemTime::now() };
        self.seen = revision;
        self.tries.clear();
        self.complete_after = revision;
        self.log.clear();
        self.log_changes = 0;
    }
}

/// Subtree stamps and the change log of one store.
pub struct Tracker {
    state: Mutex<State>,
    /// Writes of this server under way: their revisions may show in the
    /// store before their events arrive, which must not move the floor.
    pub writing: AtomicUsize,
    /// The newest logged revision, for streams to wait on.
    pub newest: tokio::sync::watch::Sender<u64>,
}

impl Tracker {
    /// A tracker for a store now at `revision`: everything counts as
    /// changed then.
    pub fn new(revision: u64) -> Tracker {
        let now = SystemTime::now();
        Tracker {
            state: Mutex::new(State {
                floor: Stamp { revision, time: now },
                seen: revision,
                tries: HashMap::new(),
                log: VecDeque::new(),
                log_changes: 0,
                complete_after: revision,
            }),
            writing: AtomicUsize::new(0),
            newest: tokio::sync::watch::channel(revision).0,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Accounts for the store being at `revision`: a revision no event
    /// explained (another process committed) moves the floor.
    pub fn sync(&self, revision: u64) {
        let mut s = self.lock();
        if revision > s.seen && self.writing.load(Ordering::Acquire) == 0 {
            s.unexplained(revision);
            drop(s);
            self.newest.send_replace(revision);
        }
    }

    /// Takes every resource for changed at `revision` (or the newest
    /// accounted for, if newer): after a commit of this server that other
    /// processes' unaccounted commits may precede. The log starts again.
    pub fn distrust(&self, revision: u64) {
        let mut s = self.lock();
        let revision = revision.max(s.seen);
        s.unexplained(revision);
        drop(s);
        self.newest.send_replace(revision);
    }

    /// Records a commit.
    pub fn record(&self, datastore: Datastore, revision: u64, changes: Vec<Change>) {
        let time = SystemTime::now();
        let stamp = Stamp { revision, time };
        let mut s = self.lock();
        let trie = s.tries.entry(datastore).or_default();
        for c in &changes {
            let mut node = &mut *trie;
            node.below = Some(node.below.map_or(stamp, |b| b.max(stamp)));
            for k in keys(c.path()) {
                node = node.children.entry(k).or_default();
                node.below = Some(node.below.map_or(stamp, |b| b.max(stamp)));
            }
            if matches!(c, Change::Created { .. } | Change::Deleted { .. } | Change::Erased { .. }) {
                node.whole = Some(stamp);
                node.children.clear();
            }
        }
        s.seen = s.seen.max(revision);
        s.log_changes += changes.len();
        s.log.push_back(Arc::new(Event { revision, datastore, time, changes }));
        while s.log.len() > LOG_EVENTS || (s.log_changes > LOG_CHANGES && s.log.len() > 1) {
            if let Some(old) = s.log.pop_front() {
                s.log_changes -= old.changes.len();
                s.complete_after = old.revision;
            }
        }
        drop(s);
        self.newest.send_replace(revision);
    }

    /// When the subtree at `path` of the datastores `dss` (their newest)
    /// last changed.
    pub fn stamp(&self, dss: &[Datastore], path: &Path) -> Stamp {
        let s = self.lock();
        let mut best = s.floor;
        for ds in dss {
            let Some(mut node) = s.tries.get(ds) else { continue };
            if let Some(w) = node.whole {
                best = best.max(w);
            }
            let mut complete = true;
            for k in keys(path) {
                match node.children.get(&k) {
                    Some(n) => node = n,
                    None => {
                        complete = false;
                        break;
                    }
                }
                if let Some(w) = node.whole {
                    best = best.max(w);
                }
            }
            if complete {
                if let Some(b) = node.below {
                    best = best.max(b);
                }
            }
        }
        best
    }

    /// The logged commits after `revision`, or `None` when some of them are
    /// no longer kept.
    pub fn since(&self, revision: u64) -> Option<Vec<Arc<Event>>> {
        let s = self.lock();
        if revision < s.complete_after {
            return None;
        }
        Some(s.log.iter().filter(|e| e.revision > revision).cloned().collect())
    }

    /// The newest revision accounted for.
    pub fn seen(&self) -> u64 {
        self.lock().seen
    }
}

/// The subscriber that feeds a tracker: every datastore, paths only.
pub struct Feed(pub Arc<Tracker>);

impl Subscriber for Feed {
    fn apply(&self, event: &ChangeEvent<'_>) {
        if let Some(rev) = event.revision {
            self.0.record(event.datastore, rev, event.changes().cloned().collect());
        }
    }

    fn wants_old_values(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canopy::{Node, Subtree, Value};

    fn p(s: &str) -> Path {
        s.parse().unwrap()
    }

    fn modified(path: &str) -> Change {
        Change::Modified {
            path: p(path),
            old: Node::leaf(Value::String("1".into())),
            new: Node::leaf(Value::String("2".into())),
        }
    }

    #[test]
    fn a_subtree_changes_only_when_something_in_it_does() {
        let t = Tracker::new(10);
        let run = [Datastore::Running];
        t.record(Datastore::Running, 11, vec![modified("/m:a/l[k='1']/x")]);
        assert_eq!(t.stamp(&run, &p("/m:a/l[k='1']")).revision, 11);
        assert_eq!(t.stamp(&run, &p("/m:a/l[k='2']")).revision, 10, "a sibling entry did not change");
        assert_eq!(t.stamp(&run, &p("/m:a")).revision, 11);
        assert_eq!(t.stamp(&run, &p("/m:b")).revision, 10);
        t.record(
            Datastore::Running,
            12,
            vec![Change::Deleted {
                path: p("/m:a"),
                node: Subtree::Node(Node::leaf(Value::String("1".into()))),
                place: None,
            }],
        );
        assert_eq!(t.stamp(&run, &p("/m:a/l[k='2']/y")).revision, 12, "an ancestor went");
        assert_eq!(t.stamp(&[Datastore::Startup], &p("/m:a")).revision, 10, "another datastore");
    }

    #[test]
    fn another_process_commit_moves_the_floor_and_breaks_the_log() {
        let t = Tracker::new(1);
        t.record(Datastore::Running, 2, vec![modified("/m:a/x")]);
        assert_eq!(t.since(1).unwrap().len(), 1);
        t.sync(2);
        assert_eq!(t.stamp(&[Datastore::Running], &p("/m:b")).revision, 1);
        t.sync(5);
        assert_eq!(t.stamp(&[Datastore::Running], &p("/m:b")).revision, 5);
        assert!(t.since(2).is_none(), "commits 3..5 are unknown");
        assert_eq!(t.since(5).unwrap().len(), 0);
    }

    /// After a commit that others' unheard commits may precede, no stamp
    /// is older than it, not even one a later sync at the same revision
    /// would keep.
    #[test]
    fn distrust_takes_everything_for_changed() {
        let t = Tracker::new(1);
        t.record(Datastore::Running, 4, vec![modified("/m:a/x")]);
        t.distrust(4);
        t.sync(4);
        assert_eq!(t.stamp(&[Datastore::Running], &p("/m:b")).revision, 4);
        assert!(t.since(1).is_none());
        t.distrust(2);
        assert_eq!(t.seen(), 4, "never back");
    }
}

//! Announcements on MongoDB: a change stream (`aggregate` with
//! `$changeStream`) of collection `meta`, narrowed to the revision document,
//! which every commit updates in its transaction. The server reports the
//! update once the transaction has committed, with the new revision. A
//! thread reads the stream on a connection of its own (`getMore`, each
//! waiting on the server up to [`WAIT`] for events) and hands the revisions
//! on; an empty wait is a `Tick`, by which it finds out whether anyone still
//! listens.

use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::time::Duration;

use bson::{doc, Bson, Document};
use canopy_store::backend::{Announcements, ChannelAnnouncements, Heard};
use canopy_store::error::{ErrorKind, Result, StoreError};

use crate::{failure, first_batch, Conn, MongoBackend};

/// How long a `getMore` of the stream waits on the server for an event.
const WAIT: Duration = Duration::from_millis(500);

impl MongoBackend {
    pub(crate) fn listen(&self) -> Result<Box<dyn Announcements>> {
        let mut conn = self.connect()?;
        let open = doc! {
            "aggregate": "meta",
            "pipeline": [{"$changeStream": {}}, {"$match": {"documentKey._id": "revision"}}],
            "cursor": {},
            "$db": &self.db,
        };
        // Opened before this returns: no commit after it goes unheard.
        let reply = conn.command(&open).map_err(|f| self.fail("watch the revision", f))?;
        let cursor = reply.get_document("cursor").ok().and_then(|c| c.get_i64("id").ok()).unwrap_or(0);
        if cursor == 0 {
            return Err(StoreError::new(
                ErrorKind::Unavailable,
                format!("{}: watch the revision: the server ended the change stream at once", self.place),
            ));
        }
        let first = first_batch(&reply);
        let (tx, rx) = sync_channel::<Heard>(1024);
        let stream = Stream { conn, cursor, place: self.place.clone(), db: self.db.clone(), tx };
        std::thread::Builder::new()
            .name("canopy-mongodb-listen".into())
            .spawn(move || stream.run(first))
            .map_err(|e| StoreError::io(format!("{}: listen", self.place), e))?;
        Ok(Box::new(ChannelAnnouncements::new(rx)))
    }
}

/// The listening thread's change stream.
struct Stream {
    conn: Conn,
    cursor: i64,
    place: String,
    db: String,
    tx: SyncSender<Heard>,
}

impl Stream {
    fn run(mut self, first: Vec<Document>) {
        let mut events = first;
        loop {
            let heard =
                if events.is_empty() { vec![Heard::Tick] } else { events.iter().map(|ev| self.heard(ev)).collect() };
            for h in heard {
                let broken = matches!(h, Heard::Broken(_));
                if let Err(TrySendError::Disconnected(_)) = self.tx.try_send(h) {
                    // Nobody listens any more. Best effort: a server drops an
                    // idle cursor anyway.
                    let kill = doc! {"killCursors": "meta", "cursors": [self.cursor], "$db": &self.db};
                    let _ = self.conn.command(&kill);
                    return;
                }
                if broken {
                    return;
                }
            }
            let more = doc! {
                "getMore": self.cursor, "collection": "meta", "maxTimeMS": WAIT.as_millis() as i64, "$db": &self.db,
            };
            let reply = match self.conn.command(&more) {
                Ok(reply) => reply,
                Err(f) => {
                    let _ = self.tx.try_send(Heard::Broken(failure(&self.place, "watch the revision", f)));
                    return;
                }
            };
            let cursor = reply.get_document("cursor").ok();
            events = cursor
                .and_then(|c| c.get_array("nextBatch").ok())
                .map(|a| a.iter().filter_map(|d| d.as_document().cloned()).collect())
                .unwrap_or_default();
            if cursor.and_then(|c| c.get_i64("id").ok()).unwrap_or(0) == 0 && events.is_empty() {
                let e = StoreError::new(
                    ErrorKind::Unavailable,
                    format!("{}: watch the revision: the server ended the change stream", self.place),
                );
                let _ = self.tx.try_send(Heard::Broken(e));
                return;
            }
        }
    }

    /// What an event of the stream says: the revision the document was set
    /// to (`u64::MAX` when the event does not say), or the end of the stream
    /// when the collection or the database went.
    fn heard(&self, ev: &Document) -> Heard {
        let r = match ev.get_str("operationType").unwrap_or("") {
            "update" => ev.get_document("updateDescription").ok().and_then(|u| u.get_document("updatedFields").ok()),
            "insert" | "replace" => ev.get_document("fullDocument").ok(),
            "invalidate" | "drop" | "dropDatabase" | "rename" => {
                return Heard::Broken(StoreError::new(
                    ErrorKind::Unavailable,
                    format!("{}: watch the revision: the store's collection `meta` was dropped", self.place),
                ))
            }
            _ => None,
        };
        let revision = match r.and_then(|d| d.get("r")) {
            Some(Bson::Int64(n)) if *n >= 0 => *n as u64,
            Some(Bson::Int32(n)) if *n >= 0 => *n as u64,
            _ => u64::MAX,
        };
        Heard::Commit(revision)
    }
}

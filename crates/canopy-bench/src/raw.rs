//! The floors: each backend's raw engine doing the work of a suite row with
//! the same key and value bytes canopy stores, without canopy.

#![allow(unsafe_code)] // opening a raw LMDB environment is `unsafe` in heed.

use std::path::Path;

use anyhow::Result;
use heed::types::Bytes;
use heed::{Database, EnvFlags, EnvOpenOptions, WithoutTls};

/// A raw engine's store, opened in a directory.
pub trait RawStore {
    /// Puts every pair in one transaction.
    fn put_all(&mut self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Result<()>;
    /// Reads one key in a fresh read transaction.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Reads every pair in key order; returns the bytes of the values.
    fn scan_all(&self) -> Result<usize>;
    /// Puts one pair in its own committed transaction.
    fn put_one(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Deletes every key under `prefix` in one transaction; returns how many.
    fn delete_prefix(&mut self, prefix: &[u8]) -> Result<usize>;
    /// Bytes on disk.
    fn disk_size(&self) -> u64;
    /// Puts and deletes in one committed transaction.
    fn apply(&mut self, puts: &[(Vec<u8>, Vec<u8>)], dels: &[Vec<u8>]) -> Result<()>;
    /// Reads every pair under `prefix` in key order; returns the bytes of the values.
    fn scan_prefix(&self, prefix: &[u8]) -> Result<usize>;
    /// Whether any key starts with `prefix`.
    fn has_prefix(&self, prefix: &[u8]) -> Result<bool>;
    /// Rewrites the store so that freed space returns to the filesystem.
    fn compact(&mut self) -> Result<()>;
}

/// Opens the raw engine of `backend` in `dir`, with or without a flush per commit.
///
/// # Errors
/// Errors of the engine.
pub fn open(backend: &str, dir: &Path, sync: bool) -> Result<Box<dyn RawStore>> {
    std::fs::create_dir_all(dir)?;
    Ok(match backend {
        "lmdb" => Box::new(RawLmdb::open(dir, sync)?),
        "sqlite" => Box::new(RawSqlite::open(dir, sync)?),
        "snapshot" | "json" => Box::new(RawFile::open(dir, sync)?),
        "memory" => Box::new(RawFile::in_memory()),
        other => match crate::runner::server_store_url(other, dir, "f_", &[format!("sync={}", sync_name(sync))])? {
            Some(url) => Box::new(RawBackend { b: canopy::open::open_backend(&canopy_store::StoreUrl::parse(&url)?)? }),
            None => anyhow::bail!("no raw floor for backend `{other}`"),
        },
    })
}

fn sync_name(sync: bool) -> &'static str {
    if sync {
        "commit"
    } else {
        "off"
    }
}

/// The floor of a backend on a database server: canopy's backend itself
/// (its `Backend` operations: the server's round trips, without the engine).
struct RawBackend {
    b: Box<dyn canopy_store::Backend>,
}

impl RawBackend {
    fn visit(&self, prefix: &[u8]) -> Result<usize> {
        let mut bytes = Vec::new();
        self.b.snapshot()?.scan_prefix(prefix, false, &mut |_, v| {
            bytes.extend_from_slice(v);
            Ok(true)
        })?;
        Ok(bytes.len())
    }
}

impl RawStore for RawBackend {
    fn put_all(&mut self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Result<()> {
        self.apply(pairs, &[])
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.b.snapshot()?.get(key)?)
    }

    fn scan_all(&self) -> Result<usize> {
        self.visit(&[])
    }

    fn put_one(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.apply(&[(key.to_vec(), value.to_vec())], &[])
    }

    fn delete_prefix(&mut self, prefix: &[u8]) -> Result<usize> {
        let mut n = 0;
        self.b.snapshot()?.scan_prefix(prefix, false, &mut |_, _| {
            n += 1;
            Ok(true)
        })?;
        let mut batch = canopy_store::Batch::default();
        batch.delete_prefix(prefix.to_vec());
        self.b.apply(&batch)?;
        Ok(n)
    }

    fn disk_size(&self) -> u64 {
        self.b.disk_size().unwrap_or(0)
    }

    fn apply(&mut self, puts: &[(Vec<u8>, Vec<u8>)], dels: &[Vec<u8>]) -> Result<()> {
        let mut batch = canopy_store::Batch::default();
        for (k, v) in puts {
            batch.put(k.clone(), v.clone());
        }
        for k in dels {
            batch.delete(k.clone());
        }
        self.b.apply(&batch)?;
        Ok(())
    }

    fn scan_prefix(&self, prefix: &[u8]) -> Result<usize> {
        self.visit(prefix)
    }

    fn has_prefix(&self, prefix: &[u8]) -> Result<bool> {
        Ok(self.b.snapshot()?.first_with_prefix(prefix, false)?.is_some())
    }

    fn compact(&mut self) -> Result<()> {
        Ok(self.b.compact()?)
    }
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map(|d| d.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum()).unwrap_or(0)
}

struct RawLmdb {
    env: Option<heed::Env<WithoutTls>>,
    db: Database<Bytes, Bytes>,
    dir: std::path::PathBuf,
    sync: bool,
}

impl RawLmdb {
    fn open(dir: &Path, sync: bool) -> Result<RawLmdb> {
        let mut opts = EnvOpenOptions::new().read_txn_without_tls();
        opts.map_size(4 << 30);
        if !sync {
            // SAFETY: only changes when LMDB flushes.
            unsafe { opts.flags(EnvFlags::NO_SYNC) };
        }
        // SAFETY: the environment is private to this benchmark.
        let env = unsafe { opts.open(dir) }?;
        let mut w = env.write_txn()?;
        let db: Database<Bytes, Bytes> = env.create_database(&mut w, None)?;
        w.commit()?;
        Ok(RawLmdb { env: Some(env), db, dir: dir.to_path_buf(), sync })
    }

    fn env(&self) -> &heed::Env<WithoutTls> {
        self.env.as_ref().expect("open")
    }
}

impl Drop for RawLmdb {
    fn drop(&mut self) {
        if let Some(env) = self.env.take() {
            env.prepare_for_closing().wait();
        }
    }
}

impl RawStore for RawLmdb {
    fn put_all(&mut self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Result<()> {
        let mut w = self.env().write_txn()?;
        for (k, v) in pairs {
            self.db.put(&mut w, k, v)?;
        }
        w.commit()?;
        Ok(())
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let r = self.env().read_txn()?;
        Ok(self.db.get(&r, key)?.map(<[u8]>::to_vec))
    }

    fn scan_all(&self) -> Result<usize> {
        let r = self.env().read_txn()?;
        let mut out = Vec::new();
        for kv in self.db.iter(&r)? {
            out.extend_from_slice(kv?.1);
        }
        Ok(out.len())
    }

    fn put_one(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut w = self.env().write_txn()?;
        self.db.put(&mut w, key, value)?;
        w.commit()?;
        Ok(())
    }

    fn delete_prefix(&mut self, prefix: &[u8]) -> Result<usize> {
        let hi = canopy_store::backend::prefix_end(prefix).expect("prefix has an end");
        let range = (std::ops::Bound::Included(prefix), std::ops::Bound::Excluded(hi.as_slice()));
        let mut w = self.env().write_txn()?;
        let n = self.db.delete_range(&mut w, &range)?;
        w.commit()?;
        Ok(n)
    }

    fn disk_size(&self) -> u64 {
        dir_size(&self.dir)
    }

    fn apply(&mut self, puts: &[(Vec<u8>, Vec<u8>)], dels: &[Vec<u8>]) -> Result<()> {
        let mut w = self.env().write_txn()?;
        for k in dels {
            self.db.delete(&mut w, k)?;
        }
        for (k, v) in puts {
            self.db.put(&mut w, k, v)?;
        }
        w.commit()?;
        Ok(())
    }

    fn scan_prefix(&self, prefix: &[u8]) -> Result<usize> {
        let r = self.env().read_txn()?;
        let mut out = Vec::new();
        for kv in self.db.prefix_iter(&r, prefix)? {
            out.extend_from_slice(kv?.1);
        }
        Ok(out.len())
    }

    fn has_prefix(&self, prefix: &[u8]) -> Result<bool> {
        let r = self.env().read_txn()?;
        let found = self.db.prefix_iter(&r, prefix)?.next().transpose()?.is_some();
        Ok(found)
    }

    fn compact(&mut self) -> Result<()> {
        let tmp = self.dir.join("compact.tmp");
        let _ = std::fs::remove_file(&tmp);
        let env = self.env.take().expect("open");
        let file = env.copy_to_path(&tmp, heed::CompactionOption::Enabled)?;
        // As canopy's LMDB backend: a compaction is flushed (the copy, then
        // the directory after the rename) whatever the sync mode.
        file.sync_all()?;
        env.prepare_for_closing().wait();
        std::fs::rename(&tmp, self.dir.join("data.mdb"))?;
        std::fs::File::open(&self.dir)?.sync_all()?;
        *self = RawLmdb::open(&self.dir.clone(), self.sync)?;
        Ok(())
    }
}

/// SQLite running the statements canopy's backend runs (same table, WAL,
/// the same `synchronous` settings).
struct RawSqlite {
    conn: rusqlite::Connection,
    dir: std::path::PathBuf,
}

impl RawSqlite {
    fn open(dir: &Path, sync: bool) -> Result<RawSqlite> {
        let conn = rusqlite::Connection::open(dir.join("raw.db"))?;
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))?;
        conn.pragma_update(None, "synchronous", if sync { "FULL" } else { "NORMAL" })?;
        // The floor must flush exactly as canopy's backend does: check it took.
        let level: i64 = conn.pragma_query_value(None, "synchronous", |r| r.get(0))?;
        anyhow::ensure!(level == if sync { 2 } else { 1 }, "raw SQLite: synchronous is {level}");
        conn.execute("CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID", [])?;
        Ok(RawSqlite { conn, dir: dir.to_path_buf() })
    }
}

impl RawStore for RawSqlite {
    fn put_all(&mut self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut st = tx.prepare_cached("INSERT OR REPLACE INTO kv(k, v) VALUES (?1, ?2)")?;
            for (k, v) in pairs {
                st.execute((k, v))?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut st = self.conn.prepare_cached("SELECT v FROM kv WHERE k = ?1")?;
        let mut rows = st.query([key])?;
        Ok(match rows.next()? {
            Some(r) => Some(r.get(0)?),
            None => None,
        })
    }

    fn scan_all(&self) -> Result<usize> {
        let mut st = self.conn.prepare_cached("SELECT k, v FROM kv ORDER BY k")?;
        let mut rows = st.query([])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            out.extend_from_slice(r.get_ref(1)?.as_blob()?);
        }
        Ok(out.len())
    }

    fn put_one(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.prepare_cached("INSERT OR REPLACE INTO kv(k, v) VALUES (?1, ?2)")?.execute((key, value))?;
        tx.commit()?;
        Ok(())
    }

    fn delete_prefix(&mut self, prefix: &[u8]) -> Result<usize> {
        let hi = canopy_store::backend::prefix_end(prefix).expect("prefix has an end");
        let tx = self.conn.transaction()?;
        let n = tx.prepare_cached("DELETE FROM kv WHERE k >= ?1 AND k < ?2")?.execute((prefix, hi.as_slice()))?;
        tx.commit()?;
        Ok(n)
    }

    fn disk_size(&self) -> u64 {
        dir_size(&self.dir)
    }

    fn apply(&mut self, puts: &[(Vec<u8>, Vec<u8>)], dels: &[Vec<u8>]) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut del = tx.prepare_cached("DELETE FROM kv WHERE k = ?1")?;
            for k in dels {
                del.execute([k])?;
            }
            let mut put = tx.prepare_cached("INSERT OR REPLACE INTO kv(k, v) VALUES (?1, ?2)")?;
            for (k, v) in puts {
                put.execute((k, v))?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn scan_prefix(&self, prefix: &[u8]) -> Result<usize> {
        let hi = canopy_store::backend::prefix_end(prefix).expect("prefix has an end");
        let mut st = self.conn.prepare_cached("SELECT v FROM kv WHERE k >= ?1 AND k < ?2 ORDER BY k")?;
        let mut rows = st.query((prefix, hi.as_slice()))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            out.extend_from_slice(r.get_ref(0)?.as_blob()?);
        }
        Ok(out.len())
    }

    fn has_prefix(&self, prefix: &[u8]) -> Result<bool> {
        let hi = canopy_store::backend::prefix_end(prefix).expect("prefix has an end");
        let mut st = self.conn.prepare_cached("SELECT 1 FROM kv WHERE k >= ?1 AND k < ?2 LIMIT 1")?;
        let found = st.query((prefix, hi.as_slice()))?.next()?.is_some();
        Ok(found)
    }

    fn compact(&mut self) -> Result<()> {
        self.conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")?;
        Ok(())
    }
}

/// The floor of a whole-file store: the pairs in an in-memory ordered map, and
/// at every commit the least such a design must do — write every pair (length
/// and bytes) into a new file through one buffer, flush it when `sync`, and
/// rename it over the old one. Loading reads the file back into the map.
struct RawFile {
    map: std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
    path: std::path::PathBuf,
    sync: bool,
}

impl RawFile {
    fn open(dir: &Path, sync: bool) -> Result<RawFile> {
        let path = dir.join("raw.file");
        let mut map = std::collections::BTreeMap::new();
        if let Ok(bytes) = std::fs::read(&path) {
            let mut pos = 0;
            let take = |pos: &mut usize| -> Result<Vec<u8>> {
                let len =
                    u32::from_le_bytes(bytes.get(*pos..*pos + 4).ok_or_else(|| anyhow::anyhow!("short"))?.try_into()?);
                let end = *pos + 4 + len as usize;
                let v = bytes.get(*pos + 4..end).ok_or_else(|| anyhow::anyhow!("short"))?.to_vec();
                *pos = end;
                Ok(v)
            };
            while pos < bytes.len() {
                let k = take(&mut pos)?;
                let v = take(&mut pos)?;
                map.insert(k, v);
            }
        }
        Ok(RawFile { map, path, sync })
    }

    /// A map that is never written (the floor of the memory backend).
    fn in_memory() -> RawFile {
        RawFile { map: std::collections::BTreeMap::new(), path: std::path::PathBuf::new(), sync: false }
    }

    fn write(&self) -> Result<()> {
        if self.path.as_os_str().is_empty() {
            return Ok(());
        }
        use std::io::Write;
        let tmp = self.path.with_extension("tmp");
        let file = std::fs::File::create(&tmp)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 16, file);
        for (k, v) in &self.map {
            w.write_all(&(k.len() as u32).to_le_bytes())?;
            w.write_all(k)?;
            w.write_all(&(v.len() as u32).to_le_bytes())?;
            w.write_all(v)?;
        }
        let file = w.into_inner().map_err(|e| e.into_error())?;
        if self.sync {
            file.sync_all()?;
        }
        std::fs::rename(&tmp, &self.path)?;
        if self.sync {
            std::fs::File::open(self.path.parent().expect("dir"))?.sync_all()?;
        }
        Ok(())
    }
}

impl RawStore for RawFile {
    fn put_all(&mut self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Result<()> {
        for (k, v) in pairs {
            self.map.insert(k.clone(), v.clone());
        }
        self.write()
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.map.get(key).cloned())
    }

    fn scan_all(&self) -> Result<usize> {
        let mut out = Vec::new();
        for v in self.map.values() {
            out.extend_from_slice(v);
        }
        Ok(out.len())
    }

    fn put_one(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.map.insert(key.to_vec(), value.to_vec());
        self.write()
    }

    fn delete_prefix(&mut self, prefix: &[u8]) -> Result<usize> {
        let doomed: Vec<Vec<u8>> = self
            .map
            .range(prefix.to_vec()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect();
        for k in &doomed {
            self.map.remove(k);
        }
        self.write()?;
        Ok(doomed.len())
    }

    fn disk_size(&self) -> u64 {
        std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0)
    }

    fn apply(&mut self, puts: &[(Vec<u8>, Vec<u8>)], dels: &[Vec<u8>]) -> Result<()> {
        for k in dels {
            self.map.remove(k);
        }
        for (k, v) in puts {
            self.map.insert(k.clone(), v.clone());
        }
        self.write()
    }

    fn scan_prefix(&self, prefix: &[u8]) -> Result<usize> {
        let mut out = Vec::new();
        for (_, v) in self.map.range(prefix.to_vec()..).take_while(|(k, _)| k.starts_with(prefix)) {
            out.extend_from_slice(v);
        }
        Ok(out.len())
    }

    fn has_prefix(&self, prefix: &[u8]) -> Result<bool> {
        Ok(self.map.range(prefix.to_vec()..).next().is_some_and(|(k, _)| k.starts_with(prefix)))
    }

    fn compact(&mut self) -> Result<()> {
        self.write()
    }
}

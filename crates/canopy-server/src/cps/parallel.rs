//! A long list's entries written on two threads. The thread that scans the
//! store hands the entries' fragments, in batches, to a second thread that
//! turns them into JSON, and turns some batches into JSON itself when the
//! second thread is busy; the pieces are written in the list's order. The
//! fragments change hands without being copied: a batch's buffers come back
//! with its JSON and are scanned into again, and the JSON's buffers are
//! written into again once written out (a fresh buffer per piece costs a
//! page fault per 4 KiB of the reply).
//!
//! The second thread is started at the list's second batch (a short list
//! costs no thread), and memory stays a few batches whatever the list's
//! length: the scan waits for the oldest piece when too many are on their
//! way.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::mpsc;
use std::thread::Scope;

/// Entries turned into JSON as one piece.
const BATCH: usize = 16;
/// Batches the second thread holds at most (queued or being written).
const AHEAD: usize = 4;
/// Pieces on their way at most before the scan waits for the oldest.
const PENDING: usize = AHEAD + 2;

/// Turns one entry (its fragments) into its JSON, appended to the buffer.
pub(super) type Render<'r, T> = dyn Fn(&mut Vec<u8>, &T) -> io::Result<()> + Sync + 'r;

type Job<T> = (Vec<T>, Vec<u8>);
type Done<T> = (io::Result<Vec<u8>>, Vec<T>);

/// The second thread, as the scan sees it.
struct Helper<T> {
    jobs: mpsc::SyncSender<Job<T>>,
    done: mpsc::Receiver<Done<T>>,
    /// Batches sent and not yet taken back.
    out: usize,
}

/// The next piece of the list, in order.
enum Piece {
    Ready(Vec<u8>),
    /// The oldest batch the second thread has not given back.
    Helper,
}

/// Writes the entries `scan` hands over, each as `render` writes it,
/// separated by commas, with `opening` written before the first one. `scan`
/// calls its argument with each entry's fragments (which it may take) and
/// stops when it returns `false`. Whether any entry was written.
///
/// # Errors
/// What `scan`, `render` or the writer return: the scan stops at the first.
pub(super) fn write_list<T: Default + Send>(
    w: &mut dyn Write,
    scan: impl FnOnce(&mut dyn FnMut(&mut T) -> bool) -> io::Result<()>,
    render: &Render<'_, T>,
    opening: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
) -> io::Result<bool> {
    std::thread::scope(|sc| {
        let mut list = List {
            w,
            opening,
            render,
            any: false,
            batch: Vec::with_capacity(BATCH),
            batches: 0,
            spare: Vec::new(),
            pending: VecDeque::new(),
            helper: None,
            failed: None,
            buffers: Vec::new(),
        };
        scan(&mut |frags| list.entry(frags, sc))?;
        list.finish(sc)
    })
}

struct List<'a, 'w, 'r, T> {
    w: &'w mut dyn Write,
    opening: &'w mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    render: &'a Render<'r, T>,
    any: bool,
    batch: Vec<T>,
    /// Batches formed so far.
    batches: usize,
    /// Buffers given back, scanned into again.
    spare: Vec<T>,
    pending: VecDeque<Piece>,
    helper: Option<Helper<T>>,
    failed: Option<io::Error>,
    /// Buffers of pieces written out, written into again.
    buffers: Vec<Vec<u8>>,
}

impl<'a, 'w, 'r, T: Default + Send> List<'a, 'w, 'r, T> {
    /// Takes one entry's fragments; `false` once something failed.
    fn entry<'s>(&mut self, frags: &mut T, sc: &'s Scope<'s, '_>) -> bool
    where
        'a: 's,
    {
        let mut mine = self.spare.pop().unwrap_or_default();
        std::mem::swap(&mut mine, frags);
        self.batch.push(mine);
        if self.batch.len() == BATCH {
            let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
            if let Err(e) = self.dispatch(batch, sc) {
                self.failed = Some(e);
            }
        }
        self.failed.is_none()
    }

    fn dispatch<'s>(&mut self, batch: Vec<T>, sc: &'s Scope<'s, '_>) -> io::Result<()>
    where
        'a: 's,
    {
        self.batches += 1;
        if self.batches == 2 {
            self.helper = Some(spawn(sc, self.render));
        }
        match self.helper.as_mut() {
            Some(h) if h.out < AHEAD => {
                // Never blocks: the channel holds AHEAD batches.
                let buffer = self.buffers.pop().unwrap_or_default();
                h.jobs.send((batch, buffer)).map_err(|_| io::Error::other("the list's second writer stopped"))?;
                h.out += 1;
                self.pending.push_back(Piece::Helper);
            }
            _ => {
                let json = render_batch(self.render, &batch, self.buffers.pop().unwrap_or_default())?;
                self.spare.extend(batch);
                self.pending.push_back(Piece::Ready(json));
            }
        }
        self.drain(false)
    }

    /// Writes the pieces that are ready, in order; with `wait` (or too
    /// many on their way), waits for the second thread's.
    fn drain(&mut self, wait: bool) -> io::Result<()> {
        while let Some(piece) = self.pending.pop_front() {
            let json = match piece {
                Piece::Ready(json) => json,
                Piece::Helper => {
                    let h = self.helper.as_mut().ok_or_else(|| io::Error::other("no second writer"))?;
                    let gone = || io::Error::other("the list's second writer stopped");
                    let got = if wait || self.pending.len() >= PENDING {
                        h.done.recv().map_err(|_| gone())?
                    } else {
                        match h.done.try_recv() {
                            Ok(got) => got,
                            Err(mpsc::TryRecvError::Empty) => {
                                self.pending.push_front(Piece::Helper);
                                return Ok(());
                            }
                            Err(mpsc::TryRecvError::Disconnected) => return Err(gone()),
                        }
                    };
                    h.out -= 1;
                    let (json, batch) = got;
                    self.spare.extend(batch);
                    json?
                }
            };
            if std::mem::replace(&mut self.any, true) {
                self.w.write_all(b",")?;
            } else {
                (self.opening)(&mut *self.w)?;
            }
            self.w.write_all(&json)?;
            let mut json = json;
            json.clear();
            self.buffers.push(json);
        }
        Ok(())
    }

    fn finish<'s>(mut self, sc: &'s Scope<'s, '_>) -> io::Result<bool>
    where
        'a: 's,
    {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if !self.batch.is_empty() {
            let batch = std::mem::take(&mut self.batch);
            self.dispatch(batch, sc)?;
        }
        self.drain(true)?;
        Ok(self.any)
    }
}

fn render_batch<T>(render: &Render<'_, T>, batch: &[T], mut out: Vec<u8>) -> io::Result<Vec<u8>> {
    out.clear();
    for (n, e) in batch.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        render(&mut out, e)?;
    }
    Ok(out)
}

/// Starts the second thread; it stops when its jobs' sender is dropped or
/// its answers are no longer taken.
fn spawn<'s, T: Send + 's>(sc: &'s Scope<'s, '_>, render: &'s Render<'_, T>) -> Helper<T> {
    let (jobs, todo) = mpsc::sync_channel::<Job<T>>(AHEAD);
    // Room for every batch out: the second thread never waits to answer.
    let (answer, done) = mpsc::sync_channel::<Done<T>>(AHEAD + 1);
    sc.spawn(move || {
        for (batch, buffer) in todo {
            let json = render_batch(render, &batch, buffer);
            if answer.send((json, batch)).is_err() {
                return;
            }
        }
    });
    Helper { jobs, done, out: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries of `n` bytes each, from 0 to `count`, scanned one by one.
    fn entries(count: usize) -> impl FnOnce(&mut dyn FnMut(&mut String) -> bool) -> io::Result<()> {
        move |f| {
            for i in 0..count {
                // Entries of very different sizes, so the two threads finish out of step.
                let mut e = format!("{i}:{}", "x".repeat((i * 7919) % 3000));
                if !f(&mut e) {
                    break;
                }
            }
            Ok(())
        }
    }

    #[allow(clippy::ptr_arg)] // the entries are `String`s
    fn render(out: &mut Vec<u8>, e: &String) -> io::Result<()> {
        out.extend_from_slice(e.split(':').next().unwrap_or("").as_bytes());
        Ok(())
    }

    /// Every entry once, in the scan's order, the opening once before the
    /// first, whatever the list's length against the batch.
    #[test]
    fn entries_come_out_in_order() {
        for count in [0, 1, BATCH - 1, BATCH, BATCH + 1, 2 * BATCH, 3 * BATCH + 5, 1000] {
            let mut out = Vec::new();
            let mut opened = 0;
            let any = write_list(&mut out, entries(count), &render, &mut |w: &mut dyn Write| {
                opened += 1;
                w.write_all(b"[")
            })
            .unwrap();
            let want: Vec<String> = (0..count).map(|i| i.to_string()).collect();
            let want = if count == 0 { String::new() } else { format!("[{}", want.join(",")) };
            assert_eq!(String::from_utf8(out).unwrap(), want, "{count} entries");
            assert_eq!((any, opened), (count > 0, usize::from(count > 0)), "{count} entries");
        }
    }

    /// An entry that cannot be written stops the scan and is the error,
    /// whichever thread writes it; so does a writer that fails.
    #[test]
    fn a_failure_stops_the_scan() {
        for bad in [3, BATCH + 2, 5 * BATCH + 1, 999] {
            let scanned = std::cell::Cell::new(0);
            let scan = |f: &mut dyn FnMut(&mut String) -> bool| {
                for i in 0..100_000 {
                    scanned.set(i);
                    if !f(&mut i.to_string()) {
                        break;
                    }
                }
                Ok(())
            };
            let fail = |out: &mut Vec<u8>, e: &String| {
                if *e == bad.to_string() {
                    return Err(io::Error::other(format!("entry {bad} is damaged")));
                }
                out.extend_from_slice(e.as_bytes());
                Ok(())
            };
            let e = write_list(&mut Vec::new(), scan, &fail, &mut |_: &mut dyn Write| Ok(())).unwrap_err();
            assert_eq!(e.to_string(), format!("entry {bad} is damaged"));
            assert!(scanned.get() < bad + 10 * BATCH, "the scan went on to {} after {bad}", scanned.get());
        }
        struct Gone(usize);
        impl Write for Gone {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.0 += b.len();
                if self.0 > 500 {
                    return Err(io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"));
                }
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let e = write_list(&mut Gone(0), entries(100_000), &render, &mut |_: &mut dyn Write| Ok(())).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
    }
}

//! A string buffer lent by the current thread: the schema paths an edit is
//! looked up by are built several times an edit, in several phases, and
//! reuse one allocation instead of making one each time.

use std::cell::RefCell;
use std::ops::{Deref, DerefMut};

/// How many spare buffers a thread keeps: as many as are taken at once
/// (a phase's buffer, and the one a function it calls takes meanwhile).
const SPARES: usize = 4;
/// Room a new buffer starts with: most schema paths fit.
const ROOM: usize = 128;

thread_local! {
    static SPARE: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// An empty string holding one of the thread's spare buffers until it is
/// dropped, when the buffer goes back. Taken while all spares are out, it
/// starts with a new buffer (kept as a spare afterwards).
#[derive(Debug)]
pub struct Scratch(String);

impl Scratch {
    /// A spare buffer of the thread's, emptied.
    pub fn take() -> Scratch {
        let spare = SPARE.try_with(|spare| spare.borrow_mut().pop()).ok().flatten();
        let mut s = spare.unwrap_or_else(|| String::with_capacity(ROOM));
        s.clear();
        Scratch(s)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let s = std::mem::take(&mut self.0);
        // A thread being torn down has no spares to give back to.
        let _ = SPARE.try_with(|spare| {
            let mut spare = spare.borrow_mut();
            if spare.len() < SPARES {
                spare.push(s);
            }
        });
    }
}

impl Deref for Scratch {
    type Target = String;

    fn deref(&self) -> &String {
        &self.0
    }
}

impl DerefMut for Scratch {
    fn deref_mut(&mut self) -> &mut String {
        &mut self.0
    }
}

#[cfg(test)]
mod tests {
    use super::Scratch;

    /// The buffer comes back empty with its room; one taken while another
    /// is out is a separate, empty string; both are kept.
    #[test]
    fn buffers_are_lent_empty_and_given_back() {
        let mut a = Scratch::take();
        a.push_str(&"/m:top/list/leaf".repeat(20));
        let room = a.capacity();
        {
            let mut b = Scratch::take();
            assert!(b.is_empty());
            b.push('x');
            assert_eq!(a.len(), 320);
        }
        drop(a);
        let c = Scratch::take();
        assert!(c.is_empty());
        assert!(c.capacity() >= room);
        let d = Scratch::take();
        assert!(d.is_empty());
    }
}

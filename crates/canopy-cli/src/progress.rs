//! Progress of long work (import, export, copy, compact, check) on stderr:
//! a bar when the total is known, a spinner otherwise, drawn only when stderr
//! is a terminal and cleared when the work ends, so that scripts and pipes
//! see nothing of it.

use std::io::{Read, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// What a progress counts.
#[derive(Clone, Copy)]
pub enum Unit {
    Bytes,
    Records,
}

/// A progress bar on stderr (hidden when stderr is not a terminal).
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// `what` is shown before the bar (`importing doc.json`); `total` makes it
    /// a bar with a rate and the time left, `None` a spinner with a count.
    pub fn new(what: &str, total: Option<u64>, unit: Unit) -> Progress {
        let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
        let count = match unit {
            Unit::Bytes => ("{bytes}", "{total_bytes}", "{binary_bytes_per_sec}"),
            Unit::Records => ("{human_pos}", "{human_len}", "{per_sec}"),
        };
        let template = match total {
            Some(_) => format!("{{msg}} [{{wide_bar}}] {} / {} {} ({{eta}} left)", count.0, count.1, count.2),
            None => format!("{{spinner}} {{msg}} {} {} {{elapsed}}", count.0, count.2),
        };
        let style = ProgressStyle::with_template(&template).unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style.progress_chars("=> "));
        bar.set_message(what.to_string());
        Progress::ticking(bar)
    }

    /// `bar`, redrawn ten times a second when it is drawn at all (no ticker
    /// thread when stderr is not a terminal).
    fn ticking(bar: ProgressBar) -> Progress {
        if !bar.is_hidden() {
            bar.enable_steady_tick(Duration::from_millis(100));
        }
        Progress { bar }
    }

    /// A spinner for work that reports no count (`compact`).
    pub fn spinner(what: &str) -> Progress {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{spinner} {msg} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.set_message(what.to_string());
        Progress::ticking(bar)
    }

    pub fn set(&self, done: u64) {
        if self.bar.length().is_some_and(|l| done > l) {
            // The total was an estimate.
            self.bar.set_length(done);
        }
        self.bar.set_position(done);
    }

    /// Wraps a reader: every byte read advances the progress.
    pub fn reader<R: Read>(&self, inner: R) -> impl Read {
        self.bar.wrap_read(inner)
    }

    /// Wraps a writer: every byte written advances the progress.
    pub fn writer<W: Write>(&self, inner: W) -> impl Write {
        self.bar.wrap_write(inner)
    }
}

impl Drop for Progress {
    /// The bar disappears: what the command prints afterwards stands alone.
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

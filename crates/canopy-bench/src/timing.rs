//! Timing: a warm-up run, then `repeat` measured runs on the monotonic clock.

use std::time::{Duration, Instant};

/// The measured runs of one row.
#[derive(Clone, Debug)]
pub struct Sample {
    pub runs: Vec<Duration>,
}

impl Sample {
    pub fn mean(&self) -> Duration {
        self.runs.iter().sum::<Duration>() / self.runs.len().max(1) as u32
    }

    pub fn median(&self) -> Duration {
        let mut v = self.runs.clone();
        v.sort();
        v[v.len() / 2]
    }

    pub fn min(&self) -> Duration {
        self.runs.iter().copied().min().unwrap_or_default()
    }

    pub fn max(&self) -> Duration {
        self.runs.iter().copied().max().unwrap_or_default()
    }
}

/// Runs `f` once to warm up, then `repeat` times, timing each run. `f` gets
/// the run number (0 = warm-up) so runs can vary their input.
pub fn measure(repeat: usize, mut f: impl FnMut(usize)) -> Sample {
    f(0);
    let runs = (1..=repeat)
        .map(|i| {
            let t = Instant::now();
            f(i);
            t.elapsed()
        })
        .collect();
    Sample { runs }
}

/// Like [`measure`], but `f` sets up untimed state and returns the timed part.
pub fn measure_with<S>(repeat: usize, mut setup: impl FnMut(usize) -> S, mut timed: impl FnMut(S)) -> Sample {
    timed(setup(0));
    let runs = (1..=repeat)
        .map(|i| {
            let s = setup(i);
            let t = Instant::now();
            timed(s);
            t.elapsed()
        })
        .collect();
    Sample { runs }
}

/// A duration in the unit that reads best.
pub fn fmt(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns < 1_000.0 {
        format!("{ns:.0} ns")
    } else if ns < 1_000_000.0 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1_000_000_000.0 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// Heap bytes in use by this process, as the C allocator counts them
/// (`mallinfo2`: allocated blocks including their headers; freed memory the
/// allocator keeps does not count, unlike resident pages).
pub fn heap_bytes() -> usize {
    #[allow(unsafe_code)]
    // SAFETY: mallinfo2 only reads the allocator's statistics.
    let info = unsafe { libc::mallinfo2() };
    info.uordblks + info.hblkhd
}

impl Sample {
    /// Each run divided by `ops`: the time of one operation.
    pub fn per_op(self, ops: usize) -> Sample {
        Sample { runs: self.runs.into_iter().map(|d| d / ops.max(1) as u32).collect() }
    }

    /// The `p`-th percentile (0–100) of the runs, nearest rank.
    pub fn percentile(&self, p: f64) -> Duration {
        let mut v = self.runs.clone();
        v.sort();
        if v.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
        v[rank.clamp(1, v.len()) - 1]
    }
}

/// Returns freed heap memory to the system and resets the process's peak
/// resident set size to its current size (Linux: `/proc/self/clear_refs`), so
/// that the next [`peak_rss`] shows what the following work used; returns
/// whether it could.
pub fn reset_peak_rss() -> bool {
    #[allow(unsafe_code)]
    // SAFETY: malloc_trim only releases free memory of the C allocator.
    unsafe {
        libc::malloc_trim(0)
    };
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The process's peak resident set size in bytes since start or the last
/// [`reset_peak_rss`] (Linux `VmHWM`).
pub fn peak_rss() -> Option<u64> {
    status_kb("VmHWM:").map(|kb| kb * 1024)
}

/// The process's resident set size in bytes (Linux `VmRSS`).
pub fn rss() -> Option<u64> {
    status_kb("VmRSS:").map(|kb| kb * 1024)
}

/// The resident pages of files the process maps (Linux `RssFile`).
pub fn rss_file() -> Option<u64> {
    status_kb("RssFile:").map(|kb| kb * 1024)
}

fn status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].trim().trim_end_matches("kB").trim().parse().ok()
}

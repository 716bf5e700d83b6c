//! Change streams: Server-Sent Events of every commit that touches a subtree
//! of a datastore, in the shape of RFC 8641's on-change `push-change-update`
//! with YANG Patch content. Each event's id is its commit's revision; a
//! client that reconnects with `Last-Event-ID` gets every commit after it
//! while the server still keeps them, else a `resync` event first.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use canopy::{Change, Datastore, Path};
use canopy_core::json::JsonWriter;
use futures_util::stream;
use percent_encoding::percent_decode_str;

use crate::error::RestError;
use crate::output::write_patch;
use crate::track::Event;
use crate::App;

/// `GET /restconf/streams/{datastore}?path=/mod:subtree`.
pub async fn stream(
    State(app): State<Arc<App>>,
    UrlPath(ds): UrlPath<String>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    match open(&app, &ds, uri.query(), &headers) {
        Ok((ds, filter, last)) => sse(app, ds, filter, last).into_response(),
        Err(e) => e.into_response(),
    }
}

fn open(app: &App, ds: &str, query: Option<&str>, headers: &HeaderMap) -> Result<(Datastore, Path, u64), RestError> {
    let ds = crate::uri::datastore_named(ds).ok_or_else(|| {
        RestError::new(
            StatusCode::NOT_FOUND,
            "protocol",
            "invalid-value",
            format!("no datastore `{ds}` (streams: running, candidate, startup, operational)"),
        )
    })?;
    let mut filter = Path::root();
    for pair in query.unwrap_or("").split('&').filter(|s| !s.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let v = percent_decode_str(v).decode_utf8_lossy();
        match k {
            "path" => filter = v.parse().map_err(|e: canopy_core::Error| RestError::invalid(e.to_string()))?,
            other => {
                return Err(RestError::invalid(format!("unknown query parameter `{other}` (streams take `path`)")))
            }
        }
    }
    let last = match headers.get("last-event-id") {
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .ok_or_else(|| RestError::invalid("Last-Event-ID is not a revision (a number)"))?,
        None => app.tracker.seen(),
    };
    Ok((ds, filter, last))
}

struct Cursor {
    app: Arc<App>,
    ds: Datastore,
    filter: Path,
    last: u64,
    pending: VecDeque<SseEvent>,
    newest: tokio::sync::watch::Receiver<u64>,
    shutdown: tokio::sync::watch::Receiver<bool>,
}

fn sse(
    app: Arc<App>,
    ds: Datastore,
    filter: Path,
    last: u64,
) -> Sse<impl futures_util::Stream<Item = Result<SseEvent, Infallible>>> {
    let cursor = Cursor {
        newest: app.tracker.newest.subscribe(),
        shutdown: app.shutdown.subscribe(),
        app,
        ds,
        filter,
        last,
        pending: VecDeque::new(),
    };
    let events = stream::unfold(cursor, |mut c| async move {
        loop {
            if let Some(e) = c.pending.pop_front() {
                return Some((Ok(e), c));
            }
            if *c.shutdown.borrow() {
                return None;
            }
            match c.app.tracker.since(c.last) {
                None => {
                    let now = c.app.tracker.seen();
                    let data = serde_json::json!({
                        "revision": now,
                        "reason": format!("the commits after revision {} are no longer kept: read the subtree again", c.last)
                    });
                    c.pending.push_back(SseEvent::default().event("resync").id(now.to_string()).data(data.to_string()));
                    c.last = now;
                    continue;
                }
                Some(events) => {
                    for ev in events {
                        c.last = c.last.max(ev.revision);
                        if let Some(e) = render(&ev, c.ds, &c.filter) {
                            c.pending.push_back(e);
                        }
                    }
                    if !c.pending.is_empty() {
                        continue;
                    }
                }
            }
            c.newest.mark_unchanged();
            if c.app.tracker.seen() > c.last {
                continue;
            }
            tokio::select! {
                r = c.newest.changed() => if r.is_err() { return None },
                _ = c.shutdown.changed() => return None,
            }
        }
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// Whether a change at `changed` lies in the subtree at `filter` or holds
/// it: one path leads to the other, where a step without a selector (a
/// list named without keys) stands for any of its entries.
fn overlaps(filter: &Path, changed: &Path) -> bool {
    filter.segments.iter().zip(&changed.segments).all(|(f, c)| {
        f.name == c.name
            && (f.selector == c.selector
                || f.selector == canopy_core::path::Selector::None
                || c.selector == canopy_core::path::Selector::None)
    })
}

/// The event of a commit, if it touches the filter's subtree of `ds`.
fn render(ev: &Event, ds: Datastore, filter: &Path) -> Option<SseEvent> {
    if ev.datastore != ds {
        return None;
    }
    let changes: Vec<&Change> = ev.changes.iter().filter(|c| overlaps(filter, c.path())).collect();
    if changes.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    let mut w = JsonWriter::new(&mut out, false);
    let text = |s: String| canopy::Value::String(s.into());
    let none = Default::default();
    let written = (|| -> std::io::Result<()> {
        w.begin_container("ietf-restconf:notification")?;
        w.leaf("eventTime", &text(rfc3339(ev.time)), &none)?;
        w.begin_container("ietf-yang-push:push-change-update")?;
        w.begin_container("datastore-changes")?;
        write_patch(&mut w, &format!("{}-{}", ds.name(), ev.revision), &changes)?;
        w.end()?;
        w.end()?;
        w.end()
    })();
    written.ok()?;
    w.finish().ok()?;
    let data = String::from_utf8(out).ok()?;
    Some(SseEvent::default().id(ev.revision.to_string()).data(data))
}

/// A time as RFC 3339 in UTC (`2026-11-24T10:20:30.123456Z`).
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_micros()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_print_as_rfc3339() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000000Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(1_795_865_430)), "2026-11-28T11:30:30.000000Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29T00:00:00.000000Z");
    }

    #[test]
    fn a_list_without_keys_in_the_filter_covers_its_entries() {
        let p = |t: &str| -> Path { t.parse().unwrap() };
        let f = p("/m:c/pl");
        assert!(overlaps(&f, &p("/m:c/pl[n='a']/s[i='2']")));
        assert!(overlaps(&f, &p("/m:c")));
        assert!(!overlaps(&f, &p("/m:c/other")));
        assert!(!overlaps(&p("/m:c/pl[n='a']"), &p("/m:c/pl[n='b']/x")));
        assert!(overlaps(&Path::root(), &p("/m:c/pl[n='b']/x")));
    }
}

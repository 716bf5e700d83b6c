"""canopy's change streams: `GET /restconf/streams/{datastore}` as Server-Sent
Events, one event per commit touching the (optional) `path`, with the commit's
revision as the event id and an RFC 8641 push-change-update holding an RFC 8072
yang-patch as data; resumable with Last-Event-ID, with an `event: resync` when
the revision asked for is no longer kept.

Every read is bounded: events arrive through conftest's EventStream, read with
a timeout."""

from __future__ import annotations

import os
import re
import signal
import time

import pytest

from conftest import DS, JB, JUKEBOX, JUKEBOX_B32, STOP_TIMEOUT, YANG_PATCH_JSON, assert_error, qs

FOO = JB + "/library/artist=Foo%20Fighters"
ALBUM = FOO + "/album=Wasting%20Light"
YEAR = ALBUM + "/year"
GAP = JB + "/player/gap"
OPERATIONS = {"create", "delete", "replace", "merge", "move", "remove", "insert"}
DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
QUIET = 1.5  # seconds in which no event must come


def stream_path(datastore: str = "running", path: str | None = None) -> str:
    url = f"/restconf/streams/{datastore}"
    return url + qs(path=path) if path else url


@pytest.fixture
def srv(servers):
    return servers(config=JUKEBOX_B32)


def update_of(event) -> dict:
    """The yang-patch inside an event's push-change-update; asserts the shape."""
    body = event.json()
    assert list(body) == ["ietf-restconf:notification"], body
    note = body["ietf-restconf:notification"]
    assert DATE_TIME.fullmatch(note["eventTime"]), note
    update = note["ietf-yang-push:push-change-update"]
    patch = update["datastore-changes"]["ietf-yang-patch:yang-patch"]
    assert isinstance(patch["patch-id"], str) and patch["patch-id"], patch
    assert patch["edit"], patch
    ids = [e["edit-id"] for e in patch["edit"]]
    assert len(set(ids)) == len(ids), patch
    for e in patch["edit"]:
        assert e["operation"] in OPERATIONS, e
        assert e["target"].startswith("/"), e
        if e["operation"] in ("create", "replace", "merge", "insert"):
            assert isinstance(e.get("value"), dict), e
    return patch


def targets(event) -> list[str]:
    return [e["target"] for e in update_of(event)["edit"]]


def assert_quiet(stream, seconds: float = QUIET) -> None:
    ev = stream.next(timeout=seconds)
    assert ev is None, f"unexpected event {ev}"


def write_year(srv, year: int) -> int:
    r = srv.put(YEAR, {"example-jukebox:year": year})
    assert r.status_code == 204, r.text
    return srv.revision(r)


# --- the stream itself --------------------------------------------------------------------


def test_stream_is_event_stream(srv):
    s = srv.stream(stream_path())
    assert s.status_code == 200
    assert s.resp.headers["Content-Type"].startswith("text/event-stream")


def test_event_per_commit(srv):
    s = srv.stream(stream_path(path="/example-jukebox:jukebox"))
    assert s.status_code == 200
    rev = write_year(srv, 2012)
    (ev,) = s.take(1)
    assert ev.event == "message" and ev.id == str(rev), ev
    patch = update_of(ev)
    year = [e for e in patch["edit"] if e["target"].endswith("/year")]
    assert len(year) == 1, patch
    # A RESTCONF-style target (RFC 8040 §3.5.3 api-path), not an XPath.
    assert year[0]["target"] == (
        "/example-jukebox:jukebox/library/artist=Foo%20Fighters/album=Wasting%20Light/year"), year
    assert year[0]["operation"] in ("replace", "merge"), year
    assert year[0]["value"] == {"example-jukebox:year": 2012}


def test_events_come_in_commit_order(srv):
    s = srv.stream(stream_path())
    revs = [write_year(srv, 2000 + i) for i in range(5)]
    assert revs == sorted(revs) and len(set(revs)) == 5
    events = s.take(5)
    assert [int(e.id) for e in events] == revs
    values = [[e["value"] for e in update_of(ev)["edit"] if e["target"].endswith("/year")] for ev in events]
    assert values == [[{"example-jukebox:year": 2000 + i}] for i in range(5)]


def test_create_and_delete_events(srv):
    s = srv.stream(stream_path(path="/example-jukebox:jukebox/library"))
    r = srv.post(JB + "/library", {"example-jukebox:artist": [{"name": "The Clash"}]})
    assert r.status_code == 201
    created = s.take(1)[0]
    assert created.id == str(srv.revision(r))
    edits = update_of(created)["edit"]
    clash = [e for e in edits if "artist=The%20Clash" in e["target"]]
    assert clash and clash[0]["operation"] in ("create", "merge", "replace"), edits
    assert "The Clash" in str(clash[0]["value"])

    r = srv.delete(JB + "/library/artist=The%20Clash")
    assert r.status_code == 204
    deleted = s.take(1)[0]
    assert deleted.id == str(srv.revision(r))
    edits = update_of(deleted)["edit"]
    assert [e["operation"] for e in edits if e["target"] ==
            "/example-jukebox:jukebox/library/artist=The%20Clash"] in (["delete"], ["remove"]), edits


def test_move_in_user_ordered_list(srv):
    s = srv.stream(stream_path(path="/example-jukebox:jukebox/playlist"))
    r = srv.patch(JB + "/playlist=Foo-One", {"ietf-yang-patch:yang-patch": {"patch-id": "m", "edit": [
        {"edit-id": "e1", "operation": "move", "target": "/song=2", "where": "first"}]}}, ctype=YANG_PATCH_JSON)
    assert r.status_code == 200, r.text
    ev = s.take(1)[0]
    assert ev.id == str(srv.revision(r))
    edits = [e for e in update_of(ev)["edit"] if e["target"].endswith("/song=2")]
    assert edits and edits[0]["operation"] in ("move", "insert", "replace", "create"), edits


def test_one_event_for_a_multi_edit_commit(srv):
    s = srv.stream(stream_path())
    r = srv.patch(ALBUM, {"ietf-yang-patch:yang-patch": {"patch-id": "two", "edit": [
        {"edit-id": "e1", "operation": "merge", "target": "/year", "value": {"example-jukebox:year": 2012}},
        {"edit-id": "e2", "operation": "merge", "target": "/genre",
         "value": {"example-jukebox:genre": "example-jukebox:rock"}}]}}, ctype=YANG_PATCH_JSON)
    assert r.status_code == 200, r.text
    (ev,) = s.take(1)
    assert ev.id == str(srv.revision(r))
    t = targets(ev)
    assert any(x.endswith("/year") for x in t) and any(x.endswith("/genre") for x in t), t
    assert_quiet(s)


def test_path_filter(srv):
    s = srv.stream(stream_path(path="/example-jukebox:jukebox/player"))
    write_year(srv, 2012)  # outside the path
    r = srv.put(GAP, {"example-jukebox:gap": "1.0"})
    assert r.status_code == 204
    (ev,) = s.take(1)
    assert ev.id == str(srv.revision(r)), "an event for a commit outside the path came first"
    assert all(t.startswith("/example-jukebox:jukebox/player") for t in targets(ev)), targets(ev)
    write_year(srv, 2013)
    assert_quiet(s)


def test_path_filter_on_a_list_entry(srv):
    s = srv.stream(stream_path(path="/example-jukebox:jukebox/library/artist[name='Foo Fighters']"))
    r = srv.post(JB + "/library", {"example-jukebox:artist": [{"name": "Other"}]})
    assert r.status_code == 201
    rev = write_year(srv, 2012)
    (ev,) = s.take(1)
    assert ev.id == str(rev)


def test_failed_write_sends_nothing(srv):
    s = srv.stream(stream_path())
    assert srv.put(YEAR, {"example-jukebox:year": 1066}).status_code == 400
    assert srv.put(YEAR, {"example-jukebox:year": 2012}, headers={"If-Match": '"stale"'}).status_code == 412
    assert_quiet(s)
    rev = write_year(srv, 2012)
    assert s.take(1)[0].id == str(rev)


def test_other_datastores_do_not_show_on_running(srv):
    s = srv.stream(stream_path("running"))
    c = srv.stream(stream_path("candidate"))
    r = srv.put(DS + "candidate/example-jukebox:jukebox/player/gap", {"example-jukebox:gap": "1.9"})
    assert r.status_code == 204
    assert c.take(1)[0].id == str(srv.revision(r))
    assert_quiet(s)


def test_every_subscriber_gets_every_event(srv):
    streams = [srv.stream(stream_path()) for _ in range(4)]
    revs = [write_year(srv, 2001), write_year(srv, 2002)]
    for s in streams:
        assert [int(e.id) for e in s.take(2)] == revs


def test_unknown_datastore_stream_is_404(srv):
    s = srv.stream(stream_path("no-such-datastore"))
    assert s.status_code in (400, 404)


def test_bad_path_is_400(srv):
    s = srv.stream(stream_path(path="/example-jukebox:jukebox/library/artist[name='x'"))
    assert s.status_code == 400
    assert_error(s.resp, 400)


# --- resuming ------------------------------------------------------------------------------------


def test_resume_with_last_event_id(srv):
    s = srv.stream(stream_path(path="/example-jukebox:jukebox"))
    first = [write_year(srv, 2001), write_year(srv, 2002)]
    seen = s.take(2)
    assert [int(e.id) for e in seen] == first
    s.close()
    missed = [write_year(srv, 2003), write_year(srv, 2004), write_year(srv, 2005)]
    s2 = srv.stream(stream_path(path="/example-jukebox:jukebox"), headers={"Last-Event-ID": seen[-1].id})
    assert s2.status_code == 200
    replay = s2.take(3)
    assert [int(e.id) for e in replay] == missed
    assert all(e.event == "message" for e in replay)
    years = [[e["value"] for e in update_of(ev)["edit"] if e["target"].endswith("/year")] for ev in replay]
    assert years == [[{"example-jukebox:year": y}] for y in (2003, 2004, 2005)]
    live = write_year(srv, 2006)
    assert s2.take(1)[0].id == str(live)


def test_resume_replays_only_matching_commits(srv):
    base = write_year(srv, 2001)
    player = []
    for i in range(3):
        write_year(srv, 2002 + i)
        r = srv.put(GAP, {"example-jukebox:gap": f"1.{i}"})
        assert r.status_code == 204
        player.append(srv.revision(r))
    s = srv.stream(stream_path(path="/example-jukebox:jukebox/player"), headers={"Last-Event-ID": str(base)})
    assert [int(e.id) for e in s.take(3)] == player
    assert_quiet(s)


def test_resume_from_the_current_revision_replays_nothing(srv):
    rev = write_year(srv, 2001)
    s = srv.stream(stream_path(), headers={"Last-Event-ID": str(rev)})
    assert s.status_code == 200
    assert_quiet(s)
    nxt = write_year(srv, 2002)
    assert s.take(1)[0].id == str(nxt)


def test_resync_when_the_revision_is_not_kept(servers):
    # Commits made before the server started are taken to be out of what it
    # keeps (its history starts with its own commits); asking to resume from
    # revision 1 must then begin with a resync event, and the stream goes on.
    before = [["set", "/example-jukebox:jukebox/player/gap", f'"0.{i}"'] for i in range(1, 6)]
    srv = servers(config=JUKEBOX_B32, before=before)
    s = srv.stream(stream_path(), headers={"Last-Event-ID": "1"})
    assert s.status_code == 200
    first = s.take(1)[0]
    assert first.event == "resync", first
    rev = write_year(srv, 2012)
    ev = s.take(1)[0]
    assert ev.event == "message" and ev.id == str(rev)


def test_resume_never_skips_silently(servers):
    # Whatever the server keeps, a resumed stream either replays every commit
    # after the given revision or says resync first.
    before = [["set", "/example-jukebox:jukebox/player/gap", f'"0.{i}"'] for i in range(1, 4)]
    srv = servers(config=JUKEBOX_B32, before=before)
    mine = [write_year(srv, 2000 + i) for i in range(3)]
    s = srv.stream(stream_path(), headers={"Last-Event-ID": str(mine[0])})
    got = s.take(2)
    assert got[0].event == "resync" or [int(e.id) for e in got] == mine[1:], got


# --- shutdown ------------------------------------------------------------------------------------------


def test_sigterm_with_open_streams(srv):
    streams = [srv.stream(stream_path()) for _ in range(3)]
    write_year(srv, 2012)
    for s in streams:
        s.take(1)
    os.kill(srv.proc.pid, signal.SIGTERM)
    code = srv.proc.wait(timeout=STOP_TIMEOUT)  # raises when it does not stop
    assert code == 0, srv.stderr_tail()
    for s in streams:
        assert s.next(timeout=5) is None  # the stream ended

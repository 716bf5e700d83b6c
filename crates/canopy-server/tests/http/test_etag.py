"""Entity tags and timestamps (RFC 8040 §3.4.1, §3.5; RFC 7232) as canopy
defines them (issue 12): every data resource has an ETag and a Last-Modified
that change when the resource or anything below it changes, and only then; a
stale If-Match / If-Unmodified-Since / If-None-Match on a write is refused with
412 and stores nothing; write responses carry Canopy-Revision and the target's
validators."""

from __future__ import annotations

import re
import threading
import time
from email.utils import format_datetime, parsedate_to_datetime
from datetime import datetime, timedelta, timezone

import pytest
import requests

from conftest import DATA, DS, JB, JUKEBOX_B32, assert_error, norm

FOO = JB + "/library/artist=Foo%20Fighters"
ALBUM = FOO + "/album=Wasting%20Light"
YEAR = ALBUM + "/year"
NICK = JB + "/library/artist=Nick%20Cave"
ETAG = re.compile(r'(W/)?"[\x21\x23-\x7e\x80-\xff]*"')

CONFIG = {
    "example-jukebox:jukebox": {
        **JUKEBOX_B32["example-jukebox:jukebox"],
        "library": {
            "artist": JUKEBOX_B32["example-jukebox:jukebox"]["library"]["artist"]
            + [{"name": "Nick Cave", "album": [{"name": "Tender Prey", "year": 1988}]}]
        },
    }
}

# Resources from the leaf up to the datastore, and resources beside them.
CHAIN = [YEAR, ALBUM, FOO, JB + "/library", JB, DATA]
SIDE = [NICK, NICK + "/album=Tender%20Prey", JB + "/playlist=Foo-One", JB + "/player"]


@pytest.fixture
def srv(servers):
    return servers(config=CONFIG)


def validators(srv, path: str) -> tuple[str, str]:
    r = srv.head(path)
    assert r.status_code == 200, f"HEAD {path}: {r.status_code}"
    etag, modified = r.headers.get("ETag"), r.headers.get("Last-Modified")
    assert etag and ETAG.fullmatch(etag), f"{path}: ETag {etag!r}"
    assert modified, f"{path}: no Last-Modified"
    parsedate_to_datetime(modified)  # an HTTP-date
    return etag, modified


def etags(srv, paths) -> dict[str, str]:
    return {p: validators(srv, p)[0] for p in paths}


def modified(srv, paths) -> dict[str, str]:
    return {p: validators(srv, p)[1] for p in paths}


def http_date(dt: datetime) -> str:
    return format_datetime(dt.astimezone(timezone.utc), usegmt=True)


def assert_412(resp) -> None:
    """412 Precondition Failed; a body, if any, is an RFC 8040 error whose tag
    goes with 412 in §7's table (operation-failed)."""
    assert resp.status_code == 412, f"{resp.status_code}: {resp.text[:300]}"
    if resp.content:
        assert_error(resp, 412, "operation-failed")


# --- presence and stability ------------------------------------------------------------


@pytest.mark.parametrize("path", CHAIN + SIDE + [DS + "running", DS + "running/example-jukebox:jukebox",
                                                 DS + "operational/example-jukebox:jukebox"])
def test_get_and_head_carry_validators(srv, path):
    g = srv.get(path)
    assert g.status_code == 200, g.text
    assert ETAG.fullmatch(g.headers.get("ETag", "")), g.headers
    parsedate_to_datetime(g.headers["Last-Modified"])
    assert validators(srv, path) == (g.headers["ETag"], g.headers["Last-Modified"])


def test_validators_are_stable_without_writes(srv):
    first = etags(srv, CHAIN + SIDE)
    srv.get(DATA)
    srv.get(FOO + "?depth=1")
    assert etags(srv, CHAIN + SIDE) == first


def test_last_modified_not_in_the_future(srv):
    _, lm = validators(srv, YEAR)
    assert parsedate_to_datetime(lm) <= datetime.now(timezone.utc) + timedelta(seconds=2)


# --- what changes them and what does not -------------------------------------------------


def test_write_changes_the_resource_and_its_ancestors_only(srv):
    before = etags(srv, CHAIN + SIDE)
    assert srv.put(YEAR, {"example-jukebox:year": 2012}).status_code == 204
    after = etags(srv, CHAIN + SIDE)
    for p in CHAIN:
        assert after[p] != before[p], f"{p}: ETag did not change"
    for p in SIDE:
        assert after[p] == before[p], f"{p}: ETag changed by a write beside it"


def test_sibling_write_keeps_last_modified(srv):
    before = modified(srv, [FOO, ALBUM, YEAR])
    time.sleep(1.1)  # HTTP-date resolution
    assert srv.put(NICK + "/album=Tender%20Prey/year", {"example-jukebox:year": 1989}).status_code == 204
    assert srv.put(JB + "/player/gap", {"example-jukebox:gap": "1.0"}).status_code == 204
    assert modified(srv, [FOO, ALBUM, YEAR]) == before
    assert parsedate_to_datetime(validators(srv, NICK)[1]) > parsedate_to_datetime(before[FOO])


def test_write_below_moves_last_modified_of_ancestors(srv):
    before = modified(srv, CHAIN)
    time.sleep(1.1)
    assert srv.put(YEAR, {"example-jukebox:year": 2013}).status_code == 204
    after = modified(srv, CHAIN)
    for p in CHAIN:
        assert parsedate_to_datetime(after[p]) > parsedate_to_datetime(before[p]), p


def test_delete_child_changes_parent(srv):
    before = etags(srv, [FOO, JB + "/library", NICK])
    assert srv.delete(ALBUM).status_code == 204
    after = etags(srv, [FOO, JB + "/library", NICK])
    assert after[FOO] != before[FOO] and after[JB + "/library"] != before[JB + "/library"]
    assert after[NICK] == before[NICK]


def test_create_child_changes_parent(srv):
    before = etags(srv, [FOO, NICK])
    r = srv.post(FOO, {"example-jukebox:album": [{"name": "One by One", "year": 2002}]})
    assert r.status_code == 201, r.text
    after = etags(srv, [FOO, NICK])
    assert after[FOO] != before[FOO] and after[NICK] == before[NICK]


def test_other_datastore_write_keeps_running_validators(srv):
    before = etags(srv, [DS + "running/example-jukebox:jukebox/player", JB + "/player"])
    assert srv.put(DS + "candidate/example-jukebox:jukebox/player/gap", {"example-jukebox:gap": "1.9"}).status_code == 204
    after = etags(srv, [DS + "running/example-jukebox:jukebox/player", JB + "/player"])
    assert after == before


def test_resource_rewritten_in_between_has_new_etag(srv):
    # Changed and changed back: the ETag is the last change's, not a content hash
    # of an old state (a stale If-Match must not match again).
    e0 = validators(srv, YEAR)[0]
    assert srv.put(YEAR, {"example-jukebox:year": 2012}).status_code == 204
    assert srv.put(YEAR, {"example-jukebox:year": 2011}).status_code == 204
    e2 = validators(srv, YEAR)[0]
    assert e2 != e0
    assert_412(srv.put(YEAR, {"example-jukebox:year": 1999}, headers={"If-Match": e0}))
    assert srv.get_json(YEAR) == {"example-jukebox:year": 2011}


# --- conditional writes (RFC 7232 §3) --------------------------------------------------------


def test_if_match_current_succeeds(srv):
    etag, _ = validators(srv, ALBUM)
    r = srv.put(YEAR, {"example-jukebox:year": 2012}, headers={"If-Match": validators(srv, YEAR)[0]})
    assert r.status_code == 204, r.text
    r = srv.patch(ALBUM, {"example-jukebox:album": [{"name": "Wasting Light", "year": 2014}]},
                  headers={"If-Match": validators(srv, ALBUM)[0]})
    assert r.status_code == 204, r.text
    assert srv.get_json(YEAR) == {"example-jukebox:year": 2014}
    assert validators(srv, ALBUM)[0] != etag


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE", "POST"])
def test_if_match_stale_is_412_and_stores_nothing(srv, method):
    stale, _ = validators(srv, ALBUM)
    assert srv.put(YEAR, {"example-jukebox:year": 2012}).status_code == 204  # another client
    current = validators(srv, ALBUM)[0]
    body = {
        "PUT": {"example-jukebox:album": [{"name": "Wasting Light", "year": 1999}]},
        "PATCH": {"example-jukebox:album": [{"name": "Wasting Light", "year": 1999}]},
        "DELETE": None,
        "POST": {"example-jukebox:song": [{"name": "Walk", "location": "/w.mp3"}]},
    }[method]
    assert_412(srv.request(method, ALBUM, body, headers={"If-Match": stale}))
    assert srv.get_json(YEAR) == {"example-jukebox:year": 2012}
    assert not srv.exists(ALBUM + "/song=Walk")
    assert validators(srv, ALBUM)[0] == current


def test_if_match_list_with_current_succeeds(srv):
    current = validators(srv, YEAR)[0]
    r = srv.put(YEAR, {"example-jukebox:year": 2012}, headers={"If-Match": f'"nope", {current}'})
    assert r.status_code == 204, r.text


def test_if_match_weak_never_matches(srv):
    # RFC 7232 §3.1: If-Match uses the strong comparison.
    current = validators(srv, YEAR)[0]
    weak = current if current.startswith("W/") else "W/" + current
    assert_412(srv.put(YEAR, {"example-jukebox:year": 2012}, headers={"If-Match": weak}))
    assert srv.get_json(YEAR) == {"example-jukebox:year": 2011}


def test_if_match_star(srv):
    r = srv.put(YEAR, {"example-jukebox:year": 2012}, headers={"If-Match": "*"})
    assert r.status_code == 204, r.text
    # No current representation: "*" is false, nothing is created.
    r = srv.put(ALBUM + "/admin/label", {"example-jukebox:label": "RCA"}, headers={"If-Match": "*"})
    assert_412(r)
    assert not srv.exists(ALBUM + "/admin/label")


def test_if_none_match_star_is_create_only(srv):
    assert_412(srv.put(YEAR, {"example-jukebox:year": 2012}, headers={"If-None-Match": "*"}))
    assert srv.get_json(YEAR) == {"example-jukebox:year": 2011}
    r = srv.put(ALBUM + "/admin/label", {"example-jukebox:label": "RCA"}, headers={"If-None-Match": "*"})
    assert r.status_code == 201, r.text


def test_if_none_match_current_on_write_is_412(srv):
    current = validators(srv, YEAR)[0]
    assert_412(srv.put(YEAR, {"example-jukebox:year": 2012}, headers={"If-None-Match": current}))
    assert srv.get_json(YEAR) == {"example-jukebox:year": 2011}


def test_if_none_match_on_get(srv):
    # RFC 7232 §3.2: a GET whose If-None-Match matches SHOULD get 304.
    current = validators(srv, ALBUM)[0]
    r = srv.get(ALBUM, headers={"If-None-Match": current})
    assert r.status_code == 304 and r.content == b"", r.status_code
    assert r.headers.get("ETag") == current
    r = srv.get(ALBUM, headers={"If-None-Match": '"something-else"'})
    assert r.status_code == 200


def test_if_unmodified_since(srv):
    _, lm = validators(srv, ALBUM)
    # Not modified since: the write goes through.
    r = srv.put(YEAR, {"example-jukebox:year": 2012}, headers={"If-Unmodified-Since": validators(srv, YEAR)[1]})
    assert r.status_code == 204, r.text
    time.sleep(1.1)
    assert srv.put(YEAR, {"example-jukebox:year": 2013}).status_code == 204  # another client
    # The album changed after `lm`: refused.
    r = srv.patch(ALBUM, {"example-jukebox:album": [{"name": "Wasting Light", "year": 1999}]},
                  headers={"If-Unmodified-Since": lm})
    assert_412(r)
    assert srv.get_json(YEAR) == {"example-jukebox:year": 2013}
    # A date in the future is no obstacle.
    future = http_date(datetime.now(timezone.utc) + timedelta(days=1))
    r = srv.put(YEAR, {"example-jukebox:year": 2014}, headers={"If-Unmodified-Since": future})
    assert r.status_code == 204, r.text


def test_if_unmodified_since_ignores_sibling_changes(srv):
    _, lm = validators(srv, ALBUM)
    time.sleep(1.1)
    assert srv.put(NICK + "/album=Tender%20Prey/year", {"example-jukebox:year": 1990}).status_code == 204
    r = srv.put(YEAR, {"example-jukebox:year": 2012}, headers={"If-Unmodified-Since": lm})
    assert r.status_code == 204, r.text


def test_if_match_wins_over_if_unmodified_since(srv):
    # RFC 7232 §3.4: with If-Match present, If-Unmodified-Since is ignored.
    current = validators(srv, YEAR)[0]
    past = http_date(datetime(2000, 1, 1, tzinfo=timezone.utc))
    r = srv.put(YEAR, {"example-jukebox:year": 2012}, headers={"If-Match": current, "If-Unmodified-Since": past})
    assert r.status_code == 204, r.text


def test_lost_update_race(srv):
    # Ten clients read the same ETag and write at once: exactly one wins.
    etag = validators(srv, YEAR)[0]
    results: list[int] = []

    def write(year):
        r = requests.put(srv.url(YEAR), data=f'{{"example-jukebox:year": {year}}}',
                         headers={"Content-Type": "application/yang-data+json", "If-Match": etag},
                         timeout=(5, 30))
        results.append(r.status_code)

    threads = [threading.Thread(target=write, args=(2000 + i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == [204] + [412] * 9, results


# --- validators and revision on write responses --------------------------------------------------


def test_write_responses_carry_revision_and_validators(srv):
    revs = []
    r = srv.put(YEAR, {"example-jukebox:year": 2012})
    assert r.status_code == 204
    revs.append(srv.revision(r))
    assert (r.headers.get("ETag"), r.headers.get("Last-Modified")) == validators(srv, YEAR)

    r = srv.patch(ALBUM, {"example-jukebox:album": [{"name": "Wasting Light", "year": 2013}]})
    assert r.status_code == 204
    revs.append(srv.revision(r))
    assert (r.headers.get("ETag"), r.headers.get("Last-Modified")) == validators(srv, ALBUM)

    r = srv.put(ALBUM + "/admin", {"example-jukebox:admin": {"label": "RCA"}})
    assert r.status_code == 201
    revs.append(srv.revision(r))
    assert (r.headers.get("ETag"), r.headers.get("Last-Modified")) == validators(srv, ALBUM + "/admin")

    r = srv.post(FOO, {"example-jukebox:album": [{"name": "One by One", "year": 2002}]})
    assert r.status_code == 201
    revs.append(srv.revision(r))
    # The POST's target is the parent; the RFC's examples return validators
    # after a create; either the new child's or the target's are accepted.
    assert (r.headers.get("ETag"), r.headers.get("Last-Modified")) in (
        validators(srv, FOO + "/album=One%20by%20One"), validators(srv, FOO))

    r = srv.delete(ALBUM + "/admin")
    assert r.status_code == 204
    revs.append(srv.revision(r))
    assert "ETag" not in r.headers  # the target no longer exists

    assert revs == sorted(revs) and len(set(revs)) == len(revs), revs


def test_refused_write_changes_nothing(srv):
    before = etags(srv, CHAIN + SIDE)
    stale = '"not-the-etag"'
    assert_412(srv.put(YEAR, {"example-jukebox:year": 2012}, headers={"If-Match": stale}))
    assert_error(srv.put(YEAR, {"example-jukebox:year": 1}), 400)
    assert etags(srv, CHAIN + SIDE) == before
    assert norm(srv.get_json(JB)) == norm(CONFIG)

"""YANG Patch (RFC 8072) through PATCH with application/yang-patch+json: the
examples of its Appendix A, every edit operation, atomicity (one failing edit
and nothing is stored) and the yang-patch-status reply."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from conftest import (
    DATA,
    DS,
    JB,
    JUKEBOX_B32,
    YANG_JSON,
    YANG_PATCH_JSON,
    YANG_PATCH_XML,
    YANG_XML,
    assert_error,
    norm,
    song_id,
)

YP_NS = "urn:ietf:params:xml:ns:yang:ietf-yang-patch"
FOO = JB + "/library/artist=Foo%20Fighters"
ALBUM = FOO + "/album=Wasting%20Light"
PLAYLIST = JB + "/playlist=Foo-One"
EDIT_ERROR_TAGS = {"data-exists", "data-missing", "invalid-value", "operation-failed", "bad-attribute"}


def patch_doc(patch_id: str, *edits: dict, comment: str | None = None) -> dict:
    body: dict = {"patch-id": patch_id}
    if comment:
        body["comment"] = comment
    body["edit"] = list(edits)
    return {"ietf-yang-patch:yang-patch": body}


def yang_patch(srv, path: str, doc, **kw):
    return srv.patch(path, doc, ctype=YANG_PATCH_JSON, **kw)


def assert_ok(resp, patch_id: str) -> None:
    assert resp.status_code == 200, f"{resp.status_code}: {resp.text[:600]}"
    assert resp.headers["Content-Type"].startswith(YANG_JSON), resp.headers
    assert resp.json() == {"ietf-yang-patch:yang-patch-status": {"patch-id": patch_id, "ok": [None]}}


def failed_edit(resp, patch_id: str, status: set[int]) -> tuple[str, dict]:
    """The (edit-id, first error) a failed patch's yang-patch-status reports."""
    assert resp.status_code in status, f"{resp.status_code}: {resp.text[:600]}"
    assert resp.headers["Content-Type"].startswith(YANG_JSON), resp.headers
    body = resp.json()
    assert list(body) == ["ietf-yang-patch:yang-patch-status"], body
    st = body["ietf-yang-patch:yang-patch-status"]
    assert st["patch-id"] == patch_id and "ok" not in st, st
    edits = [e for e in st["edit-status"]["edit"] if "errors" in e]
    assert len(edits) == 1, st
    error = edits[0]["errors"]["error"][0]
    assert error["error-type"] in ("protocol", "application")
    return edits[0]["edit-id"], error


def failed_patch(resp, patch_id: str, status: set[int]) -> tuple[str | None, dict]:
    """Like failed_edit, but the server may report the error for the whole
    patch (yang-patch-status/errors, RFC 8072's global-errors case) instead of
    for one edit; returns (None, error) then."""
    assert resp.status_code in status, f"{resp.status_code}: {resp.text[:600]}"
    st = resp.json()["ietf-yang-patch:yang-patch-status"]
    assert st["patch-id"] == patch_id and "ok" not in st, st
    if "errors" in st:
        return None, st["errors"]["error"][0]
    return failed_edit(resp, patch_id, status)


def song_value(name: str, location: str, length: int) -> dict:
    return {"example-jukebox:song": [{"name": name, "location": location, "format": "MP3", "length": length}]}


def songs(srv) -> set[str]:
    album = srv.get_json(ALBUM)["example-jukebox:album"][0]
    return {s["name"] for s in album.get("song", [])}


def order(srv) -> list[int]:
    pl = srv.get_json(PLAYLIST)["example-jukebox:playlist"][0]
    return [s["index"] for s in pl.get("song", [])]


# Wasting Light holds only "Rope" (A.1.1's conflict) and "Wasting Light".
def album_with_rope():
    doc = {"example-jukebox:jukebox": {"library": {"artist": [{"name": "Foo Fighters", "album": [{
        "name": "Wasting Light", "genre": "example-jukebox:alternative", "year": 2011,
        "admin": {"label": "RCA", "catalogue-number": "88697-84411-2"},
        "song": [{"name": "Wasting Light", "location": "/media/foo/a7/wasting-light.mp3", "format": "MP3",
                  "length": 286},
                 {"name": "Rope", "location": "/media/foo/a7/rope.mp3", "format": "MP3", "length": 259}]}]}]}}}
    return doc


ADD_SONGS = patch_doc(
    "add-songs-patch",
    {"edit-id": "edit1", "operation": "create", "target": "/song=Bridge%20Burning",
     "value": song_value("Bridge Burning", "/media/foo/a7/bridge-burning.mp3", 288)},
    {"edit-id": "edit2", "operation": "create", "target": "/song=Rope",
     "value": song_value("Rope", "/media/foo/a7/rope.mp3", 259)},
    {"edit-id": "edit3", "operation": "create", "target": "/song=Dear%20Rosemary",
     "value": song_value("Dear Rosemary", "/media/foo/a7/dear-rosemary.mp3", 269)},
)


@pytest.fixture
def srv(servers):
    return servers(config=album_with_rope())


@pytest.fixture
def playlist_srv(servers):
    doc = {"example-jukebox:jukebox": {
        "library": JUKEBOX_B32["example-jukebox:jukebox"]["library"],
        "playlist": [{"name": "Foo-One", "song": [
            {"index": i, "id": song_id(s)} for i, s in
            [(1, "Rope"), (2, "Bridge Burning"), (3, "Wasting Light"), (4, "Rope")]]}]}}
    return servers(config=doc)


# --- RFC 8072 Appendix A ----------------------------------------------------------------------


def test_a_1_1_add_resources_error(srv):
    r = yang_patch(srv, ALBUM, ADD_SONGS, accept=YANG_JSON)
    edit_id, error = failed_edit(r, "add-songs-patch", {409})
    assert edit_id == "edit2"
    assert error["error-tag"] == "data-exists"
    # The whole patch failed: edit1's song was not created either.
    assert songs(srv) == {"Wasting Light", "Rope"}


def test_a_1_2_add_resources_success(servers):
    doc = album_with_rope()
    doc["example-jukebox:jukebox"]["library"]["artist"][0]["album"][0]["song"].pop()  # no Rope
    srv = servers(config=doc)
    r = yang_patch(srv, ALBUM, patch_doc("add-songs-patch", *ADD_SONGS["ietf-yang-patch:yang-patch"]["edit"][:2]),
                   accept=YANG_JSON)
    assert_ok(r, "add-songs-patch")
    assert songs(srv) == {"Wasting Light", "Bridge Burning", "Rope"}
    album = srv.get_json(ALBUM + "/song=Bridge%20Burning")["example-jukebox:song"][0]
    assert album == {"name": "Bridge Burning", "location": "/media/foo/a7/bridge-burning.mp3",
                     "format": "MP3", "length": 288}


def test_a_1_3_insert_list_entry(playlist_srv):
    r = yang_patch(playlist_srv, PLAYLIST, patch_doc(
        "insert-song-patch",
        {"edit-id": "edit1", "operation": "insert", "target": "/song=5", "point": "/song=3", "where": "after",
         "value": {"example-jukebox:song": [{"index": 5, "id": song_id("Bridge Burning")}]}},
        comment="Insert song 5 after song 3"))
    assert_ok(r, "insert-song-patch")
    assert order(playlist_srv) == [1, 2, 3, 5, 4]


def test_a_1_4_move_list_entry(playlist_srv):
    r = yang_patch(playlist_srv, PLAYLIST, patch_doc(
        "move-song-patch",
        {"edit-id": "edit1", "operation": "move", "target": "/song=1", "point": "/song=3", "where": "after"},
        comment="Move song 1 after song 3"))
    assert_ok(r, "move-song-patch")
    assert order(playlist_srv) == [2, 3, 1, 4]


def test_a_1_5_edit_datastore_resource_xml(servers):
    doc = album_with_rope()
    doc["example-jukebox:jukebox"]["library"]["artist"][0]["album"][0]["song"].pop()
    srv = servers(config=doc)
    target = "/example-jukebox:jukebox/library/artist=Foo%20Fighters/album=Wasting%20Light"
    body = f"""<yang-patch xmlns="{YP_NS}">
  <patch-id>add-songs-patch-2</patch-id>
  <edit>
    <edit-id>edit1</edit-id>
    <operation>create</operation>
    <target>{target}/song=Rope</target>
    <value>
      <song xmlns="http://example.com/ns/example-jukebox">
        <name>Rope</name>
        <location>/media/foo/a7/rope.mp3</location>
        <format>MP3</format>
        <length>259</length>
      </song>
    </value>
  </edit>
  <edit>
    <edit-id>edit2</edit-id>
    <operation>create</operation>
    <target>{target}/song=Bridge%20Burning</target>
    <value>
      <song xmlns="http://example.com/ns/example-jukebox">
        <name>Bridge Burning</name>
        <location>/media/foo/a7/bridge-burning.mp3</location>
        <format>MP3</format>
        <length>288</length>
      </song>
    </value>
  </edit>
</yang-patch>
"""
    r = srv.patch(DATA, body, ctype=YANG_PATCH_XML, accept=YANG_XML)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith(YANG_XML)
    root = ET.fromstring(r.content)
    assert root.tag == f"{{{YP_NS}}}yang-patch-status"
    assert root.findtext(f"{{{YP_NS}}}patch-id") == "add-songs-patch-2"
    assert root.find(f"{{{YP_NS}}}ok") is not None
    assert songs(srv) == {"Wasting Light", "Rope", "Bridge Burning"}


# --- each operation ------------------------------------------------------------------------------


def test_merge(srv):
    r = yang_patch(srv, ALBUM, patch_doc("p", {"edit-id": "e1", "operation": "merge", "target": "/admin",
                                              "value": {"example-jukebox:admin": {"label": "Roswell"}}}))
    assert_ok(r, "p")
    assert srv.get_json(ALBUM + "/admin") == {
        "example-jukebox:admin": {"label": "Roswell", "catalogue-number": "88697-84411-2"}}


def test_replace(srv):
    r = yang_patch(srv, ALBUM, patch_doc("p", {"edit-id": "e1", "operation": "replace", "target": "/admin",
                                              "value": {"example-jukebox:admin": {"label": "Roswell"}}}))
    assert_ok(r, "p")
    assert srv.get_json(ALBUM + "/admin") == {"example-jukebox:admin": {"label": "Roswell"}}


def test_replace_creates(srv):
    r = yang_patch(srv, FOO, patch_doc("p", {"edit-id": "e1", "operation": "replace", "target": "/album=Echoes",
                                            "value": {"example-jukebox:album": [{"name": "Echoes", "year": 2007}]}}))
    assert_ok(r, "p")
    assert srv.get_json(FOO + "/album=Echoes") == {"example-jukebox:album": [{"name": "Echoes", "year": 2007}]}


def test_create_and_delete_and_remove(srv):
    r = yang_patch(srv, ALBUM, patch_doc(
        "p",
        {"edit-id": "e1", "operation": "create", "target": "/song=Walk",
         "value": song_value("Walk", "/media/foo/a7/walk.mp3", 256)},
        {"edit-id": "e2", "operation": "delete", "target": "/song=Rope"},
        {"edit-id": "e3", "operation": "remove", "target": "/admin/label"},
        {"edit-id": "e4", "operation": "remove", "target": "/song=Never%20Existed"},  # remove: no error
    ))
    assert_ok(r, "p")
    assert songs(srv) == {"Wasting Light", "Walk"}
    assert srv.get_json(ALBUM + "/admin") == {"example-jukebox:admin": {"catalogue-number": "88697-84411-2"}}


def test_delete_missing_fails_and_rolls_back(srv):
    r = yang_patch(srv, ALBUM, patch_doc(
        "p",
        {"edit-id": "e1", "operation": "merge", "target": "/year", "value": {"example-jukebox:year": 2012}},
        {"edit-id": "e2", "operation": "delete", "target": "/song=Never%20Existed"},
    ))
    edit_id, error = failed_edit(r, "p", {404, 409})
    assert edit_id == "e2" and error["error-tag"] in ("data-missing", "invalid-value")
    assert srv.get_json(ALBUM + "/year") == {"example-jukebox:year": 2011}


def test_edits_apply_in_order(srv):
    # e2 edits what e1 created, e3 deletes it again: the sequence is the patch.
    r = yang_patch(srv, FOO, patch_doc(
        "p",
        {"edit-id": "e1", "operation": "create", "target": "/album=Echoes",
         "value": {"example-jukebox:album": [{"name": "Echoes", "year": 2007}]}},
        {"edit-id": "e2", "operation": "merge", "target": "/album=Echoes/genre",
         "value": {"example-jukebox:genre": "example-jukebox:rock"}},
        {"edit-id": "e3", "operation": "create", "target": "/album=Skin%20and%20Bones",
         "value": {"example-jukebox:album": [{"name": "Skin and Bones", "year": 2006}]}},
        {"edit-id": "e4", "operation": "delete", "target": "/album=Skin%20and%20Bones"},
    ))
    assert_ok(r, "p")
    assert srv.get_json(FOO + "/album=Echoes") == {
        "example-jukebox:album": [{"name": "Echoes", "year": 2007, "genre": "example-jukebox:rock"}]}
    assert not srv.exists(FOO + "/album=Skin%20and%20Bones")


def test_later_failure_undoes_earlier_edits(srv):
    r = yang_patch(srv, FOO, patch_doc(
        "p",
        {"edit-id": "e1", "operation": "create", "target": "/album=Echoes",
         "value": {"example-jukebox:album": [{"name": "Echoes", "year": 2007}]}},
        {"edit-id": "e2", "operation": "merge", "target": "/album=Wasting%20Light/year",
         "value": {"example-jukebox:year": 2012}},
        {"edit-id": "e3", "operation": "merge", "target": "/album=Wasting%20Light/year",
         "value": {"example-jukebox:year": 1066}},  # out of range
    ))
    edit_id, error = failed_edit(r, "p", {400})
    assert edit_id == "e3" and error["error-tag"] == "invalid-value"
    assert not srv.exists(FOO + "/album=Echoes")
    assert srv.get_json(ALBUM + "/year") == {"example-jukebox:year": 2011}


def test_insert_first_last_before(playlist_srv):
    def ins(index, where, point=None):
        edit = {"edit-id": f"e{index}", "operation": "insert", "target": f"/song={index}", "where": where,
                "value": {"example-jukebox:song": [{"index": index, "id": song_id("Rope")}]}}
        if point:
            edit["point"] = point
        return edit

    r = yang_patch(playlist_srv, PLAYLIST, patch_doc(
        "p", ins(10, "first"), ins(11, "last"), ins(12, "before", "/song=3")))
    assert_ok(r, "p")
    assert order(playlist_srv) == [10, 1, 2, 12, 3, 4, 11]


def test_move_first_and_last(playlist_srv):
    r = yang_patch(playlist_srv, PLAYLIST, patch_doc(
        "p",
        {"edit-id": "e1", "operation": "move", "target": "/song=4", "where": "first"},
        {"edit-id": "e2", "operation": "move", "target": "/song=1", "where": "last"},
        {"edit-id": "e3", "operation": "move", "target": "/song=3", "point": "/song=4", "where": "before"},
    ))
    assert_ok(r, "p")
    assert order(playlist_srv) == [3, 4, 2, 1]


def test_insert_existing_entry_fails(playlist_srv):
    r = yang_patch(playlist_srv, PLAYLIST, patch_doc(
        "p", {"edit-id": "e1", "operation": "insert", "target": "/song=2", "where": "first",
              "value": {"example-jukebox:song": [{"index": 2, "id": song_id("Rope")}]}}))
    edit_id, error = failed_edit(r, "p", {409, 400})
    assert edit_id == "e1" and error["error-tag"] in ("data-exists", "invalid-value")
    assert order(playlist_srv) == [1, 2, 3, 4]


def test_move_missing_point_fails(playlist_srv):
    r = yang_patch(playlist_srv, PLAYLIST, patch_doc(
        "p",
        {"edit-id": "e1", "operation": "move", "target": "/song=1", "where": "last"},
        {"edit-id": "e2", "operation": "move", "target": "/song=2", "where": "after", "point": "/song=99"}))
    edit_id, _ = failed_patch(r, "p", {400, 404, 409})
    assert edit_id in ("e2", None)
    assert order(playlist_srv) == [1, 2, 3, 4]


def test_insert_on_system_ordered_list_fails(srv):
    r = yang_patch(srv, FOO, patch_doc(
        "p", {"edit-id": "e1", "operation": "insert", "target": "/album=Echoes", "where": "first",
              "value": {"example-jukebox:album": [{"name": "Echoes"}]}}))
    assert 400 <= r.status_code < 500, r.text
    assert not srv.exists(FOO + "/album=Echoes")


# --- malformed patches --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "doc",
    [
        {"ietf-yang-patch:yang-patch": {"edit": []}},  # no patch-id
        {"ietf-yang-patch:yang-patch": {"patch-id": "p", "edit": [
            {"edit-id": "e1", "operation": "frobnicate", "target": "/year"}]}},
        {"ietf-yang-patch:yang-patch": {"patch-id": "p", "edit": [
            {"edit-id": "e1", "operation": "merge", "target": "/year"}]}},  # merge needs a value
        {"ietf-yang-patch:yang-patch": {"patch-id": "p", "edit": [
            {"operation": "merge", "target": "/year", "value": {"example-jukebox:year": 2012}}]}},  # no edit-id
        {"example-jukebox:album": [{"name": "Wasting Light", "year": 2012}]},  # not a yang-patch
    ],
)
def test_malformed_patch_is_400(srv, doc):
    r = yang_patch(srv, ALBUM, doc)
    assert r.status_code == 400, r.text
    body = r.json()
    if "ietf-restconf:errors" not in body:
        # A yang-patch-status: RFC 8072's global-errors case puts rc:errors
        # ("errors") in it, an edit's error goes in edit-status.
        st = body["ietf-yang-patch:yang-patch-status"]
        assert "errors" in st or "edit-status" in st, body
    assert srv.get_json(ALBUM + "/year") == {"example-jukebox:year": 2011}


def test_malformed_json_patch_is_400(srv):
    r = srv.patch(ALBUM, b'{"ietf-yang-patch:yang-patch": {"patch-id": "p", ', ctype=YANG_PATCH_JSON)
    assert r.status_code == 400, r.text


def test_bad_target_path_fails(srv):
    r = yang_patch(srv, ALBUM, patch_doc("p", {"edit-id": "e1", "operation": "merge", "target": "/no-such-leaf",
                                              "value": {"example-jukebox:no-such-leaf": 1}}))
    assert r.status_code == 400, r.text
    assert srv.get_json(ALBUM + "/year") == {"example-jukebox:year": 2011}


# --- with the rest of RESTCONF ------------------------------------------------------------------------


def test_yang_patch_on_operational_is_405(srv):
    r = yang_patch(srv, DS + "operational/example-jukebox:jukebox/player", patch_doc(
        "p", {"edit-id": "e1", "operation": "merge", "target": "/gap", "value": {"example-jukebox:gap": "1.0"}}))
    assert_error(r, 405)


def test_yang_patch_on_candidate_leaves_running(srv):
    r = yang_patch(srv, DS + "candidate/example-jukebox:jukebox/library/artist=Foo%20Fighters/album=Wasting%20Light",
                   patch_doc("p", {"edit-id": "e1", "operation": "merge", "target": "/year",
                                   "value": {"example-jukebox:year": 2012}}))
    assert_ok(r, "p")
    assert srv.get_json(DS + "candidate/example-jukebox:jukebox/library/artist=Foo%20Fighters"
                        "/album=Wasting%20Light/year") == {"example-jukebox:year": 2012}
    assert srv.get_json(ALBUM + "/year") == {"example-jukebox:year": 2011}


def test_yang_patch_stale_if_match_is_412(srv):
    stale = srv.head(ALBUM).headers.get("ETag")
    assert stale, "no ETag on the album"
    assert srv.put(ALBUM + "/year", {"example-jukebox:year": 2012}).status_code == 204
    r = yang_patch(srv, ALBUM, patch_doc("p", {"edit-id": "e1", "operation": "merge", "target": "/year",
                                              "value": {"example-jukebox:year": 1999}}),
                   headers={"If-Match": stale})
    assert r.status_code == 412, r.text
    assert srv.get_json(ALBUM + "/year") == {"example-jukebox:year": 2012}


def test_yang_patch_reply_carries_revision(srv):
    r1 = yang_patch(srv, ALBUM, patch_doc("p1", {"edit-id": "e1", "operation": "merge", "target": "/year",
                                                "value": {"example-jukebox:year": 2012}}))
    assert_ok(r1, "p1")
    r2 = yang_patch(srv, ALBUM, patch_doc("p2", {"edit-id": "e1", "operation": "merge", "target": "/year",
                                                "value": {"example-jukebox:year": 2013}}))
    assert_ok(r2, "p2")
    assert srv.revision(r2) > srv.revision(r1)
    assert r2.headers.get("ETag") == srv.head(ALBUM).headers["ETag"]


def test_whole_datastore_target(srv):
    r = yang_patch(srv, DATA, patch_doc(
        "p",
        {"edit-id": "e1", "operation": "merge", "target": "/example-jukebox:jukebox/player",
         "value": {"example-jukebox:player": {"gap": "1.2"}}},
        {"edit-id": "e2", "operation": "delete",
         "target": "/example-jukebox:jukebox/library/artist=Foo%20Fighters/album=Wasting%20Light/song=Rope"}))
    assert_ok(r, "p")
    assert norm(srv.get_json(JB + "/player")) == {"example-jukebox:player": {"gap": 1.2}}
    assert songs(srv) == {"Wasting Light"}

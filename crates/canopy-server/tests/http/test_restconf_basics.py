"""RESTCONF basics (RFC 8040): discovery, the API resource, every method on
data resources, api-path encoding (§3.5.3) and every query parameter (§4.8)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from conftest import (
    DATA,
    DS,
    DEFAULTS,
    JB,
    JUKEBOX,
    JUKEBOX_B32,
    JUKEBOX_STATE,
    TOP,
    YANG_JSON,
    YANG_PATCH_JSON,
    YANG_XML,
    assert_error,
    key,
    norm,
    qs,
    song_id,
    unwrap_data,
)

RC_NS = "urn:ietf:params:xml:ns:yang:ietf-restconf"
JB_NS = "http://example.com/ns/example-jukebox"
XRD_NS = "http://docs.oasis-open.org/ns/xri/xrd-1.0"
DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
ALL_METHODS = {"GET", "HEAD", "OPTIONS", "PUT", "POST", "PATCH", "DELETE"}

FOO = JB + "/library/artist=Foo%20Fighters"
ALBUM = FOO + "/album=Wasting%20Light"
PLAYLIST = JB + "/playlist=Foo-One"

TWO_ARTISTS = {
    "example-jukebox:jukebox": {
        "library": {
            "artist": [
                {
                    "name": "Foo Fighters",
                    "album": [
                        {
                            "name": "Wasting Light",
                            "genre": "example-jukebox:alternative",
                            "year": 2011,
                            "admin": {"label": "RCA", "catalogue-number": "88697-84411-2"},
                        }
                    ],
                },
                {
                    "name": "Nick Cave and the Bad Seeds",
                    "album": [{"name": "Tender Prey", "year": 1988}],
                },
            ]
        }
    }
}


def allow_of(resp) -> set[str]:
    return {m.strip().upper() for m in resp.headers.get("Allow", "").split(",") if m.strip()}


def playlist_order(srv, playlist: str = "Foo-One") -> list[int]:
    body = srv.get_json(JB + "/playlist=" + key(playlist))
    entries = body["example-jukebox:playlist"]
    assert len(entries) == 1, body
    return [s["index"] for s in entries[0].get("song", [])]


def new_song(index: int, song: str = "Rope") -> dict:
    return {"example-jukebox:song": [{"index": index, "id": song_id(song)}]}


# --- discovery and the API resource (§3.1, §3.3) ---------------------------------


def test_host_meta_points_at_restconf_root(jukebox):
    r = jukebox.get("/.well-known/host-meta", accept="application/xrd+xml")
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/xrd+xml")
    root = ET.fromstring(r.content)
    assert root.tag == f"{{{XRD_NS}}}XRD"
    links = [l.attrib for l in root.findall(f"{{{XRD_NS}}}Link") if l.get("rel") == "restconf"]
    assert links == [{"rel": "restconf", "href": "/restconf"}], ET.tostring(root)


def test_api_resource_json(jukebox):
    r = jukebox.get("/restconf")
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith(YANG_JSON)
    body = r.json()
    assert list(body) == ["ietf-restconf:restconf"], body
    api = body["ietf-restconf:restconf"]
    # §3.3: the API resource has the child resources data, operations and
    # yang-library-version.
    assert {"data", "operations", "yang-library-version"} <= set(api), api
    assert DATE.fullmatch(api["yang-library-version"]), api


def test_api_resource_xml(jukebox):
    r = jukebox.get("/restconf", accept=YANG_XML)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith(YANG_XML)
    root = ET.fromstring(r.content)
    assert root.tag == f"{{{RC_NS}}}restconf"
    names = {child.tag for child in root}
    assert {f"{{{RC_NS}}}{n}" for n in ("data", "operations", "yang-library-version")} <= names


def test_yang_library_version_leaf(jukebox):
    api = jukebox.get_json("/restconf")["ietf-restconf:restconf"]
    body = jukebox.get_json("/restconf/yang-library-version")
    assert body == {"ietf-restconf:yang-library-version": api["yang-library-version"]}


def test_yang_library_version_leaf_xml(jukebox):
    api = jukebox.get_json("/restconf")["ietf-restconf:restconf"]
    r = jukebox.get("/restconf/yang-library-version", accept=YANG_XML)
    assert r.status_code == 200
    root = ET.fromstring(r.content)
    assert root.tag == f"{{{RC_NS}}}yang-library-version"
    assert root.text.strip() == api["yang-library-version"]


def test_operations_resource(jukebox):
    # §3.3.2: "operations" lists the server's RPCs; canopy may list none.
    body = jukebox.get_json("/restconf/operations")
    assert list(body) == ["ietf-restconf:operations"], body
    ops = body["ietf-restconf:operations"] or {}
    for name, value in ops.items():
        assert ":" in name and value == [None], ops


@pytest.mark.parametrize("method", ["PUT", "POST", "PATCH", "DELETE"])
def test_api_resource_is_read_only(jukebox, method):
    r = jukebox.request(method, "/restconf", {"ietf-restconf:restconf": {}})
    assert_error(r, 405)
    assert "GET" in allow_of(r), r.headers


@pytest.mark.parametrize("method", ["PUT", "POST", "PATCH", "DELETE"])
def test_yang_library_version_is_read_only(jukebox, method):
    r = jukebox.request(method, "/restconf/yang-library-version", {"ietf-restconf:yang-library-version": "2000-01-01"})
    assert_error(r, 405)
    assert "GET" in allow_of(r), r.headers


def test_unknown_resource_under_root_is_404(jukebox):
    assert_error(jukebox.get("/restconf/no-such-resource"), 404)


# --- GET and HEAD (§4.2, §4.3) ---------------------------------------------------------


def test_get_list_entry_json(servers):
    srv = servers(config=TWO_ARTISTS)
    r = srv.get(FOO)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith(YANG_JSON)
    body = r.json()
    # RFC 7951: the target is a list entry, printed as a one-entry array under
    # its module-qualified name.
    assert list(body) == ["example-jukebox:artist"], body
    assert norm(body) == norm(
        {"example-jukebox:artist": [TWO_ARTISTS["example-jukebox:jukebox"]["library"]["artist"][0]]}
    )


def test_get_without_accept_is_json(servers):
    srv = servers(config=TWO_ARTISTS)
    r = srv.get(ALBUM + "/year", accept=None)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith(YANG_JSON)
    assert r.json() == {"example-jukebox:year": 2011}


def test_get_leaf(servers):
    srv = servers(config=TWO_ARTISTS)
    assert srv.get_json(ALBUM + "/genre") == {"example-jukebox:genre": "example-jukebox:alternative"}


def test_get_container(servers):
    srv = servers(config=TWO_ARTISTS)
    assert srv.get_json(ALBUM + "/admin") == {
        "example-jukebox:admin": {"label": "RCA", "catalogue-number": "88697-84411-2"}
    }


def test_get_xml(servers):
    srv = servers(config=TWO_ARTISTS)
    r = srv.get(ALBUM, accept=YANG_XML)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith(YANG_XML)
    root = ET.fromstring(r.content)
    assert root.tag == f"{{{JB_NS}}}album"
    assert root.findtext(f"{{{JB_NS}}}name") == "Wasting Light"
    assert root.findtext(f"{{{JB_NS}}}year") == "2011"
    assert root.findtext(f"{{{JB_NS}}}admin/{{{JB_NS}}}label") == "RCA"
    genre = root.find(f"{{{JB_NS}}}genre")
    # identityref in XML (RFC 7950 §9.10.3): prefix:identity with the prefix
    # bound to the module's namespace (the prefix is the server's choice), or
    # no prefix: then the identity is in the default namespace in effect on
    # the element, here example-jukebox's.
    prefix, _, ident = genre.text.strip().rpartition(":")
    assert ident == "alternative"


def test_get_datastore_has_every_top_level_node(servers):
    srv = servers(modules=(JUKEBOX, "example-system.yang"), config={
        **TWO_ARTISTS, "example-system:system": {"enable-jukebox-streaming": True}})
    data = unwrap_data(srv.get_json(DATA))
    assert data["example-system:system"] == {"enable-jukebox-streaming": True}
    assert norm(data["example-jukebox:jukebox"]) == norm(TWO_ARTISTS["example-jukebox:jukebox"])


def test_get_missing_resource_is_404(servers):
    srv = servers(config=TWO_ARTISTS)
    # §4.3: a GET of an instance that does not exist -> 404, error-tag invalid-value.
    assert_error(srv.get(JB + "/library/artist=Nobody"), 404, "invalid-value")
    assert_error(srv.get(FOO + "/album=Nothing/year"), 404, "invalid-value")
    assert_error(srv.get(JB + "/player/gap"), 404, "invalid-value")


def test_head_equals_get_without_body(servers):
    srv = servers(config=TWO_ARTISTS)
    g = srv.get(FOO)
    h = srv.head(FOO)
    assert h.status_code == 200
    assert h.content == b""
    for name in ("Content-Type", "ETag", "Last-Modified"):
        assert h.headers.get(name) == g.headers.get(name), name
    h404 = srv.head(JB + "/library/artist=Nobody")
    assert h404.status_code == 404 and h404.content == b""


def test_options_lists_methods(servers):
    srv = servers(config=TWO_ARTISTS)
    r = srv.options(FOO)
    assert 200 <= r.status_code < 300, r.text
    assert ALL_METHODS <= allow_of(r), r.headers
    # RFC 5789 §3.1: Accept-Patch, when sent, names the patch media types.
    if "Accept-Patch" in r.headers:
        types = {t.strip() for t in r.headers["Accept-Patch"].split(",")}
        assert YANG_PATCH_JSON in types and YANG_JSON in types, types


def test_options_on_datastore(jukebox):
    r = jukebox.options(DATA)
    assert 200 <= r.status_code < 300, r.text
    assert {"GET", "HEAD", "OPTIONS", "PUT", "POST", "PATCH"} <= allow_of(r), r.headers


# --- POST (§4.4.1) ----------------------------------------------------------------------


def test_post_creates_child_with_location(jukebox):
    r = jukebox.post(DATA, {"example-jukebox:jukebox": {}})
    assert r.status_code == 201, r.text
    assert jukebox.location_path(r) == JB
    r = jukebox.post(JB + "/library", {"example-jukebox:artist": [{"name": "Foo Fighters"}]})
    assert r.status_code == 201, r.text
    assert r.content == b""  # no message-body on 201 to a create
    assert jukebox.location_path(r) == FOO
    assert jukebox.get_json(FOO) == {"example-jukebox:artist": [{"name": "Foo Fighters"}]}


def test_post_location_encodes_reserved_key_characters(jukebox):
    assert jukebox.post(DATA, {"example-jukebox:jukebox": {}}).status_code == 201
    name = "AC/DC, \"Live\": 'at' 50% = [ok]?#"
    r = jukebox.post(JB + "/library", {"example-jukebox:artist": [{"name": name}]})
    assert r.status_code == 201, r.text
    path = jukebox.location_path(r)
    assert path.startswith(JB + "/library/artist="), path
    segment = path[len(JB + "/library/artist="):]
    # §3.5.3: the key value is one path segment with reserved characters encoded.
    assert "/" not in segment and "," not in segment and "?" not in segment and "#" not in segment
    got = jukebox.get_json(path)
    assert got == {"example-jukebox:artist": [{"name": name}]}


def test_post_existing_is_409(servers):
    srv = servers(config=TWO_ARTISTS)
    r = srv.post(JB + "/library", {"example-jukebox:artist": [{"name": "Foo Fighters"}]})
    # §4.4.1: 409 Conflict; the RFC names error-tag resource-denied, NETCONF's
    # create uses data-exists (both 409 in §7).
    assert_error(r, 409, {"resource-denied", "data-exists"})
    body = srv.get_json(FOO)["example-jukebox:artist"][0]
    assert body["album"][0]["name"] == "Wasting Light"


def test_post_two_instances_is_400(jukebox):
    jukebox.post(DATA, {"example-jukebox:jukebox": {}})
    r = jukebox.post(JB + "/library", {"example-jukebox:artist": [{"name": "A"}, {"name": "B"}]})
    # §4.4.1: the message-body MUST contain exactly one instance.
    assert_error(r, 400)
    assert not jukebox.exists(JB + "/library/artist=A")
    assert not jukebox.exists(JB + "/library/artist=B")


def test_post_foreign_child_is_400(jukebox):
    jukebox.post(DATA, {"example-jukebox:jukebox": {}})
    r = jukebox.post(JB + "/library", {"example-jukebox:gap": "0.5"})
    assert_error(r, 400)


# --- PUT (§4.5) ----------------------------------------------------------------------------


def test_put_creates_201_then_replaces_204(jukebox):
    jukebox.post(DATA, {"example-jukebox:jukebox": {}})
    album = {"name": "Wasting Light", "year": 2011, "admin": {"label": "RCA"}}
    r = jukebox.put(ALBUM, {"example-jukebox:album": [album]})
    assert r.status_code == 201, r.text
    assert jukebox.get_json(ALBUM) == {"example-jukebox:album": [album]}
    r = jukebox.put(ALBUM, {"example-jukebox:album": [{"name": "Wasting Light", "genre": "example-jukebox:rock"}]})
    assert r.status_code == 204, r.text
    assert r.content == b""
    # A replace: year and admin are gone.
    assert jukebox.get_json(ALBUM) == {
        "example-jukebox:album": [{"name": "Wasting Light", "genre": "example-jukebox:rock"}]
    }


def test_put_leaf(servers):
    srv = servers(config=TWO_ARTISTS)
    r = srv.put(ALBUM + "/year", {"example-jukebox:year": 2012})
    assert r.status_code == 204, r.text
    assert srv.get_json(ALBUM + "/year") == {"example-jukebox:year": 2012}


def test_put_key_mismatch_is_400(servers):
    srv = servers(config=TWO_ARTISTS)
    r = srv.put(FOO, {"example-jukebox:artist": [{"name": "Foo Fighterz"}]})
    # §4.5: key leaf values in the body MUST equal those in the request URI.
    assert_error(r, 400)
    assert srv.exists(FOO)
    assert not srv.exists(JB + "/library/artist=Foo%20Fighterz")
    assert srv.get_json(FOO)["example-jukebox:artist"][0]["album"][0]["year"] == 2011


def test_put_without_body_is_400(servers):
    srv = servers(config=TWO_ARTISTS)
    r = srv.put(ALBUM + "/year", "", ctype=YANG_JSON)
    # §4.5: a message-body MUST be present, else 400 with error-tag invalid-value
    # (an empty JSON text is also malformed, hence malformed-message accepted).
    assert_error(r, 400, {"invalid-value", "malformed-message"})
    assert srv.get_json(ALBUM + "/year") == {"example-jukebox:year": 2011}


def test_put_datastore_replaces_everything(servers):
    srv = servers(modules=(JUKEBOX, "example-system.yang"), config={
        **TWO_ARTISTS, "example-system:system": {"enable-jukebox-streaming": True}})
    new = {"example-jukebox:jukebox": {"player": {"gap": "1.5"}}}
    # The datastore's representation is the "data" container of ietf-restconf
    # (RFC 8040 §8, Appendix B.2.4 in XML).
    r = srv.put(DATA, {"ietf-restconf:data": new})
    assert r.status_code == 204, r.text
    # The configuration is the new one; the view of /restconf/data also
    # holds the server's state (its YANG library and restconf-state), which
    # PUT does not touch.
    data = unwrap_data(srv.get_json(DATA + "?content=config"))
    assert norm(data) == norm(new)
    view = unwrap_data(srv.get_json(DATA))
    own = {"ietf-yang-library:yang-library", "ietf-restconf-monitoring:restconf-state"}
    assert set(view) == {"example-jukebox:jukebox"} | own, view


# --- PATCH, plain (§4.6.1) ---------------------------------------------------------------------


def test_plain_patch_merges(servers):
    srv = servers(config=TWO_ARTISTS)
    r = srv.patch(ALBUM, {"example-jukebox:album": [{"name": "Wasting Light", "year": 2012,
                                                      "song": [{"name": "Rope", "location": "/r.mp3"}]}]})
    assert r.status_code == 204, r.text
    album = srv.get_json(ALBUM)["example-jukebox:album"][0]
    assert album["year"] == 2012
    assert album["genre"] == "example-jukebox:alternative"  # kept
    assert album["admin"] == {"label": "RCA", "catalogue-number": "88697-84411-2"}  # kept
    assert album["song"] == [{"name": "Rope", "location": "/r.mp3"}]


def test_plain_patch_of_many_entries_merges_stored_ones_and_creates_the_rest(servers):
    # A merge naming many entries of a list that holds some of them (stored and
    # new ones interleaved, new ones before the first stored one and after the
    # last, many stored ones the body does not name): each stored entry keeps
    # what the body does not set, each other one is created.
    stored = list(range(3, 37, 3)) + list(range(100, 121))
    old = [{"name": f"a{i:03}", "year": 1900 + i} for i in stored]
    config = {"example-jukebox:jukebox": {"library": {"artist": [{"name": "X", "album": old}]}}}
    srv = servers(config=config)
    named = list(range(0, 41)) + [110, 200]
    new = [{"name": f"a{i:03}", "genre": "example-jukebox:jazz"} for i in reversed(named)]
    r = srv.patch(JB + "/library/artist=X", {"example-jukebox:artist": [{"name": "X", "album": new}]})
    assert r.status_code == 204, r.text
    got = srv.get_json(JB + "/library/artist=X")["example-jukebox:artist"][0]["album"]
    want = {}
    for i in sorted(set(stored) | set(named)):
        album = {"name": f"a{i:03}"}
        if i in stored:
            album["year"] = 1900 + i
        if i in named:
            album["genre"] = "example-jukebox:jazz"
        want[album["name"]] = album
    assert {a["name"]: a for a in got} == want


def test_plain_patch_missing_target_creates_nothing(servers):
    srv = servers(config=TWO_ARTISTS)
    r = srv.patch(JB + "/library/artist=Nobody", {"example-jukebox:artist": [{"name": "Nobody"}]})
    # §4.6.1: "If the target resource instance does not exist, the server MUST
    # NOT create it." The status is not fixed by the RFC: 404 or 409 (data-missing).
    assert_error(r, {404, 409})
    assert not srv.exists(JB + "/library/artist=Nobody")


def test_plain_patch_key_mismatch_is_400(servers):
    srv = servers(config=TWO_ARTISTS)
    r = srv.patch(FOO, {"example-jukebox:artist": [{"name": "Other"}]})
    assert_error(r, 400)
    assert not srv.exists(JB + "/library/artist=Other")


def test_plain_patch_datastore(servers):
    srv = servers(config=TWO_ARTISTS)
    r = srv.patch(DATA, {"ietf-restconf:data": {"example-jukebox:jukebox": {"player": {"gap": "0.3"}}}})
    assert r.status_code == 204, r.text
    assert norm(srv.get_json(JB + "/player")) == {"example-jukebox:player": {"gap": 0.3}}
    assert srv.exists(FOO)


# --- DELETE (§4.7) ------------------------------------------------------------------------------


def test_delete_then_404(servers):
    srv = servers(config=TWO_ARTISTS)
    r = srv.delete(ALBUM)
    assert r.status_code == 204, r.text
    assert r.content == b""
    assert not srv.exists(ALBUM)
    assert srv.exists(FOO)
    assert srv.exists(JB + "/library/artist=Nick%20Cave%20and%20the%20Bad%20Seeds")


def test_delete_leaf(servers):
    srv = servers(config=TWO_ARTISTS)
    assert srv.delete(ALBUM + "/year").status_code == 204
    assert "year" not in srv.get_json(ALBUM)["example-jukebox:album"][0]


def test_delete_missing_is_404(servers):
    srv = servers(config=TWO_ARTISTS)
    # canopy's contract: 404. RFC 8040 fixes no status here (§7 maps NETCONF's
    # data-missing to 409; rousette sends 404 with data-missing).
    r = srv.delete(JB + "/library/artist=Nobody")
    assert r.status_code == 404, r.text
    assert srv.get_json(FOO)


def test_delete_whole_list_is_refused(servers):
    srv = servers(config=TWO_ARTISTS)
    # §4.7: a DELETE target that is a list MUST be a single instance; the server
    # MUST NOT delete more than one instance.
    r = srv.delete(JB + "/library/artist")
    assert 400 <= r.status_code < 500, r.text
    assert srv.exists(FOO)
    assert srv.exists(JB + "/library/artist=Nick%20Cave%20and%20the%20Bad%20Seeds")


# --- api-path (§3.5.3) --------------------------------------------------------------------------


def test_percent_encoded_unreserved_characters_are_equivalent(servers):
    srv = servers(config=TWO_ARTISTS)
    # RFC 3986 §6.2.2.2: %46 is "F"; both spellings name one resource.
    assert srv.get_json(JB + "/library/artist=%46oo%20Fighters") == srv.get_json(FOO)


def test_multiple_keys_and_reserved_characters(servers):
    srv = servers(modules=(TOP,))
    assert srv.post(DATA, {"example-top:top": {}}).status_code == 201
    # §3.5.3's example: key1 is ,'":" / (comma, single quote, double quote,
    # colon, double quote, space, slash), key2 the empty string, key3 "foo".
    key1 = ",'\":\" /"
    entry = {"key1": key1, "key2": "", "key3": "foo"}
    r = srv.post(DATA + "/example-top:top", {"example-top:list1": [entry]})
    assert r.status_code == 201, r.text
    path = DATA + "/example-top:top/list1=%2C%27\"%3A\"%20%2F,,foo"
    assert srv.location_path(r).split("/list1=")[1].count(",") == 2
    assert srv.get_json(path) == {"example-top:list1": [entry]}
    # §3.5.3: /restconf/data/example-top:top/list1=key1,key2,key3/list2=key4,key5/X
    r = srv.put(DATA + "/example-top:top/list1=key1,key2,key3", {"example-top:list1": [
        {"key1": "key1", "key2": "key2", "key3": "key3",
         "list2": [{"key4": "key4", "key5": "key5", "X": "x-value"}]}]})
    assert r.status_code == 201, r.text
    got = srv.get_json(DATA + "/example-top:top/list1=key1,key2,key3/list2=key4,key5/X")
    assert got == {"example-top:X": "x-value"}


def test_key_order_matters(servers):
    srv = servers(modules=(TOP,), config={"example-top:top": {"list1": [
        {"key1": "a", "key2": "b", "key3": "c"}]}})
    assert srv.exists(DATA + "/example-top:top/list1=a,b,c")
    assert not srv.exists(DATA + "/example-top:top/list1=c,b,a")


def test_leaf_list_instance(servers):
    srv = servers(modules=(TOP,), config={"example-top:top": {"Y": [5, 7]}})
    # §3.5.3: a leaf-list instance is name=value.
    assert srv.get_json(DATA + "/example-top:top/Y=7") == {"example-top:Y": [7]}
    assert srv.delete(DATA + "/example-top:top/Y=5").status_code == 204
    assert srv.get_json(DATA + "/example-top:top/Y") == {"example-top:Y": [7]}


@pytest.mark.parametrize(
    "path",
    [
        DATA + "/jukebox",  # the top-level node must be module-qualified
        JB + "/library/artist/album=Wasting%20Light",  # a list without its key
        JB + "/library/artist=Foo%20Fighters,extra",  # a key too many
        JB + "/player=1",  # keys on a container
    ],
)
def test_malformed_api_path_is_400(servers, path):
    srv = servers(config=TWO_ARTISTS)
    assert_error(srv.get(path), 400)


def test_bad_percent_encoding_is_400(servers):
    srv = servers(config=TWO_ARTISTS)
    # Sent as is (requests would encode the lone "%"): RFC 3986 §2.1 needs two hex digits.
    status, _, body = srv.raw("GET", JB + "/library/artist=Foo%2", headers={"Accept": YANG_JSON})
    assert status == 400, body


@pytest.mark.parametrize(
    "path",
    [
        DATA + "/no-such-module:jukebox",
        JB + "/no-such-node",
        JB + "/library/artist=Foo%20Fighters/no-such-node",
    ],
)
def test_unknown_schema_node(servers, path):
    srv = servers(config=TWO_ARTISTS)
    # Not fixed by RFC 8040: a path naming no schema node is a bad request (400,
    # e.g. unknown-element) or a resource that does not exist (404).
    assert_error(srv.get(path), {400, 404})
    assert_error(srv.put(path, {"x": 1}), {400, 404})


# --- query parameters (§4.8) ---------------------------------------------------------------------


def test_unknown_query_parameter_is_400(servers):
    srv = servers(config=TWO_ARTISTS)
    # §4.8: an unexpected query parameter -> 400.
    assert_error(srv.get(FOO + qs(frobnicate="1")), 400)


def test_repeated_query_parameter_is_400(servers):
    srv = servers(config=TWO_ARTISTS)
    # §4.8: each parameter at most once, else 400.
    assert_error(srv.get(FOO + qs(("depth", "1"), ("depth", "2"))), 400)


@pytest.mark.parametrize(
    "param,value",
    [("content", "config"), ("depth", "1"), ("fields", "name"), ("with-defaults", "report-all"),
     ("filter", "/example-jukebox:jukebox")],
)
def test_read_parameters_refused_on_writes(servers, param, value):
    srv = servers(config=TWO_ARTISTS)
    # §4.8's table: these are GET/HEAD parameters only.
    r = srv.put(ALBUM + "/year" + qs(**{param: value}), {"example-jukebox:year": 1999})
    assert_error(r, 400)
    assert srv.get_json(ALBUM + "/year") == {"example-jukebox:year": 2011}


@pytest.mark.parametrize("param,value", [("insert", "first"), ("point", "/example-jukebox:jukebox")])
def test_write_parameters_refused_on_get(servers, param, value):
    srv = servers(config=JUKEBOX_B32)
    # §4.8's table: insert and point go with POST and PUT only.
    assert_error(srv.get(PLAYLIST + qs(**{param: value})), 400)


@pytest.mark.parametrize("param", ["start-time", "stop-time"])
def test_stream_time_parameters_refused_on_data(servers, param):
    srv = servers(config=TWO_ARTISTS)
    # §4.8.7/§4.8.8: only for GET on a text/event-stream resource, else 400.
    assert_error(srv.get(FOO + qs(**{param: "2017-01-26T20:56:30Z"})), 400)


# content (§4.8.1)


def test_content_nonconfig_section_3_3_1(servers):
    srv = servers(config=TWO_ARTISTS, state=JUKEBOX_STATE)
    # The example of §3.3.1, in JSON.
    body = srv.get_json(JB + "/library" + qs(content="nonconfig"))
    assert body == {"example-jukebox:library": {"artist-count": 42, "album-count": 59, "song-count": 374}}


def test_content_config_and_all(servers):
    srv = servers(config=TWO_ARTISTS, state=JUKEBOX_STATE)
    config = srv.get_json(JB + "/library" + qs(content="config"))["example-jukebox:library"]
    assert "artist-count" not in config and "song-count" not in config
    assert len(config["artist"]) == 2
    everything = srv.get_json(JB + "/library" + qs(content="all"))["example-jukebox:library"]
    default = srv.get_json(JB + "/library")["example-jukebox:library"]
    assert norm(everything) == norm(default)  # "all" is the default
    assert everything["artist-count"] == 42 and len(everything["artist"]) == 2


def test_content_bad_value_is_400(servers):
    srv = servers(config=TWO_ARTISTS)
    assert_error(srv.get(JB + qs(content="everything")), 400)


# depth (§4.8.2)


def test_depth_levels(servers):
    srv = servers(config=TWO_ARTISTS)
    assert srv.get_json(JB + qs(depth="1")) == {"example-jukebox:jukebox": {}}
    two = srv.get_json(JB + qs(depth="2"))["example-jukebox:jukebox"]
    assert set(two) == {"library"} and not two["library"]
    album = srv.get_json(ALBUM + qs(depth="2"))["example-jukebox:album"][0]
    # depth 2 from the album: its leaves, and "admin" without its children.
    assert album["name"] == "Wasting Light" and album["year"] == 2011
    assert album["genre"] == "example-jukebox:alternative"
    assert not album.get("admin")
    full = srv.get_json(ALBUM + qs(depth="unbounded"))
    assert norm(full) == norm(srv.get_json(ALBUM))
    assert full["example-jukebox:album"][0]["admin"]["label"] == "RCA"


@pytest.mark.parametrize("value", ["0", "65536", "-1", "two", ""])
def test_depth_bad_value_is_400(servers, value):
    srv = servers(config=TWO_ARTISTS)
    # §4.8.2: an integer 1..65535 or "unbounded".
    assert_error(srv.get(JB + qs(depth=value)), 400)


def test_depth_65535_is_accepted(servers):
    srv = servers(config=TWO_ARTISTS)
    assert norm(srv.get_json(JB + qs(depth="65535"))) == norm(srv.get_json(JB))


# fields (§4.8.3)


def test_fields_selects_leaves(servers):
    srv = servers(config=TWO_ARTISTS)
    # §4.8.3's own examples, on the album resource.
    album = srv.get_json(ALBUM + qs(fields="genre;year"))["example-jukebox:album"][0]
    assert album["genre"] == "example-jukebox:alternative" and album["year"] == 2011
    assert "admin" not in album
    # Whether the key leaf "name" is reported anyway is not fixed by the RFC.
    assert set(album) <= {"name", "genre", "year"}


def test_fields_sub_selectors(servers):
    srv = servers(config=TWO_ARTISTS)
    album = srv.get_json(ALBUM + qs(fields="admin(label;catalogue-number)"))["example-jukebox:album"][0]
    assert album["admin"] == {"label": "RCA", "catalogue-number": "88697-84411-2"}
    assert set(album) <= {"name", "admin"}
    album = srv.get_json(ALBUM + qs(fields="admin/label"))["example-jukebox:album"][0]
    assert album["admin"] == {"label": "RCA"}
    assert set(album) <= {"name", "admin"}


def test_fields_through_a_list(servers):
    srv = servers(config=TWO_ARTISTS)
    lib = srv.get_json(JB + "/library" + qs(fields="artist(name;album(year))"))["example-jukebox:library"]
    artists = {a["name"]: a for a in lib["artist"]}
    assert set(artists) == {"Foo Fighters", "Nick Cave and the Bad Seeds"}
    for a in artists.values():
        for album in a["album"]:
            assert set(album) <= {"name", "year"} and "year" in album


def test_fields_unknown_node_is_400(servers):
    srv = servers(config=TWO_ARTISTS)
    assert_error(srv.get(ALBUM + qs(fields="no-such-leaf")), 400)


def test_fields_syntax_error_is_400(servers):
    srv = servers(config=TWO_ARTISTS)
    assert_error(srv.get(ALBUM + qs(fields="admin(label")), 400)


# with-defaults (§4.8.9, RFC 6243)

INTERFACES = {
    "example:interfaces": {
        "interface": [
            {"name": "eth0", "mtu": 8192},
            {"name": "eth1"},
            {"name": "eth2", "mtu": 9000},
            {"name": "eth3", "mtu": 1500},  # set explicitly to the default
        ]
    }
}
IF_STATE = {"example:interfaces": {"interface": [
    {"name": n, "status": "up"} for n in ("eth0", "eth1", "eth2", "eth3")]}}
IFS = DATA + "/example:interfaces"


def mtus(body: dict) -> dict:
    return {i["name"]: i.get("mtu") for i in body["example:interfaces"]["interface"]}


def test_with_defaults_report_all(servers):
    srv = servers(modules=(DEFAULTS,), config=INTERFACES)
    body = srv.get_json(IFS + qs(**{"with-defaults": "report-all"}))
    assert mtus(body) == {"eth0": 8192, "eth1": 1500, "eth2": 9000, "eth3": 1500}


def test_with_defaults_trim(servers):
    srv = servers(modules=(DEFAULTS,), config=INTERFACES)
    body = srv.get_json(IFS + qs(**{"with-defaults": "trim"}))
    # RFC 6243 §3.2: trim leaves out every value equal to the default.
    assert mtus(body) == {"eth0": 8192, "eth1": None, "eth2": 9000, "eth3": None}


def test_with_defaults_explicit(servers):
    srv = servers(modules=(DEFAULTS,), config=INTERFACES)
    body = srv.get_json(IFS + qs(**{"with-defaults": "explicit"}))
    # RFC 6243 §3.3: explicit reports what a client set, default value or not.
    assert mtus(body) == {"eth0": 8192, "eth1": None, "eth2": 9000, "eth3": 1500}


def test_with_defaults_report_all_tagged(servers):
    srv = servers(modules=(DEFAULTS,), config=INTERFACES)
    body = srv.get_json(IFS + qs(**{"with-defaults": "report-all-tagged"}))
    ifs = {i["name"]: i for i in body["example:interfaces"]["interface"]}
    # RFC 8040 §4.8.9 / RFC 6243 §3.4: default values are tagged with the
    # "default" annotation (RFC 7952 in JSON: "@mtu").
    tag = {"ietf-netconf-with-defaults:default": True}
    assert ifs["eth1"]["mtu"] == 1500 and ifs["eth1"].get("@mtu") == tag
    assert ifs["eth3"]["mtu"] == 1500 and ifs["eth3"].get("@mtu") == tag
    assert ifs["eth0"]["mtu"] == 8192 and "@mtu" not in ifs["eth0"]


def test_with_defaults_report_all_tagged_in_xml(servers):
    # RFC 6243 section 6: in XML the tag is the attribute "default" in the
    # namespace urn:ietf:params:xml:ns:netconf:default:1.0, value "true".
    srv = servers(modules=(DEFAULTS,), config=INTERFACES)
    r = srv.get(IFS + qs(**{"with-defaults": "report-all-tagged"}), accept=YANG_XML)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith(YANG_XML), r.text
    wd = "{urn:ietf:params:xml:ns:netconf:default:1.0}default"
    root = ET.fromstring(r.content)
    tagged = {}
    for iface in (e for e in root.iter() if e.tag.endswith("}interface")):
        name = next(c.text for c in iface if c.tag.endswith("}name"))
        mtu = next(c for c in iface if c.tag.endswith("}mtu"))
        tagged[name] = (mtu.text, mtu.get(wd))
        assert iface.get(wd) is None and all(c.get(wd) is None for c in iface if not c.tag.endswith("}mtu"))
    assert tagged == {"eth0": ("8192", None), "eth1": ("1500", "true"), "eth2": ("9000", None),
                      "eth3": ("1500", "true")}, r.text
    # Without the parameter, nothing is tagged.
    r = srv.get(IFS + qs(**{"with-defaults": "report-all"}), accept=YANG_XML)
    assert r.status_code == 200 and b"netconf:default:1.0" not in r.content, r.text


def test_with_defaults_bad_value_is_400(servers):
    srv = servers(modules=(DEFAULTS,), config=INTERFACES)
    assert_error(srv.get(IFS + qs(**{"with-defaults": "everything"})), 400)


def test_defaults_capability_matches_basic_mode(servers):
    srv = servers(modules=(DEFAULTS,), config=INTERFACES)
    caps = srv.get_json(DATA + "/ietf-restconf-monitoring:restconf-state/capabilities")
    caps = caps["ietf-restconf-monitoring:capabilities"]["capability"]
    # §9.1.2: the server MUST list the defaults capability with its basic-mode.
    modes = [c.split("basic-mode=", 1)[1] for c in caps
             if c.startswith("urn:ietf:params:restconf:capability:defaults:1.0?basic-mode=")]
    assert len(modes) == 1 and modes[0] in {"report-all", "trim", "explicit"}, caps
    expected = {
        "report-all": {"eth0": 8192, "eth1": 1500, "eth2": 9000, "eth3": 1500},
        "trim": {"eth0": 8192, "eth1": None, "eth2": 9000, "eth3": None},
        "explicit": {"eth0": 8192, "eth1": None, "eth2": 9000, "eth3": 1500},
    }[modes[0]]
    # Without "with-defaults" the server reports defaults by its basic-mode.
    assert mtus(srv.get_json(IFS)) == expected


# insert and point (§4.8.5, §4.8.6) on the user-ordered playlist song list


def test_insert_first_and_last(servers):
    srv = servers(config=JUKEBOX_B32)
    assert playlist_order(srv) == [1, 2]
    r = srv.post(PLAYLIST + qs(insert="first"), new_song(3))
    assert r.status_code == 201, r.text
    assert srv.location_path(r) == PLAYLIST + "/song=3"
    r = srv.post(PLAYLIST + qs(insert="last"), new_song(4))
    assert r.status_code == 201, r.text
    r = srv.post(PLAYLIST, new_song(5))  # insert defaults to "last"
    assert r.status_code == 201, r.text
    assert playlist_order(srv) == [3, 1, 2, 4, 5]


def test_insert_before_and_after_point(servers):
    srv = servers(config=JUKEBOX_B32)
    point1 = "/example-jukebox:jukebox/playlist=Foo-One/song=1"
    r = srv.post(PLAYLIST + qs(insert="after", point=point1), new_song(7))
    assert r.status_code == 201, r.text
    assert playlist_order(srv) == [1, 7, 2]
    point2 = "/example-jukebox:jukebox/playlist=Foo-One/song=2"
    r = srv.post(PLAYLIST + qs(insert="before", point=point2), new_song(8))
    assert r.status_code == 201, r.text
    assert playlist_order(srv) == [1, 7, 8, 2]
    r = srv.post(PLAYLIST + qs(insert="before", point=point1), new_song(9))
    assert r.status_code == 201, r.text
    assert playlist_order(srv) == [9, 1, 7, 8, 2]


def test_insert_with_put(servers):
    srv = servers(config=JUKEBOX_B32)
    point = "/example-jukebox:jukebox/playlist=Foo-One/song=1"
    r = srv.put(PLAYLIST + "/song=6" + qs(insert="before", point=point), new_song(6))
    assert r.status_code == 201, r.text
    assert playlist_order(srv) == [6, 1, 2]
    r = srv.put(PLAYLIST + "/song=10" + qs(insert="first"), new_song(10))
    assert r.status_code == 201, r.text
    assert playlist_order(srv) == [10, 6, 1, 2]


@pytest.mark.parametrize("query", [qs(insert="before"), qs(insert="after")])
def test_insert_before_after_needs_point(servers, query):
    srv = servers(config=JUKEBOX_B32)
    # §4.8.5: "before"/"after" without "point" -> 400.
    assert_error(srv.post(PLAYLIST + query, new_song(3)), 400)
    assert playlist_order(srv) == [1, 2]


@pytest.mark.parametrize("query", [
    qs(point="/example-jukebox:jukebox/playlist=Foo-One/song=1"),
    qs(insert="first", point="/example-jukebox:jukebox/playlist=Foo-One/song=1"),
])
def test_point_needs_before_or_after(servers, query):
    srv = servers(config=JUKEBOX_B32)
    # §4.8.6: "point" without insert=before|after -> 400.
    assert_error(srv.post(PLAYLIST + query, new_song(3)), 400)
    assert playlist_order(srv) == [1, 2]


def test_insert_bad_value_is_400(servers):
    srv = servers(config=JUKEBOX_B32)
    assert_error(srv.post(PLAYLIST + qs(insert="middle"), new_song(3)), 400)
    assert playlist_order(srv) == [1, 2]


def test_insert_on_system_ordered_list_is_400(servers):
    srv = servers(config=JUKEBOX_B32)
    # §4.8.5: only for lists and leaf-lists that are "ordered-by user".
    r = srv.post(JB + "/library" + qs(insert="first"), {"example-jukebox:artist": [{"name": "Zed"}]})
    assert_error(r, 400)
    assert not srv.exists(JB + "/library/artist=Zed")


def test_point_to_missing_entry_stores_nothing(servers):
    srv = servers(config=JUKEBOX_B32)
    point = "/example-jukebox:jukebox/playlist=Foo-One/song=99"
    r = srv.post(PLAYLIST + qs(insert="after", point=point), new_song(3))
    # The RFC fixes no status for a point that does not exist (RFC 7950 §15.7
    # names bad-attribute / missing-instance, 400).
    assert_error(r, {400, 404, 409})
    assert playlist_order(srv) == [1, 2]


# filter (canopy's reading of issue 12: an XPath on data resources)


def test_filter_on_data_is_an_xpath(servers):
    # NOTE: RFC 8040 §4.8.4 allows "filter" only on event streams (400
    # elsewhere); canopy's issue 12 makes it an XPath on /restconf/data too.
    srv = servers(config=TWO_ARTISTS)
    r = srv.get(DATA + qs(filter="/example-jukebox:jukebox/library/artist[name='Foo Fighters']"))
    assert r.status_code == 200, r.text
    data = unwrap_data(r.json())
    artists = data["example-jukebox:jukebox"]["library"]["artist"]
    assert [a["name"] for a in artists] == ["Foo Fighters"]
    r = srv.get(DATA + qs(filter="/example-jukebox:jukebox/library/artist[album/year<2000]/name"))
    assert r.status_code == 200, r.text
    artists = unwrap_data(r.json()).get("example-jukebox:jukebox", {}).get("library", {}).get("artist")
    assert artists == [{"name": "Nick Cave and the Bad Seeds"}], r.text


def test_filter_selects_a_leaf_of_every_entry(servers):
    # An XPath, not an instance path: a list step without a predicate selects
    # every entry.
    srv = servers(config=TWO_ARTISTS)
    r = srv.get(DATA + qs(filter="/example-jukebox:jukebox/library/artist/name"))
    assert r.status_code == 200, r.text
    artists = unwrap_data(r.json())["example-jukebox:jukebox"]["library"]["artist"]
    assert sorted(a["name"] for a in artists) == ["Foo Fighters", "Nick Cave and the Bad Seeds"]
    assert all(set(a) == {"name"} for a in artists), artists


def filter_on_a_leaf_that_is_not_a_key(srv, resource):
    # `album[year=2011]` is an XPath predicate, not an entry's keys (the
    # album list's key is its name): it selects the albums of that year,
    # and an absolute path with it is not refused as a bad key.
    base = "/example-jukebox:jukebox/library/artist[name='Foo Fighters']/album"
    r = srv.get(resource + qs(filter=base + "[year=2011]/name"))
    assert r.status_code == 200, r.text
    artists = unwrap_data(r.json())["example-jukebox:jukebox"]["library"]["artist"]
    assert artists == [{"name": "Foo Fighters", "album": [{"name": "Wasting Light"}]}], r.text
    # Nick Cave's album is of 1988, not Foo Fighters'.
    r = srv.get(resource + qs(filter=base + "[year=1988]"))
    assert r.status_code == 200, r.text
    assert "Tender Prey" not in r.text, r.text
    r = srv.get(resource + qs(filter="/example-jukebox:jukebox/library/artist/album[year=1988]/name"))
    assert r.status_code == 200, r.text
    assert "Tender Prey" in r.text and "Wasting Light" not in r.text, r.text


def test_filter_predicate_on_a_leaf_that_is_not_a_key_in_running(servers):
    filter_on_a_leaf_that_is_not_a_key(servers(config=TWO_ARTISTS), DS + "running")


def test_filter_predicate_on_a_leaf_that_is_not_a_key_in_the_operational_view(servers):
    filter_on_a_leaf_that_is_not_a_key(servers(config=TWO_ARTISTS), DATA)


def test_filter_bad_xpath_is_400(servers):
    srv = servers(config=TWO_ARTISTS)
    assert_error(srv.get(DATA + qs(filter="/example-jukebox:jukebox/library/artist[")), 400)


# --- media types (§5.2) ---------------------------------------------------------------------------


def test_xml_request_body(jukebox):
    jukebox.post(DATA, {"example-jukebox:jukebox": {}})
    xml = f'<artist xmlns="{JB_NS}"><name>Foo Fighters</name></artist>'
    r = jukebox.post(JB + "/library", xml, ctype=YANG_XML)
    assert r.status_code == 201, r.text
    assert jukebox.get_json(FOO) == {"example-jukebox:artist": [{"name": "Foo Fighters"}]}


def test_accept_preference(servers):
    srv = servers(config=TWO_ARTISTS)
    r = srv.get(ALBUM + "/year", accept=f"{YANG_JSON};q=0.4, {YANG_XML}")
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith(YANG_XML)
    r = srv.get(ALBUM + "/year", accept="application/*")
    assert r.status_code == 200
    assert r.headers["Content-Type"].split(";")[0] in (YANG_JSON, YANG_XML)


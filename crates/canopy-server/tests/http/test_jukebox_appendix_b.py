"""The examples of RFC 8040 Appendix B, with the example-jukebox module of
Appendix A, as written there: same requests, same statuses, same bodies up to
what the RFC leaves to the server (member order, Date/ETag values, the host
part of Location, decimal64 as a JSON string per RFC 7951).

Left out because they are not about data resources: B.3.6 ("filter"), B.3.7
("start-time") and B.3.8 ("stop-time") read notification event streams.
Appendix B's sections build on each other's data; each test here starts from
its own store holding what the section assumes.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET

import pytest

from conftest import (
    DATA,
    DEFAULTS,
    DS,
    EVENTS,
    JB,
    JUKEBOX,
    JUKEBOX_B32,
    SYSTEM,
    YANG_JSON,
    YANG_XML,
    norm,
    qs,
    song_id,
    unwrap_data,
)

XRD_NS = "http://docs.oasis-open.org/ns/xri/xrd-1.0"
RC_NS = "urn:ietf:params:xml:ns:yang:ietf-restconf"
MON_NS = "urn:ietf:params:xml:ns:yang:ietf-restconf-monitoring"
FOO = JB + "/library/artist=Foo%20Fighters"
NICK = JB + "/library/artist=Nick%20Cave%20and%20the%20Bad%20Seeds"


def jukebox_of(srv) -> dict:
    return srv.get_json(JB)["example-jukebox:jukebox"]


def artists(srv) -> dict[str, list]:
    lib = jukebox_of(srv).get("library", {})
    return {a["name"]: sorted((al["name"], al.get("year")) for al in a.get("album", []))
            for a in lib.get("artist", [])}


# --- B.1 Resource Retrieval Examples -------------------------------------------------


def test_b_1_1_retrieve_the_top_level_api_resource(jukebox):
    r = jukebox.get("/.well-known/host-meta", accept="application/xrd+xml")
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("application/xrd+xml")
    root = ET.fromstring(r.content)
    links = root.findall(f"{{{XRD_NS}}}Link")
    assert [(l.get("rel"), l.get("href")) for l in links if l.get("rel") == "restconf"] == [
        ("restconf", "/restconf")
    ]

    r = jukebox.get("/restconf", accept=YANG_JSON)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith(YANG_JSON)
    body = r.json()["ietf-restconf:restconf"]
    assert body["data"] == {}
    assert isinstance(body["operations"], dict)
    assert body["yang-library-version"] in ("2016-06-21", "2019-01-04"), body


def test_b_1_1_retrieve_the_top_level_api_resource_xml(jukebox):
    version = jukebox.get_json("/restconf")["ietf-restconf:restconf"]["yang-library-version"]
    r = jukebox.get("/restconf", accept=YANG_XML)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith(YANG_XML)
    root = ET.fromstring(r.content)
    assert root.tag == f"{{{RC_NS}}}restconf"
    assert root.findtext(f"{{{RC_NS}}}yang-library-version") == version


def test_b_1_2_retrieve_the_server_module_information(jukebox):
    version = jukebox.get_json("/restconf/yang-library-version")["ietf-restconf:yang-library-version"]
    if version == "2016-06-21":
        # The RFC's own request (RFC 7895's modules-state).
        lib = jukebox.get_json(DATA + "/ietf-yang-library:modules-state")
        lib = lib["ietf-yang-library:modules-state"]
        assert lib["module-set-id"]
        modules = lib["module"]
    else:
        # An NMDA server (RFC 8527 §2) implements RFC 8525's yang-library,
        # read from the operational datastore; module-set replaces module list.
        lib = jukebox.get_json(DS + "operational/ietf-yang-library:yang-library")
        lib = lib["ietf-yang-library:yang-library"]
        assert lib["content-id"]
        modules = [m for s in lib["module-set"] for m in s.get("module", [])]
    jb = [m for m in modules if m["name"] == "example-jukebox"]
    assert len(jb) == 1, modules
    assert jb[0]["revision"] == "2016-08-15"
    assert jb[0]["namespace"] == "http://example.com/ns/example-jukebox"
    if version == "2016-06-21":
        assert jb[0]["conformance-type"] == "implement"


def test_b_1_2_module_schema_can_be_downloaded(jukebox):
    # RFC 7895 "schema" / RFC 8525 "location": a URL the module's text is read
    # from; issue 12 has canopy serve it under /restconf/yang/.
    version = jukebox.get_json("/restconf/yang-library-version")["ietf-restconf:yang-library-version"]
    if version == "2016-06-21":
        modules = jukebox.get_json(DATA + "/ietf-yang-library:modules-state")[
            "ietf-yang-library:modules-state"]["module"]
        urls = [m.get("schema") for m in modules if m["name"] == "example-jukebox"]
    else:
        lib = jukebox.get_json(DS + "operational/ietf-yang-library:yang-library")
        urls = [loc for s in lib["ietf-yang-library:yang-library"]["module-set"]
                for m in s.get("module", []) if m["name"] == "example-jukebox"
                for loc in m.get("location", [])]
    assert urls and urls[0], "no download URL for example-jukebox"
    url = urls[0]
    path = url if url.startswith("/") else "/" + url.split("/", 3)[3]
    r = jukebox.get(path, accept=None)
    assert r.status_code == 200, r.text
    assert "module example-jukebox" in r.text
    assert 'revision "2016-08-15"' in r.text


def test_b_1_3_retrieve_the_server_capability_information(jukebox):
    r = jukebox.get(DATA + "/ietf-restconf-monitoring:restconf-state/capabilities", accept=YANG_XML)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith(YANG_XML)
    root = ET.fromstring(r.content)
    assert root.tag == f"{{{MON_NS}}}capabilities"
    caps = [c.text.strip() for c in root.findall(f"{{{MON_NS}}}capability")]
    basic = [c for c in caps if c.startswith("urn:ietf:params:restconf:capability:defaults:1.0?basic-mode=")]
    assert len(basic) == 1, caps


# --- B.2 Data Resource and Datastore Resource Examples --------------------------------


def test_b_2_1_create_new_data_resources(jukebox):
    # The RFC assumes the jukebox container exists.
    assert jukebox.post(DATA, {"example-jukebox:jukebox": {}}).status_code == 201

    r = jukebox.post(JB + "/library", {"example-jukebox:artist": [{"name": "Foo Fighters"}]})
    assert r.status_code == 201, r.text
    assert jukebox.location_path(r) == "/restconf/data/example-jukebox:jukebox/library/artist=Foo%20Fighters"
    assert r.headers.get("Last-Modified") and r.headers.get("ETag")

    r = jukebox.post(
        FOO,
        '<album xmlns="http://example.com/ns/example-jukebox">\n'
        "  <name>Wasting Light</name>\n"
        "  <year>2011</year>\n"
        "</album>\n",
        ctype=YANG_XML,
    )
    assert r.status_code == 201, r.text
    assert jukebox.location_path(r) == (
        "/restconf/data/example-jukebox:jukebox/library/artist=Foo%20Fighters/album=Wasting%20Light"
    )
    assert r.headers.get("Last-Modified") and r.headers.get("ETag")
    assert artists(jukebox) == {"Foo Fighters": [("Wasting Light", 2011)]}


def test_b_2_2_detect_datastore_resource_entity_tag_change(servers):
    srv = servers(config={"example-jukebox:jukebox": {"library": {"artist": [
        {"name": "Foo Fighters", "album": [{"name": "Wasting Light", "year": 2011}]}]}}})
    genre = FOO + "/album=Wasting%20Light/genre"
    # The client cached the datastore's Last-Modified ...
    cached = srv.head(DATA).headers.get("Last-Modified")
    assert cached, "the datastore resource has no Last-Modified"
    time.sleep(1.1)  # HTTP-date has a resolution of one second
    # ... another client then changed the datastore (here: this very leaf, so
    # that per-resource timestamps, canopy's, see the change too) ...
    assert srv.put(genre, {"example-jukebox:genre": "example-jukebox:rock"}).status_code in (201, 204)
    # ... so the RFC's request fails.
    r = srv.put(
        genre,
        '<genre xmlns="http://example.com/ns/example-jukebox"\n'
        '  xmlns:jbox="http://example.com/ns/example-jukebox">jbox:alternative</genre>',
        ctype=YANG_XML,
        headers={"If-Unmodified-Since": cached},
    )
    assert r.status_code == 412, r.text
    assert srv.get_json(genre) == {"example-jukebox:genre": "example-jukebox:rock"}


def test_b_2_3_edit_a_datastore_resource(servers):
    srv = servers(modules=(JUKEBOX, SYSTEM))
    r = srv.patch(
        DATA,
        '<data xmlns="urn:ietf:params:xml:ns:yang:ietf-restconf">\n'
        '  <system xmlns="http://example.com/ns/example-system">\n'
        "    <enable-jukebox-streaming>true</enable-jukebox-streaming>\n"
        "  </system>\n"
        '  <jukebox xmlns="http://example.com/ns/example-jukebox">\n'
        "    <library>\n"
        "      <artist>\n"
        "        <name>Foo Fighters</name>\n"
        "      </artist>\n"
        "    </library>\n"
        "  </jukebox>\n"
        "</data>\n",
        ctype=YANG_XML,
    )
    assert r.status_code == 204, r.text
    assert srv.get_json(DATA + "/example-system:system") == {
        "example-system:system": {"enable-jukebox-streaming": True}
    }
    assert artists(srv) == {"Foo Fighters": []}


def test_b_2_4_replace_a_datastore_resource(servers):
    srv = servers(modules=(JUKEBOX, SYSTEM), config={
        "example-system:system": {"enable-jukebox-streaming": True},
        "example-jukebox:jukebox": {"library": {"artist": [
            {"name": "Foo Fighters", "album": [{"name": "Wasting Light", "year": 2011}]},
            {"name": "The Clash"}]}},
    })
    r = srv.put(
        DATA,
        '<data xmlns="urn:ietf:params:xml:ns:yang:ietf-restconf">\n'
        '  <jukebox xmlns="http://example.com/ns/example-jukebox">\n'
        "    <library>\n"
        "      <artist>\n"
        "        <name>Foo Fighters</name>\n"
        "        <album>\n"
        "          <name>One by One</name>\n"
        "          <year>2012</year>\n"
        "        </album>\n"
        "      </artist>\n"
        "      <artist>\n"
        "        <name>Nick Cave and the Bad Seeds</name>\n"
        "        <album>\n"
        "          <name>Tender Prey</name>\n"
        "          <year>1988</year>\n"
        "        </album>\n"
        "      </artist>\n"
        "    </library>\n"
        "  </jukebox>\n"
        "</data>\n",
        ctype=YANG_XML,
    )
    assert r.status_code == 204, r.text
    data = unwrap_data(srv.get_json(DATA + qs(content="config")))
    assert set(data) == {"example-jukebox:jukebox"}, data  # system is gone
    assert artists(srv) == {
        "Foo Fighters": [("One by One", 2012)],
        "Nick Cave and the Bad Seeds": [("Tender Prey", 1988)],
    }


def test_b_2_5_edit_a_data_resource(servers):
    srv = servers(config={"example-jukebox:jukebox": {"library": {"artist": [
        {"name": "Nick Cave and the Bad Seeds", "album": [{"name": "Tender Prey", "year": 1988}]}]}}})
    r = srv.patch(
        NICK,
        '<artist xmlns="http://example.com/ns/example-jukebox">\n'
        "  <name>Nick Cave and the Bad Seeds</name>\n"
        "  <album>\n"
        "    <name>The Good Son</name>\n"
        "    <year>1990</year>\n"
        "  </album>\n"
        "</artist>\n",
        ctype=YANG_XML,
    )
    assert r.status_code == 204, r.text
    assert artists(srv) == {
        "Nick Cave and the Bad Seeds": [("Tender Prey", 1988), ("The Good Son", 1990)]
    }


# --- B.3 Query Parameter Examples ---------------------------------------------------------

EVENTS_CONFIG = {"example-events:events": {"event": [
    {"name": "interface-up", "description": "Interface up notification count"},
    {"name": "interface-down", "description": "Interface down notification count"},
]}}
EVENTS_STATE = {"example-events:events": {"event": [
    {"name": "interface-up", "event-count": 42},
    {"name": "interface-down", "event-count": 4},
]}}


def events_by_name(body: dict) -> dict:
    # "event" is ordered by the system: compare as a map by key.
    return {e["name"]: e for e in body["example-events:events"]["event"]}


def test_b_3_1_content_parameter(servers):
    srv = servers(modules=(EVENTS,), config=EVENTS_CONFIG, state=EVENTS_STATE)
    path = DATA + "/example-events:events"
    everything = srv.get_json(path + qs(content="all"))
    assert events_by_name(everything) == {
        "interface-up": {"name": "interface-up", "description": "Interface up notification count",
                         "event-count": 42},
        "interface-down": {"name": "interface-down", "description": "Interface down notification count",
                           "event-count": 4},
    }
    config = srv.get_json(path + qs(content="config"))
    assert events_by_name(config) == {
        "interface-up": {"name": "interface-up", "description": "Interface up notification count"},
        "interface-down": {"name": "interface-down", "description": "Interface down notification count"},
    }
    nonconfig = srv.get_json(path + qs(content="nonconfig"))
    # As the RFC prints it: the key leaf stays with the state.
    assert events_by_name(nonconfig) == {
        "interface-up": {"name": "interface-up", "event-count": 42},
        "interface-down": {"name": "interface-down", "event-count": 4},
    }


def test_b_3_2_depth_parameter(servers):
    srv = servers(config=JUKEBOX_B32)
    # Example 1: depth=unbounded.
    r = srv.get(JB + qs(depth="unbounded"), accept=YANG_JSON)
    assert r.status_code == 200
    assert norm(r.json()) == norm(JUKEBOX_B32)

    # Example 2: depth=1.
    assert srv.get_json(JB + qs(depth="1")) == {"example-jukebox:jukebox": {}}

    # Example 3: depth=3: the target plus two levels of children.
    body = srv.get_json(JB + qs(depth="3"))["example-jukebox:jukebox"]
    assert set(body) == {"library", "playlist", "player"}, body
    assert norm(body["player"]) == {"gap": 0.5}
    playlist = body["playlist"]
    assert len(playlist) == 1
    assert playlist[0]["name"] == "Foo-One"
    assert playlist[0]["description"] == "example playlist 1"
    # The song entries are level-3 nodes whose children are cut off; the RFC
    # prints them as "song" : {}. Whether an entry cut off by depth keeps its
    # key leaves is not fixed; its other children must not appear.
    for song in playlist[0].get("song") or []:
        assert set(song) <= {"index"}, playlist
    # The artist entries too: a name at most, no album.
    for artist in body["library"].get("artist") or []:
        assert set(artist) <= {"name"}, body["library"]


def test_b_3_3_fields_parameter(jukebox):
    version = jukebox.get_json("/restconf/yang-library-version")["ietf-restconf:yang-library-version"]
    r = jukebox.get(DATA + "?fields=ietf-yang-library:modules-state/module(name;revision)")
    if r.status_code in (400, 404) and version != "2016-06-21":
        pytest.skip("modules-state (RFC 7895) is not served; this NMDA server announces yang-library "
                    + version + " (see test_fields_on_yang_library_nmda)")
    assert r.status_code == 200, r.text
    data = unwrap_data(r.json())
    assert list(data) == ["ietf-yang-library:modules-state"], data
    state = data["ietf-yang-library:modules-state"]
    assert list(state) == ["module"]  # module-set-id is not selected
    assert all(set(m) == {"name", "revision"} for m in state["module"]), state
    assert {"name": "example-jukebox", "revision": "2016-08-15"} in state["module"]


def test_fields_on_yang_library_nmda(jukebox):
    # B.3.3's query rewritten for RFC 8525's yang-library (NMDA servers).
    version = jukebox.get_json("/restconf/yang-library-version")["ietf-restconf:yang-library-version"]
    if version == "2016-06-21":
        pytest.skip("the server announces RFC 7895's yang-library; B.3.3 covers it")
    r = jukebox.get(DS + "operational" + qs(fields="ietf-yang-library:yang-library/module-set(name;module(name;revision))"))
    assert r.status_code == 200, r.text
    data = unwrap_data(r.json())
    assert list(data) == ["ietf-yang-library:yang-library"], data
    sets = data["ietf-yang-library:yang-library"]["module-set"]
    mods = [m for s in sets for m in s.get("module", [])]
    assert all(set(m) <= {"name", "revision"} for m in mods), mods
    assert {"name": "example-jukebox", "revision": "2016-08-15"} in mods


def _playlist_store(servers):
    # The library the playlists refer to, and a Foo-One playlist whose one
    # song (index 5) lets "first" be told apart from "last".
    doc = {"example-jukebox:jukebox": {
        "library": JUKEBOX_B32["example-jukebox:jukebox"]["library"],
        "playlist": [{"name": "Foo-One", "description": "example playlist 1",
                      "song": [{"index": 5, "id": song_id("Wasting Light")}]}],
    }}
    return servers(config=doc)


def order(srv) -> list[int]:
    pl = srv.get_json(JB + "/playlist=Foo-One")["example-jukebox:playlist"][0]
    return [s["index"] for s in pl.get("song", [])]


def test_b_3_4_insert_parameter(servers):
    srv = _playlist_store(servers)
    r = srv.post(
        JB + "/playlist=Foo-One?insert=first",
        {"example-jukebox:song": [{"index": 1, "id": song_id("Rope")}]},
    )
    assert r.status_code == 201, r.text
    assert srv.location_path(r) == "/restconf/data/example-jukebox:jukebox/playlist=Foo-One/song=1"
    assert r.headers.get("Last-Modified") and r.headers.get("ETag")
    assert order(srv) == [1, 5]


def test_b_3_5_point_parameter(servers):
    srv = _playlist_store(servers)
    assert srv.post(JB + "/playlist=Foo-One?insert=first",
                    {"example-jukebox:song": [{"index": 1, "id": song_id("Rope")}]}).status_code == 201
    r = srv.post(
        JB + "/playlist=Foo-One?insert=after&point=%2Fexample-jukebox%3Ajukebox%2Fplaylist%3DFoo-One%2Fsong%3D1",
        {"example-jukebox:song": [{"index": 2, "id": song_id("Bridge Burning")}]},
    )
    assert r.status_code == 201, r.text
    assert srv.location_path(r) == "/restconf/data/example-jukebox:jukebox/playlist=Foo-One/song=2"
    assert r.headers.get("Last-Modified") and r.headers.get("ETag")
    assert order(srv) == [1, 2, 5]


def test_b_3_9_with_defaults_parameter(servers):
    srv = servers(
        modules=(DEFAULTS,),
        config={"example:interfaces": {"interface": [{"name": "eth1"}]}},
        state={"example:interfaces": {"interface": [{"name": "eth1", "status": "up"}]}},
    )
    r = srv.get(DATA + "/example:interfaces/interface=eth1?with-defaults=report-all-tagged",
                accept=YANG_JSON)
    assert r.status_code == 200, r.text
    assert r.json() == {
        "example:interface": [
            {
                "name": "eth1",
                "mtu": 1500,
                "@mtu": {"ietf-netconf-with-defaults:default": True},
                "status": "up",
            }
        ]
    }

"""RESTCONF for NMDA (RFC 8527): the datastore resources under /restconf/ds,
the read-only operational datastore and its "with-origin" parameter."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from conftest import (
    DATA,
    DS,
    JB,
    JUKEBOX_B32,
    JUKEBOX_STATE,
    YANG_XML,
    assert_error,
    norm,
    unwrap_data,
)

DATASTORES = ["running", "candidate", "startup", "operational"]
WRITABLE = ["running", "candidate", "startup"]
FOO_REL = "/example-jukebox:jukebox/library/artist=Foo%20Fighters"
PLAYER = "/example-jukebox:jukebox/player"
ORIGINS = {"intended", "dynamic", "system", "learned", "default", "unknown"}


def ds(name: str, rel: str = "") -> str:
    return DS + name + rel


def allow_of(resp) -> set[str]:
    return {m.strip().upper() for m in resp.headers.get("Allow", "").split(",") if m.strip()}


def gap_in(srv, name: str):
    r = srv.get(ds(name, PLAYER + "/gap"))
    if r.status_code == 404:
        return None
    assert r.status_code == 200, r.text
    return norm(r.json())["example-jukebox:gap"]


@pytest.fixture
def srv(servers):
    return servers(config=JUKEBOX_B32, state=JUKEBOX_STATE)


@pytest.mark.parametrize("name", DATASTORES)
def test_datastore_resource(srv, name):
    data = unwrap_data(srv.get_json(ds(name)))
    if name != "startup":  # startup was never written: it may be empty
        assert "example-jukebox:jukebox" in data, data


@pytest.mark.parametrize("name", DATASTORES)
def test_datastore_resource_xml(srv, name):
    r = srv.get(ds(name), accept=YANG_XML)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith(YANG_XML)


def test_unknown_datastore(srv):
    assert_error(srv.get(ds("nonesuch")), {400, 404})
    assert_error(srv.get(DS.replace("ietf-datastores:", "no-such-module:") + "running"), {400, 404})


def test_data_resource_in_a_datastore(srv):
    body = srv.get_json(ds("running", FOO_REL))
    assert body["example-jukebox:artist"][0]["name"] == "Foo Fighters"


def test_writes_through_data_land_in_running(srv):
    assert srv.put(JB + "/player/gap", {"example-jukebox:gap": "1.5"}).status_code == 204
    assert gap_in(srv, "running") == 1.5
    assert gap_in(srv, "operational") == 1.5
    assert srv.put(ds("running", PLAYER + "/gap"), {"example-jukebox:gap": "1.0"}).status_code == 204
    assert norm(srv.get_json(JB + "/player/gap")) == {"example-jukebox:gap": 1.0}


def test_running_has_no_state_operational_and_data_have_it(srv):
    running = srv.get_json(ds("running", "/example-jukebox:jukebox/library"))["example-jukebox:library"]
    assert "artist-count" not in running and running["artist"][0]["name"] == "Foo Fighters"
    oper = srv.get_json(ds("operational", "/example-jukebox:jukebox/library"))["example-jukebox:library"]
    assert oper["artist-count"] == 42 and oper["artist"][0]["name"] == "Foo Fighters"
    data = srv.get_json(JB + "/library")["example-jukebox:library"]
    assert data["artist-count"] == 42 and data["artist"][0]["name"] == "Foo Fighters"


# --- operational is read-only ----------------------------------------------------------------


@pytest.mark.parametrize(
    "method,rel,body",
    [
        ("PUT", PLAYER + "/gap", {"example-jukebox:gap": "1.5"}),
        ("PATCH", PLAYER, {"example-jukebox:player": {"gap": "1.5"}}),
        ("POST", "/example-jukebox:jukebox/library", {"example-jukebox:artist": [{"name": "Op"}]}),
        ("DELETE", FOO_REL, None),
        ("PUT", "/example-jukebox:jukebox/library/artist-count", {"example-jukebox:artist-count": 1}),
        ("PUT", "", {"ietf-restconf:data": {}}),
    ],
)
def test_operational_refuses_writes_with_405(srv, method, rel, body):
    r = srv.request(method, ds("operational", rel), body)
    assert_error(r, 405)
    allow = allow_of(r)
    assert "GET" in allow and not allow & {"PUT", "POST", "PATCH", "DELETE"}, r.headers
    assert gap_in(srv, "operational") == 0.5
    assert srv.exists(ds("operational", FOO_REL))
    assert not srv.exists(ds("operational", "/example-jukebox:jukebox/library/artist=Op"))
    assert srv.get_json(ds("operational", "/example-jukebox:jukebox/library/artist-count")) == {
        "example-jukebox:artist-count": 42}


def test_operational_options(srv):
    r = srv.options(ds("operational", FOO_REL))
    assert 200 <= r.status_code < 300
    allow = allow_of(r)
    assert {"GET", "HEAD", "OPTIONS"} <= allow and not allow & {"PUT", "POST", "PATCH", "DELETE"}, r.headers


# --- candidate and startup -------------------------------------------------------------------------


def test_candidate_starts_as_running(srv):
    # NETCONF's candidate (RFC 6241 §8.3) is a copy of running until edited.
    assert norm(unwrap_data(srv.get_json(ds("candidate")))) == norm(unwrap_data(srv.get_json(ds("running"))))


def test_candidate_edits_do_not_touch_running(srv):
    r = srv.put(ds("candidate", PLAYER + "/gap"), {"example-jukebox:gap": "1.9"})
    assert r.status_code == 204, r.text
    r = srv.post(ds("candidate", "/example-jukebox:jukebox/library"), {"example-jukebox:artist": [{"name": "Cand"}]})
    assert r.status_code == 201, r.text
    assert srv.location_path(r) == ds("candidate", "/example-jukebox:jukebox/library/artist=Cand")
    assert srv.delete(ds("candidate", FOO_REL)).status_code == 204
    assert gap_in(srv, "candidate") == 1.9
    assert srv.exists(ds("candidate", "/example-jukebox:jukebox/library/artist=Cand"))
    assert not srv.exists(ds("candidate", FOO_REL))
    # running, /restconf/data and operational are as they were.
    assert gap_in(srv, "running") == 0.5 and gap_in(srv, "operational") == 0.5
    assert srv.exists(ds("running", FOO_REL)) and srv.exists(JB + "/library/artist=Foo%20Fighters")
    assert not srv.exists(ds("running", "/example-jukebox:jukebox/library/artist=Cand"))


def test_running_edits_do_not_touch_an_edited_candidate(srv):
    assert srv.put(ds("candidate", PLAYER + "/gap"), {"example-jukebox:gap": "1.9"}).status_code == 204
    assert srv.put(JB + "/library/artist=Run", {"example-jukebox:artist": [{"name": "Run"}]}).status_code == 201
    assert gap_in(srv, "candidate") == 1.9
    assert srv.exists(ds("running", "/example-jukebox:jukebox/library/artist=Run"))


def test_startup_is_its_own_datastore(srv):
    doc = {"ietf-restconf:data": {"example-jukebox:jukebox": {"player": {"gap": "0.2"}}}}
    r = srv.put(ds("startup"), doc)
    assert r.status_code in (201, 204), r.text
    assert gap_in(srv, "startup") == 0.2
    assert not srv.exists(ds("startup", FOO_REL))
    assert gap_in(srv, "running") == 0.5 and srv.exists(ds("running", FOO_REL))


@pytest.mark.parametrize("name", WRITABLE)
def test_conventional_datastores_accept_every_method(srv, name):
    r = srv.options(ds(name, FOO_REL))
    assert {"GET", "PUT", "POST", "PATCH", "DELETE"} <= allow_of(r), r.headers


# --- with-origin (RFC 8527 §3.2.2) ------------------------------------------------------------------


def effective_origins(node, inherited=None, path="", out=None) -> dict[str, str | None]:
    """Each leaf's origin, inherited from its parent where not annotated
    (RFC 8342 §5.3.4), keyed by a schema-ish path; prefixes stripped."""
    out = {} if out is None else out

    def origin_of(meta, default):
        if isinstance(meta, dict) and "ietf-origin:origin" in meta:
            return meta["ietf-origin:origin"].split(":")[-1]
        return default

    here = origin_of(node.get("@"), inherited)
    for name, value in node.items():
        if name.startswith("@"):
            continue
        sub = f"{path}/{name.split(':')[-1]}"
        meta = node.get("@" + name)
        if isinstance(value, dict):
            effective_origins(value, here, sub, out)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    effective_origins(item, here, sub, out)
                else:
                    m = meta[i] if isinstance(meta, list) and i < len(meta) else None
                    out[f"{sub}[{i}]"] = origin_of(m, here)
        else:
            out[sub] = origin_of(meta, here)
    return out


def test_with_origin_annotates_operational(srv):
    body = srv.get_json(ds("operational", "/example-jukebox:jukebox/library") + "?with-origin")
    origins = effective_origins(body)
    # Configuration comes from <intended>; the pushed counters do not.
    assert origins["/library/artist/name"] == "intended", origins
    assert origins["/library/artist/album/year"] == "intended", origins
    assert origins["/library/artist-count"] in ORIGINS - {"intended"}, origins
    assert set(origins.values()) <= ORIGINS, origins


def test_with_origin_on_whole_operational_datastore(srv):
    body = unwrap_data(srv.get_json(ds("operational") + "?with-origin"))
    origins = effective_origins(body)
    assert origins["/jukebox/player/gap"] == "intended", origins
    assert origins["/jukebox/library/song-count"] in ORIGINS - {"intended"}, origins


@pytest.mark.parametrize("target", [ds("running"), ds("candidate", FOO_REL), JB])
def test_with_origin_elsewhere_is_400(srv, target):
    # RFC 8527 §3.2.2: only on operational (and datastores derived from it);
    # elsewhere 400 with error-tag invalid-value.
    assert_error(srv.get(target + "?with-origin"), 400, "invalid-value")


def xml_origins(el, inherited=None, path="", out=None, counts=None) -> dict[str, str | None]:
    """effective_origins of an XML reply: the attribute or:origin (RFC 8527
    section 3.2.2, RFC 7952 in XML), its value an identity of ietf-origin."""
    out = {} if out is None else out
    attr = el.get("{urn:ietf:params:xml:ns:yang:ietf-origin}origin")
    here = attr.split(":")[-1] if attr else inherited
    children = list(el)
    if not children:
        out[path] = here
    seen: dict[str, int] = {}
    for c in children:
        local = c.tag.split("}")[-1]
        sub = f"{path}/{local}"
        if len(list(c)) == 0 and sum(1 for x in children if x.tag == c.tag) > 1:  # a leaf-list
            seen[local] = seen.get(local, -1) + 1
            sub = f"{sub}[{seen[local]}]"
        xml_origins(c, here, sub, out)
    return out


@pytest.mark.parametrize("rel", ["/example-jukebox:jukebox/library", ""])
def test_with_origin_in_xml(srv, rel):
    # The same origins as the JSON reply, as attributes or:origin whose
    # values are identities with the prefix bound to ietf-origin's namespace.
    r = srv.get(ds("operational", rel) + "?with-origin", accept=YANG_XML)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith(YANG_XML), r.text
    assert b'xmlns:or="urn:ietf:params:xml:ns:yang:ietf-origin"' in r.content, r.text
    assert b'or:origin="or:intended"' in r.content, r.text
    root = ET.fromstring(r.content)
    top = root if rel else root.find("{http://example.com/ns/example-jukebox}jukebox")
    assert top is not None, r.text
    origins = xml_origins(top, path="/" + top.tag.split("}")[-1])
    body = srv.get_json(ds("operational", rel) + "?with-origin")
    if not rel:
        body = {"example-jukebox:jukebox": unwrap_data(body)["example-jukebox:jukebox"]}
    expected = effective_origins(body)
    for leaf in ("/library/artist/name", "/library/artist/album/year", "/library/artist-count"):
        key = leaf if rel else "/jukebox" + leaf
        assert origins[key] == expected[key], (key, origins, expected)
    assert set(origins.values()) == set(expected.values()), (origins, expected)


def test_no_origin_without_with_origin(srv):
    # "with-origin" requests the annotations; without it none are sent (our
    # reading of RFC 8527 §3.2.2, which presents them as requested).
    body = srv.get_json(ds("operational", "/example-jukebox:jukebox"))
    assert "ietf-origin:origin" not in str(body), body


def test_whole_operational_datastore_holds_the_yang_library(srv):
    # RFC 8527 section 2: the YANG library is state in <operational>.
    for path in (ds("operational"), DATA):
        data = unwrap_data(srv.get_json(path))
        assert set(data) >= {"example-jukebox:jukebox", "ietf-yang-library:yang-library"}, data
        sets = data["ietf-yang-library:yang-library"]["module-set"]
        assert any(m["name"] == "example-jukebox" for s in sets for m in s["module"]), sets
    config = unwrap_data(srv.get_json(DATA + "?content=config"))
    assert "ietf-yang-library:yang-library" not in config
    # In XML, after the data, list keys first (RFC 7950 section 7.8.5).
    r = srv.get(ds("operational"), accept=YANG_XML)
    assert r.status_code == 200, r.text
    root = ET.fromstring(r.content)
    lib = root.find("{urn:ietf:params:xml:ns:yang:ietf-yang-library}yang-library")
    assert lib is not None, r.text
    yl = "{urn:ietf:params:xml:ns:yang:ietf-yang-library}"
    entries = lib.findall(yl + "module-set") + lib.findall(yl + "datastore") + lib.findall(f"{yl}module-set/{yl}module")
    assert len(entries) >= 3, r.text
    for entry in entries:
        assert list(entry)[0].tag == yl + "name", ET.tostring(entry)


def test_whole_operational_datastore_holds_restconf_state(srv):
    # RFC 8040 section 9: restconf-state is state data of the server, read
    # with the rest of /restconf/data and of <operational>.
    def by_name(state):
        # The stream list is ordered by the system: compare it by name.
        return {**state, "streams": {"stream": sorted(state["streams"]["stream"], key=lambda s: s["name"])}}

    own = srv.get_json(DATA + "/ietf-restconf-monitoring:restconf-state")["ietf-restconf-monitoring:restconf-state"]
    for path in (ds("operational"), DATA):
        data = unwrap_data(srv.get_json(path))
        assert by_name(data["ietf-restconf-monitoring:restconf-state"]) == by_name(own), data
    assert "ietf-restconf-monitoring:restconf-state" not in unwrap_data(srv.get_json(DATA + "?content=config"))
    assert "ietf-restconf-monitoring:restconf-state" not in unwrap_data(srv.get_json(ds("running")))
    shallow = unwrap_data(srv.get_json(DATA + "?depth=1"))
    assert shallow["ietf-restconf-monitoring:restconf-state"] == {}, shallow
    # In XML: the stream list's key first, and each access entry's.
    r = srv.get(DATA, accept=YANG_XML)
    assert r.status_code == 200, r.text
    rm = "{urn:ietf:params:xml:ns:yang:ietf-restconf-monitoring}"
    state = ET.fromstring(r.content).find(rm + "restconf-state")
    assert state is not None, r.text
    streams = state.findall(f"{rm}streams/{rm}stream")
    assert sorted(s.find(rm + "name").text for s in streams) == ["candidate", "operational", "running", "startup"]
    for s in streams:
        assert list(s)[0].tag == rm + "name", ET.tostring(s)
        for a in s.findall(rm + "access"):
            assert list(a)[0].tag == rm + "encoding", ET.tostring(a)

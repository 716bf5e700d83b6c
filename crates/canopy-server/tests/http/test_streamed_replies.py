"""Replies written while they are read (docs/server.md): large RESTCONF and
CPS reads come with chunked transfer encoding, keep their status, ETag and
Last-Modified, and carry exactly the bytes of the same read answered the
buffered way; errors found before the reply starts are whole error replies."""

from __future__ import annotations

import pytest

from conftest import DATA, DS, JUKEBOX_B32, YANG_JSON, YANG_XML, assert_error
from cps_support import Cps, assert_cps_error, network, start

JB = "example-jukebox:jukebox"


@pytest.fixture
def srv(servers):
    return servers(config=JUKEBOX_B32)


def chunked(r) -> bool:
    return r.headers.get("Transfer-Encoding", "").lower() == "chunked"


READS = [DS + "running", DS + "running/" + JB, DS + "running/" + JB + "/library",
         DS + "running/" + JB + "/library/artist=Foo%20Fighters",
         DS + "running/" + JB + "/library/artist=Foo%20Fighters/album=Wasting%20Light",
         DS + "running/" + JB + "/playlist=Foo-One"]


@pytest.mark.parametrize("accept", [YANG_JSON, YANG_XML])
@pytest.mark.parametrize("path", READS)
def test_restconf_reads_of_running_stream_with_validators(srv, path, accept):
    r = srv.get(path, accept=accept)
    assert r.status_code == 200, r.text
    assert chunked(r), r.headers
    h = srv.head(path, accept=accept)
    assert (r.headers["ETag"], r.headers["Last-Modified"]) == (h.headers["ETag"], h.headers["Last-Modified"])
    assert r.headers["Content-Type"].startswith(accept)
    # The same data read the buffered way (content=config filters by schema):
    # the same bytes.
    rest = path[len(DS + "running"):]
    b = srv.get(DATA + rest + "?content=config", accept=accept)
    assert b.status_code == 200 and not chunked(b)
    assert r.content == b.content


@pytest.mark.parametrize("accept", [YANG_JSON, YANG_XML])
def test_restconf_read_of_an_empty_datastore_streams(servers, accept):
    srv = servers()
    r = srv.get(DS + "running", accept=accept)
    assert r.status_code == 200 and chunked(r), r.headers
    b = srv.get(DATA + "?content=config", accept=accept)
    assert b.status_code == 200 and not chunked(b)
    assert r.content == b.content


def test_restconf_missing_target_is_a_whole_error(srv):
    r = srv.get(DS + "running/" + JB + "/library/artist=Nobody")
    assert_error(r, 404)
    assert not chunked(r)


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    srv = start(tmp_path_factory.mktemp("cps-stream"))
    c = Cps(srv)
    c.setup("ds", "net", ("deep-network.yang",), ("a",))
    assert c.create("ds", "a", network(60, interfaces=3, units=3)).status_code == 201
    yield c
    assert srv.stop() == 0, srv.stderr_tail()


@pytest.mark.parametrize("xpath", ["/", "/network"])
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_cps_get_node_streams_the_buffered_bytes(net, xpath, version):
    node = f"/{version}/dataspaces/ds/anchors/a/node"
    all_levels = {"include-descendants": "true"} if version == "v1" else {"descendants": "all"}
    s = net.get(node, xpath=xpath, **all_levels)
    assert s.status_code == 200 and chunked(s), s.headers
    # A depth deeper than the data is read the buffered way: the same reply.
    if version == "v2":
        b = net.get(node, xpath=xpath, descendants="50")
        assert b.status_code == 200 and not chunked(b)
        assert s.content == b.content
    assert len(s.content) > 50_000


def test_cps_query_inside_one_list_streams(net):
    r = net.query("ds", "a", "//device[@vendor='acme']", descendants="all")
    assert r.status_code == 200 and chunked(r), r.headers
    ids = [n["dn:device"]["id"] for n in r.json()]
    assert sorted(ids) == sorted(f"dev-{d}" for d in range(0, 60, 2))
    assert ids == sorted(ids), "in key order"
    units = net.query("ds", "a", "//unit[@vlan>5900]")
    assert chunked(units)
    assert units.json() and all(u["dn:unit"]["vlan"] > 5900 for u in units.json())


def test_cps_errors_come_before_the_reply(net):
    assert_cps_error(net.get("/v2/dataspaces/ds/anchors/a/node", xpath="/nothing", descendants="all"), 400)
    assert_cps_error(net.query("ds", "a", "//device[@vendor="), 400)


def test_cps_one_device_is_the_buffered_reply_in_every_version(net):
    xpath = "/network/device[@id='dev-7']"
    for version, all_levels in [("v1", {"include-descendants": "true"}), ("v2", {"descendants": "all"}),
                                ("v3", {"descendants": "all"})]:
        node = f"/{version}/dataspaces/ds/anchors/a/node"
        s = net.get(node, xpath=xpath, **all_levels)
        assert s.status_code == 200, s.text
        assert s.headers["Content-Type"].startswith("application/json")
        if version != "v1":
            # A depth deeper than the data takes the tree handler: the same bytes.
            b = net.get(node, xpath=xpath, descendants="50")
            assert s.content == b.content, version
    device = net.get("/v2/dataspaces/ds/anchors/a/node", xpath=xpath, descendants="all").json()
    (d,) = [n["dn:device"] for n in device]
    assert d["id"] == "dev-7" and [i["name"] for i in d["interface"]] == ["eth0", "eth1", "eth2"]
    assert d["interface"][1]["unit"][2] == {"number": 2, "vlan": 712, "counters": {"in-octets": 2, "out-octets": 4}}
    missing = net.get("/v2/dataspaces/ds/anchors/a/node", xpath="/network/device[@id='nope']", descendants="all")
    assert_cps_error(missing, 404)


@pytest.mark.parametrize("cps_path", [
    "//device[@id='dev-7']",
    "/network/device[@id='dev-7']",
    "/network/device[@id='dev-3']/route[@destination='10.0.0.0' and @prefix-length='16']",
    "//route[@prefix-length='16' and @destination='10.0.0.0']",
    # A key spelled otherwise than stored: the query compares texts, so nothing.
    "/network/device[@id='dev-3']/route[@destination='10.0.0.0' and @prefix-length='016']",
    "//device[@id='nope']",
])
def test_cps_query_of_one_entry_by_its_keys_is_the_buffered_reply(net, cps_path):
    s = net.query("ds", "a", cps_path, descendants="all")
    b = net.query("ds", "a", cps_path, descendants="50")
    assert s.status_code == 200 and b.status_code == 200, (s.text, b.text)
    assert s.content == b.content
    if "016" in cps_path or "nope" in cps_path:
        assert s.json() == []
    elif "route" in cps_path and "dev-3" in cps_path:
        assert s.json() == [{"dn:route": {"destination": "10.0.0.0", "next-hop": "198.51.100.3", "prefix-length": 16}}]
    elif "route" not in cps_path:
        assert [n["dn:device"]["id"] for n in s.json()] == ["dev-7"]


def test_cps_user_ordered_lists_inside_entries_keep_their_order(tmp_path):
    srv = start(tmp_path)
    try:
        c = Cps(srv)
        c.setup("ds", "hops", ("ordered-hops.yang",), ("a",))
        doc = {"paths": {"path": [
            {"name": "p1", "hop": [{"address": "z"}, {"address": "b"}, {"address": "m"}]},
            {"name": "p2", "hop": [{"address": "y"}, {"address": "a"}]},
        ]}}
        assert c.create("ds", "a", doc).status_code == 201
        whole = c.get("/v2/dataspaces/ds/anchors/a/node", xpath="/paths", descendants="all").json()
        (paths,) = [n["oh:paths"] for n in whole]
        assert [[h["address"] for h in p["hop"]] for p in paths["path"]] == [["z", "b", "m"], ["y", "a"]]
        one = c.get("/v2/dataspaces/ds/anchors/a/node", xpath="/paths/path[@name='p1']", descendants="all").json()
        assert [h["address"] for h in one[0]["oh:path"]["hop"]] == ["z", "b", "m"]
        q = c.query("ds", "a", "//path[@name='p2']", descendants="all").json()
        assert [h["address"] for h in q[0]["oh:path"]["hop"]] == ["y", "a"]
    finally:
        assert srv.stop() == 0, srv.stderr_tail()

"""CPS REST data API over `canopy serve`: GET node (v1, v2, v3 with
descendants), POST/PUT/PATCH/DELETE nodes, POST/PUT/DELETE list-nodes,
dry-run, observed-timestamp, and the errors CPS gives."""

from __future__ import annotations

import copy
import json

import pytest

from cps_support import BOOKSTORE_DATA, STORES_DATA, Cps, assert_cps_error, network, start

NODE = "/v2/dataspaces/ds/anchors/a/node"
NODES = "/v2/dataspaces/ds/anchors/a/nodes"
LIST_NODES = "/v2/dataspaces/ds/anchors/a/list-nodes"


@pytest.fixture
def cps(tmp_path):
    srv = start(tmp_path)
    c = Cps(srv)
    c.setup("ds", "ss", ("stores.yang",), ("a",))
    yield c
    assert srv.stop() == 0, srv.stderr_tail()


@pytest.fixture
def stores(cps):
    r = cps.create("ds", "a", STORES_DATA)
    assert r.status_code == 201, r.text
    return cps


SCIFI_LEAVES = {"code": 1, "name": "SciFi", "numberOfBooks": 2}
KIDS_LEAVES = {"code": 2, "name": "Kids", "numberOfBooks": 1}


def test_get_v1_without_descendants(stores):
    r = stores.get("/v1/dataspaces/ds/anchors/a/node", xpath="/shops/bookstore")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("application/json")
    assert r.json() == {"book-store:bookstore": {"bookstore-name": "Chapters", "name": "Chapters"}}


def test_get_v1_include_descendants(stores):
    r = stores.get("/v1/dataspaces/ds/anchors/a/node", xpath="/shops", **{"include-descendants": "true"})
    assert r.json() == {"book-store:shops": STORES_DATA["shops"]}


def test_get_v2_descendants_all(stores):
    assert stores.node("ds", "a", "/shops/bookstore", "all") == [
        {"book-store:bookstore": STORES_DATA["shops"]["bookstore"]}
    ]
    assert stores.node("ds", "a", "/shops/bookstore", "-1") == stores.node("ds", "a", "/shops/bookstore", "all")


@pytest.mark.parametrize("option", ["direct", "1"])
def test_get_v2_descendants_direct(stores, option):
    [node] = stores.node("ds", "a", "/shops/bookstore", option)
    assert node == {
        "book-store:bookstore": {
            "bookstore-name": "Chapters",
            "name": "Chapters",
            "categories": [SCIFI_LEAVES, KIDS_LEAVES],
        }
    }


@pytest.mark.parametrize("option", ["none", "0", ""])
def test_get_v2_descendants_none(stores, option):
    assert stores.node("ds", "a", "/shops/bookstore/categories[@code='1']", option) == [
        {"book-store:categories": SCIFI_LEAVES}
    ]


def test_get_v2_descendants_depth_2(stores):
    [node] = stores.node("ds", "a", "/shops/bookstore/categories[@code='1']", "2")
    assert node == {
        "book-store:categories": {
            **SCIFI_LEAVES,
            "books": {
                "book": [
                    {"title": "2001: A Space Odyssey", "price": 5, "label": ["sale", "classic"], "edition": ["1968", "2018"]},
                    {"title": "Dune", "price": 5, "label": ["classic"], "edition": ["1965"]},
                ]
            },
        }
    }


def test_get_v2_default_is_none(stores):
    r = stores.get(NODE, xpath="/shops")
    assert r.json() == [{"book-store:shops": {}}]


def test_get_v2_root_returns_top_level_nodes(stores):
    assert stores.node("ds", "a", "/", "all") == [{"book-store:shops": STORES_DATA["shops"]}]


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_get_root_counts_descendants_from_the_top_level_nodes(stores, version):
    # At xpath=/, the nodes are the top-level ones: `direct` gives their
    # children with their leaves, 2 the grandchildren's leaves too (as CPS).
    def at_root(d):
        r = stores.get(f"/{version}/dataspaces/ds/anchors/a/node", xpath="/", descendants=d)
        assert r.status_code == 200, r.text
        body = r.json()
        return body[0] if version == "v2" else body

    bookstore = {"bookstore-name": "Chapters", "name": "Chapters"}
    assert at_root("direct") == {"book-store:shops": {"bookstore": bookstore}}
    assert at_root("2") == {"book-store:shops": {"bookstore": {**bookstore, "categories": [
        SCIFI_LEAVES, KIDS_LEAVES]}}}
    assert at_root("none") == {"book-store:shops": {}}


def test_get_v3_single_node_and_list(stores):
    assert stores.node("ds", "a", "/shops/bookstore/categories[@code='2']", "none", version="v3") == {
        "book-store:categories": [KIDS_LEAVES]
    }
    got = stores.node("ds", "a", "/shops/bookstore/categories", "none", version="v3")
    assert got == {"book-store:categories": [SCIFI_LEAVES, KIDS_LEAVES]}
    assert stores.node("ds", "a", "/shops", "all", version="v3") == {"book-store:shops": STORES_DATA["shops"]}


@pytest.mark.parametrize("xpath", ["/shops/bookstore/categories[@code=1]", '/shops/bookstore/categories[@code="1"]'])
def test_key_spellings(stores, xpath):
    assert stores.node("ds", "a", xpath, "none") == [{"book-store:categories": SCIFI_LEAVES}]


def test_get_missing_node_is_404(stores):
    r = stores.get(NODE, xpath="/shops/bookstore/categories[@code='9']")
    body = assert_cps_error(r, 404, "DataNode not found")
    assert "/shops/bookstore/categories[@code='9']" in body["details"]
    assert "anchor a" in body["details"] and "dataspace ds" in body["details"]


def test_get_in_empty_anchor_is_404(cps):
    assert_cps_error(cps.get(NODE, xpath="/shops"), 404, "DataNode not found")


@pytest.mark.parametrize("xpath", ["/shops/bookstore[", "shops", "/shops/bookstore/categories[@code='1'", "//"])
def test_bad_xpath_is_400(stores, xpath):
    assert_cps_error(stores.get(NODE, xpath=xpath), 400)


@pytest.mark.parametrize("option", ["some", "-2", "1.5", "all "])
def test_bad_descendants_is_400(stores, option):
    assert_cps_error(stores.get(NODE, xpath="/shops", descendants=option), 400)


def test_get_missing_anchor_is_400(stores):
    r = stores.get("/v2/dataspaces/ds/anchors/nope/node", xpath="/shops")
    assert_cps_error(r, 400, "Anchor not found")


def test_create_twice_is_409(stores):
    r = stores.create("ds", "a", STORES_DATA)
    body = assert_cps_error(r, 409, "Already defined exception")
    assert "already exist" in body["details"]
    # The node named as CPS names it: its xpath, not canopy's own path.
    assert body["details"].endswith(": /shops"), body


def test_create_module_qualified_top_level(cps):
    r = cps.create("ds", "a", {"stores:shops": {"bookstore": {"name": "q"}}})
    assert r.status_code == 201, r.text
    assert cps.node("ds", "a", "/shops/bookstore", "none") == [{"book-store:bookstore": {"name": "q"}}]


def test_create_under_parent(stores):
    body = {"categories": [{"code": 3, "name": "Horror", "books": {"book": [{"title": "It"}]}}]}
    r = stores.create("ds", "a", body, xpath="/shops/bookstore")
    assert r.status_code == 201, r.text
    [node] = stores.node("ds", "a", "/shops/bookstore/categories[@code='3']", "all")
    assert node == {"book-store:categories": {"code": 3, "name": "Horror", "books": {"book": [{"title": "It"}]}}}


def test_create_under_missing_parent_is_400(stores):
    r = stores.create("ds", "a", {"categories": [{"code": 5}]}, xpath="/shops/bookstore/categories[@code='9']/x")
    assert_cps_error(r, 400)
    r = stores.create("ds", "a", {"book": [{"title": "X"}]}, xpath="/shops/bookstore/categories[@code='9']/books")
    assert_cps_error(r, 400, "DataNode not found")


@pytest.mark.parametrize(
    "body",
    [
        "{not json",
        {"shops": {"bookstore": {"nope": 1}}},
        {"shops": {"bookstore": {"categories": [{"code": "abc"}]}}},
        {"unknown-top": {}},
        [],
    ],
)
def test_invalid_data_is_400(cps, body):
    assert_cps_error(cps.create("ds", "a", body), 400)


def test_put_replaces_node_and_descendants(stores):
    body = {"bookstore": {"bookstore-name": "Waterstones", "categories": [{"code": 7, "name": "Poetry"}]}}
    r = stores.send("PUT", NODES, body, params={"xpath": "/shops"})
    assert r.status_code == 200, r.text
    assert stores.node("ds", "a", "/shops/bookstore", "all") == [
        {"book-store:bookstore": {"bookstore-name": "Waterstones", "categories": [{"code": 7, "name": "Poetry"}]}}
    ]


def test_put_at_root(stores):
    r = stores.send("PUT", NODES, {"shops": {"bookstore": {"name": "only"}}}, params={"xpath": "/"})
    assert r.status_code == 200, r.text
    assert stores.node("ds", "a", "/", "all") == [{"book-store:shops": {"bookstore": {"name": "only"}}}]


def test_put_creates_when_absent(cps):
    r = cps.send("PUT", NODES, STORES_DATA, params={"xpath": "/"})
    assert r.status_code == 200, r.text
    assert cps.node("ds", "a", "/shops", "all") == [{"book-store:shops": STORES_DATA["shops"]}]


def test_patch_updates_leaves_only(stores):
    r = stores.send("PATCH", NODES, {"bookstore": {"name": "Renamed"}}, params={"xpath": "/shops"})
    assert r.status_code == 200, r.text
    [node] = stores.node("ds", "a", "/shops/bookstore", "all")
    expected = copy.deepcopy(STORES_DATA["shops"]["bookstore"])
    expected["name"] = "Renamed"
    assert node == {"book-store:bookstore": expected}


def test_patch_list_entry_leaf(stores):
    body = {"categories": [{"code": 2, "numberOfBooks": 4}]}
    r = stores.send("PATCH", NODES, body, params={"xpath": "/shops/bookstore"})
    assert r.status_code == 200, r.text
    assert stores.node("ds", "a", "/shops/bookstore/categories[@code='2']", "none") == [
        {"book-store:categories": {**KIDS_LEAVES, "numberOfBooks": 4}}
    ]


def test_patch_missing_node_is_400(stores):
    r = stores.send("PATCH", NODES, {"categories": [{"code": 9, "name": "x"}]}, params={"xpath": "/shops/bookstore"})
    assert_cps_error(r, 400)


def test_delete_node(stores):
    r = stores.req("DELETE", NODES, params={"xpath": "/shops/bookstore/categories[@code='2']"})
    assert r.status_code == 204, r.text
    assert_cps_error(stores.get(NODE, xpath="/shops/bookstore/categories[@code='2']"), 404)
    assert stores.node("ds", "a", "/shops/bookstore/categories[@code='1']", "none")


def test_delete_missing_node_is_400(stores):
    r = stores.req("DELETE", NODES, params={"xpath": "/shops/bookstore/categories[@code='9']"})
    assert_cps_error(r, 400, "DataNode not found")


def test_delete_root_removes_everything(stores):
    assert stores.req("DELETE", NODES, params={"xpath": "/"}).status_code == 204
    assert_cps_error(stores.get(NODE, xpath="/shops"), 404)


def test_list_nodes_add(stores):
    body = {"categories": [{"code": 3, "name": "Horror"}, {"code": 4, "name": "Crime"}]}
    r = stores.send("POST", LIST_NODES, body, params={"xpath": "/shops/bookstore"})
    assert r.status_code == 201, r.text
    got = stores.node("ds", "a", "/shops/bookstore/categories", "none", version="v3")
    assert [c["code"] for c in got["book-store:categories"]] == [1, 2, 3, 4]


def test_list_nodes_add_existing_is_409(stores):
    body = {"categories": [{"code": 3, "name": "Horror"}, {"code": 1, "name": "Again"}]}
    r = stores.send("POST", LIST_NODES, body, params={"xpath": "/shops/bookstore"})
    assert_cps_error(r, 409, "Already defined exception")
    assert_cps_error(stores.get(NODE, xpath="/shops/bookstore/categories[@code='3']"), 404)


def test_list_nodes_xpath_is_required(stores):
    r = stores.send("POST", LIST_NODES, {"categories": [{"code": 3}]})
    assert_cps_error(r, 400)


def test_list_nodes_replace(stores):
    body = {"categories": [{"code": 8, "name": "Travel"}]}
    r = stores.send("PUT", LIST_NODES, body, params={"xpath": "/shops/bookstore"})
    assert r.status_code == 200, r.text
    got = stores.node("ds", "a", "/shops/bookstore/categories", "none", version="v3")
    assert got == {"book-store:categories": [{"code": 8, "name": "Travel"}]}


def test_list_nodes_delete_v1(stores):
    r = stores.req(
        "DELETE", "/v1/dataspaces/ds/anchors/a/list-nodes", params={"xpath": "/shops/bookstore/categories"}
    )
    assert r.status_code == 204, r.text
    assert stores.node("ds", "a", "/shops/bookstore", "all") == [
        {"book-store:bookstore": {"bookstore-name": "Chapters", "name": "Chapters"}}
    ]


@pytest.mark.parametrize("method,path,xpath", [
    ("POST", NODES, "/"),
    ("PUT", NODES, "/"),
    ("POST", LIST_NODES, "/shops/bookstore"),
    ("PUT", LIST_NODES, "/shops/bookstore"),
])
def test_dry_run_stores_nothing(cps, method, path, xpath):
    body = STORES_DATA if xpath == "/" else {"categories": [{"code": 3, "name": "Horror"}]}
    if xpath != "/":
        assert cps.create("ds", "a", {"shops": {"bookstore": {"name": "b"}}}).status_code == 201
    r = cps.send(method, path, body, params={"xpath": xpath, "dry-run": "true"})
    assert r.status_code == 200, r.text
    if xpath == "/":
        assert_cps_error(cps.get(NODE, xpath="/shops"), 404)
    else:
        assert_cps_error(cps.get(NODE, xpath="/shops/bookstore/categories[@code='3']"), 404)


def test_dry_run_of_invalid_data_is_400(cps):
    r = cps.send("POST", NODES, {"shops": {"bogus": 1}}, params={"xpath": "/", "dry-run": "true"})
    assert_cps_error(r, 400)


def test_observed_timestamp(cps):
    r = cps.send(
        "POST", NODES, STORES_DATA, params={"xpath": "/", "observed-timestamp": "2024-01-02T03:04:05.678+0100"}
    )
    assert r.status_code == 201, r.text
    r = cps.send("PATCH", NODES, {"bookstore": {"name": "n"}}, params={"xpath": "/shops", "observed-timestamp": "yesterday"})
    body = assert_cps_error(r, 400)
    assert "observed-timestamp" in body["message"] + body["details"]


def test_xml_body_is_accepted(cps):
    xml = (
        '<shops xmlns="org:onap:ccsdk:sample"><bookstore><bookstore-name>Chapters</bookstore-name>'
        "<categories><code>1</code><name>SciFi</name></categories></bookstore></shops>"
    )
    r = cps.send("POST", NODES, xml, params={"xpath": "/"}, headers={"Content-Type": "application/xml"})
    assert r.status_code == 201, r.text
    assert cps.node("ds", "a", "/shops/bookstore/categories[@code='1']", "none") == [
        {"book-store:categories": {"code": 1, "name": "SciFi"}}
    ]


def test_xml_body_in_a_wrapper_named_after_the_module(cps):
    # CPS's OpenAPI sample: the top-level nodes inside an element named after
    # the module, in the NETCONF base namespace.
    xml = (
        '<stores xmlns="urn:ietf:params:xml:ns:netconf:base:1.0">'
        '<shops xmlns="org:onap:ccsdk:sample"><bookstore><bookstore-name>Chapters</bookstore-name>'
        "<categories><code>1</code><name>SciFi</name></categories>"
        "<categories><code>2</code><name>Kids</name></categories></bookstore></shops></stores>"
    )
    r = cps.send("POST", NODES, xml, params={"xpath": "/"}, headers={"Content-Type": "application/xml"})
    assert r.status_code == 201, r.text
    got = cps.node("ds", "a", "/shops/bookstore", "direct")
    assert [c["code"] for c in got[0]["book-store:bookstore"]["categories"]] == [1, 2]


def test_xml_body_below_a_node(cps):
    r = cps.create("ds", "a", {"shops": {"bookstore": {"bookstore-name": "Chapters"}}})
    assert r.status_code == 201, r.text
    # One child element of the parent...
    xml = '<categories xmlns="org:onap:ccsdk:sample"><code>3</code><name>Poetry</name></categories>'
    r = cps.send("POST", NODES, xml, params={"xpath": "/shops/bookstore"}, headers={"Content-Type": "application/xml"})
    assert r.status_code == 201, r.text
    # ...or the parent's element holding several.
    xml = (
        '<bookstore xmlns="org:onap:ccsdk:sample"><categories><code>4</code><name>Plays</name></categories>'
        "<categories><code>5</code><name>Maps</name></categories></bookstore>"
    )
    r = cps.send("POST", NODES, xml, params={"xpath": "/shops/bookstore"}, headers={"Content-Type": "application/xml"})
    assert r.status_code == 201, r.text
    # Leaves updated with PATCH, as with JSON: the node below the xpath.
    xml = (
        '<bookstore xmlns="org:onap:ccsdk:sample"><bookstore-name>Chapters 2</bookstore-name>'
        "<categories><code>3</code><name>Verse</name></categories></bookstore>"
    )
    r = cps.send("PATCH", NODES, xml, params={"xpath": "/shops"}, headers={"Content-Type": "application/xml"})
    assert r.status_code == 200, r.text
    got = cps.node("ds", "a", "/shops/bookstore", "all")[0]["book-store:bookstore"]
    assert got["bookstore-name"] == "Chapters 2"
    assert [(c["code"], c["name"]) for c in got["categories"]] == [(3, "Verse"), (4, "Plays"), (5, "Maps")]


@pytest.mark.parametrize(
    "xml, needle",
    [
        ("<shops xmlns='org:onap:ccsdk:sample'><bookstore>", "XML"),
        ("<shops xmlns='org:onap:ccsdk:sample'><nope/></shops>", "nope"),
        ("<shops xmlns='org:onap:ccsdk:sample'><bookstore><categories><code>x</code></categories></bookstore></shops>",
         "x"),
        ("<data/>", "holds no data node"),
    ],
)
def test_bad_xml_body_is_400(cps, xml, needle):
    r = cps.send("POST", NODES, xml, params={"xpath": "/"}, headers={"Content-Type": "application/xml"})
    body = assert_cps_error(r, 400, "Data Validation Failed")
    assert needle in body["details"], body
    assert_cps_error(cps.get("/v2/dataspaces/ds/anchors/a/node", xpath="/shops"), 404)


def test_anchors_are_isolated(cps):
    cps.anchor("ds", "ss", "b")
    assert cps.create("ds", "a", STORES_DATA).status_code == 201
    assert_cps_error(cps.get("/v2/dataspaces/ds/anchors/b/node", xpath="/shops"), 404)
    assert cps.create("ds", "b", {"shops": {"bookstore": {"name": "other"}}}).status_code == 201
    assert cps.node("ds", "b", "/shops/bookstore", "none") == [{"book-store:bookstore": {"name": "other"}}]
    assert cps.node("ds", "a", "/shops/bookstore", "none")[0]["book-store:bookstore"]["name"] == "Chapters"


def test_bookstore_with_imported_types(tmp_path):
    srv = start(tmp_path)
    try:
        c = Cps(srv)
        c.setup("ds", "ss", ("bookstore.yang", "bookstore-types.yang"), ("a",))
        assert c.create("ds", "a", BOOKSTORE_DATA).status_code == 201
        got = c.node("ds", "a", "/bookstore/categories[@code='01']/books[@title='Book 2']", "all")
        assert got == [{"test:books": {"title": "Book 2", "lang": "German", "price": 39, "editions": [2007, 2013, 2021]}}]
        # a typedef's range is checked
        bad = {"books": [{"title": "Old", "editions": [999]}]}
        r = c.send("POST", "/v2/dataspaces/ds/anchors/a/list-nodes", bad, params={"xpath": "/bookstore/categories[@code='02']"})
        assert_cps_error(r, 400)
    finally:
        assert srv.stop() == 0


def test_deep_lists(tmp_path):
    srv = start(tmp_path)
    try:
        c = Cps(srv)
        c.setup("ds", "net", ("deep-network.yang",), ("a",))
        assert c.create("ds", "a", network(5)).status_code == 201
        xp = "/network/device[@id='dev-3']/interface[@name='eth1']/unit[@number='1']"
        assert c.node("ds", "a", xp, "all") == [
            {"dn:unit": {"number": 1, "vlan": 311, "counters": {"in-octets": 1, "out-octets": 2}}}
        ]
        route = "/network/device[@id='dev-2']/route[@destination='10.0.0.0' and @prefix-length='16']"
        assert c.node("ds", "a", route, "none") == [
            {"dn:route": {"destination": "10.0.0.0", "prefix-length": 16, "next-hop": "198.51.100.2"}}
        ]
        [dev] = c.node("ds", "a", "/network/device[@id='dev-4']", "direct")
        assert [i["name"] for i in dev["dn:device"]["interface"]] == ["eth0", "eth1"]
        assert all(set(i) == {"name", "mtu", "enabled"} for i in dev["dn:device"]["interface"])
    finally:
        assert srv.stop() == 0


def test_bulk_post_of_many_entries_stores_each_whole(tmp_path):
    """A POST of 648 devices (1.2 MB: its entries parsed on two threads)
    below an existing container stores every device with its nested lists,
    as the whole tree read back shows; a POST repeating one of them creates
    none."""
    srv = start(tmp_path)
    try:
        c = Cps(srv)
        c.setup("ds", "net", ("deep-network.yang",), ("a",))
        first = network(2, 5, 4)
        assert c.create("ds", "a", first).status_code == 201
        more = network(650, 5, 4)["network"]["device"][2:]
        assert len(json.dumps({"device": more})) > 1 << 20
        r = c.create("ds", "a", {"device": more}, xpath="/network")
        assert r.status_code == 201, r.text
        [tree] = c.node("ds", "a", "/network", "all")
        # Entries come back in key order.
        want = sorted(network(650, 5, 4)["network"]["device"], key=lambda d: d["id"])
        assert tree["dn:network"]["device"] == want
        again = network(653, 5, 4)["network"]["device"][647:]
        r = c.create("ds", "a", {"device": again}, xpath="/network")
        assert_cps_error(r, 409, "Already defined exception")
        assert_cps_error(c.get(NODE, xpath="/network/device[@id='dev-651']"), 404)
        # Unknown members and malformed JSON are refused as before, nothing stored.
        r = c.create("ds", "a", {"device": [{"id": "x", "colour": "red"}]}, xpath="/network")
        assert_cps_error(r, 400)
        r = c.send("POST", c.nodes("ds", "a"), '{"device": [{"id": "y"}', params={"xpath": "/network"})
        assert_cps_error(r, 400)
        assert "malformed JSON" in r.json()["details"]
        r = c.create("ds", "a", {"gadget": [{"id": "z"}]}, xpath="/network")
        assert_cps_error(r, 400)
        assert "no data node `gadget`" in r.json()["details"]
        assert c.node("ds", "a", "/network", "all") == [tree]
        # The same devices in one POST at the root: the container is put
        # together from its members, the devices parsed on two threads.
        c.req("POST", "/v2/dataspaces/ds/anchors", params={"schema-set-name": "net", "anchor-name": "b"})
        whole = network(650, 5, 4)
        assert len(json.dumps(whole)) > 1 << 20
        assert c.create("ds", "b", whole).status_code == 201
        assert c.node("ds", "b", "/network", "all") == [tree]
        assert_cps_error(c.create("ds", "b", whole), 409, "Already defined exception")
        # A device named twice in a big body is refused whole.
        twice = network(650, 5, 4)
        twice["network"]["device"].append(twice["network"]["device"][0])
        c.req("POST", "/v2/dataspaces/ds/anchors", params={"schema-set-name": "net", "anchor-name": "c"})
        assert_cps_error(c.create("ds", "c", twice), 400)
        assert_cps_error(c.get("/v2/dataspaces/ds/anchors/c/node", xpath="/network"), 404)
    finally:
        assert srv.stop() == 0


def test_post_of_a_list_as_one_object_and_below_an_entry(stores):
    """Bodies the direct reader leaves to the general one: a list entry
    given as an object instead of an array, and a POST below a list entry."""
    r = stores.create("ds", "a", {"categories": {"code": 5, "name": "Poetry"}}, xpath="/shops/bookstore")
    assert r.status_code == 201, r.text
    got = stores.node("ds", "a", "/shops/bookstore/categories[@code='5']", "all", version="v3")
    assert got == {"book-store:categories": [{"code": 5, "name": "Poetry"}]}
    body = {"books": {"book": [{"title": "Odes", "price": 7}]}}
    r = stores.create("ds", "a", body, xpath="/shops/bookstore/categories[@code='5']")
    assert r.status_code == 201, r.text
    [node] = stores.node("ds", "a", "/shops/bookstore/categories[@code='5']/books", "all")
    assert node == {"book-store:books": {"book": [{"title": "Odes", "price": 7}]}}

"""CPS path queries over `canopy serve`: every example of CPS's
docs/cps-path.rst run on its sample data with the result it documents (or,
where it documents none, the result its rules give), queries across a
dataspace with paging, and errors."""

from __future__ import annotations

import json

import pytest

from cps_support import STORES_DATA, Cps, assert_cps_error, network, start

QUERY = "/v2/dataspaces/ds/anchors/a/nodes/query"

SCIFI = ("categories", {"code": 1, "name": "SciFi", "numberOfBooks": 2})
KIDS = ("categories", {"code": 2, "name": "Kids", "numberOfBooks": 1})
BOOKSTORE = ("bookstore", {"bookstore-name": "Chapters", "name": "Chapters"})
SHOPS = ("shops", {})
BOOKS = ("books", {})
ODYSSEY = ("book", {"title": "2001: A Space Odyssey", "price": 5, "label": ["sale", "classic"], "edition": ["1968", "2018"]})
DUNE = ("book", {"title": "Dune", "price": 5, "label": ["classic"], "edition": ["1965"]})


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    srv = start(tmp_path_factory.mktemp("cps-query"))
    c = Cps(srv)
    c.setup("ds", "ss", ("stores.yang",), ("a",))
    assert c.create("ds", "a", STORES_DATA).status_code == 201
    yield c
    assert srv.stop() == 0, srv.stderr_tail()


def canon(x):
    return json.dumps(x, sort_keys=True)


def nodes_of(expected):
    return sorted(({f"book-store:{name}": leaves} for name, leaves in expected), key=canon)


# (cps path, the nodes it selects, descendants none)
DOC_EXAMPLES = [
    # absolute-path
    ("/shops/bookstore", [BOOKSTORE]),
    ("/shops/bookstore/categories[@code='1']/books", [BOOKS]),
    ("/shops/bookstore/categories[@code='1']/books/book[@title='2001: A Space Odyssey']", [ODYSSEY]),
    # descendant-path
    ("//bookstore", [BOOKSTORE]),
    ("//categories[@code='1']/books", [BOOKS]),
    ("//bookstore/categories", [SCIFI, KIDS]),
    # leaf-conditions
    ("/shops/bookstore/categories[@numberOfBooks=1]", [KIDS]),
    ('//categories[@name="Kids"]', [KIDS]),
    ("//categories[@name='Kids']", [KIDS]),
    ("//categories[@code='1']/books/book[@title='Dune' and @price=5]", [DUNE]),
    ("//categories[@code='1']/books/book[@title='xyz' or @price=15]", []),
    ("//categories[@code='1']/books/book[@title='xyz' or @price>20]", []),
    ("//categories[@code='1']/books/book[@title='Dune' and @price<=5]", [DUNE]),
    ("//categories[@code=1]", [SCIFI]),
    # The documentation says "//categories[@code="1"] or //categories[@code='1']
    # will not work because the key attribute code is treated a string", but
    # CPS finds them (a quoted value matches the integer's text; '01' does
    # not): CPS's behaviour is the reference.
    ('//categories[@code="1"]', [SCIFI]),
    ("//categories[@code='1']", [SCIFI]),
    ("//categories[@code='01']", []),
    ("//book[@price='5']", [ODYSSEY, DUNE]),
    # text()-condition
    ('//book/label[text()="classic"]', [ODYSSEY, DUNE]),
    ('//book/edition[text()="1965"]', [DUNE]),
    # contains()-condition
    ("//categories[contains(@name,'Sci')]", [SCIFI]),
    ("//books[contains(@title,'Space')]", []),  # books has no title leaf in this model
    # ancestor-axis
    ("//book/ancestor::categories", [SCIFI, KIDS]),
    ("//categories[@code='2']/books/ancestor::bookstore", [BOOKSTORE]),
    ("//book/ancestor::categories[@code='1']/books", [BOOKS]),
    ('//book/label[text()="classic"]/ancestor::shops', [SHOPS]),
]


@pytest.mark.parametrize("cps_path,expected", DOC_EXAMPLES, ids=[e[0] for e in DOC_EXAMPLES])
def test_cps_path_doc_example(stores, cps_path, expected):
    r = stores.query("ds", "a", cps_path)
    assert r.status_code == 200, r.text
    assert sorted(r.json(), key=canon) == nodes_of(expected)


ATTRIBUTE_EXAMPLES = [
    ("//categories/@name", [{"name": "Kids"}, {"name": "SciFi"}]),  # as documented
    ("//categories[@code='1']/books/@price", []),  # books has no price leaf
    ("//books/ancestor::bookstore/@bookstore-name", [{"bookstore-name": "Chapters"}]),
    ("//book/@price", [{"price": 5}]),  # distinct values only
]


@pytest.mark.parametrize("cps_path,expected", ATTRIBUTE_EXAMPLES, ids=[e[0] for e in ATTRIBUTE_EXAMPLES])
def test_attribute_axis(stores, cps_path, expected):
    r = stores.query("ds", "a", cps_path)
    assert r.status_code == 200, r.text
    assert sorted(r.json(), key=canon) == sorted(expected, key=canon)


def test_query_descendants_all(stores):
    r = stores.query("ds", "a", "//bookstore", "all")
    assert r.json() == [{"book-store:bookstore": STORES_DATA["shops"]["bookstore"]}]


def test_query_descendants_direct(stores):
    r = stores.query("ds", "a", "//categories[@code=2]", "direct")
    assert r.json() == [{"book-store:categories": {**KIDS[1], "books": {}}}]


def test_query_v1_include_descendants(stores):
    r = stores.get(
        "/v1/dataspaces/ds/anchors/a/nodes/query", **{"cps-path": "//categories[@code=2]", "include-descendants": "true"}
    )
    assert r.json() == [{"book-store:categories": STORES_DATA["shops"]["bookstore"]["categories"][1]}]


@pytest.mark.parametrize("cps_path", [
    "cpsPath that cannot be parsed",
    "//books[@lang>\"German\" and @price>10]",
    "/shops/bookstore[",
    "//categories[@code=1",
    "",
    "/shops/@",
    "//book/ancestor::",
])
def test_bad_cps_path_is_400(stores, cps_path):
    body = assert_cps_error(stores.query("ds", "a", cps_path), 400)
    if cps_path:
        assert body["message"] == "Error while parsing cpsPath expression"


def test_and_binds_tighter_than_or(stores):
    r = stores.query("ds", "a", "//book[@title='Dune' or @title='Matilda' and @price=5]")
    assert [n["book-store:book"]["title"] for n in r.json()] == ["Dune"]


def test_quote_escaping(stores):
    r = stores.query("ds", "a", "//book[@title='It''s']")
    assert r.status_code == 200 and r.json() == []


@pytest.fixture(scope="module")
def dataspace(tmp_path_factory):
    srv = start(tmp_path_factory.mktemp("cps-dataspace-query"))
    c = Cps(srv)
    c.setup("ds", "net", ("deep-network.yang",), ("n1", "n2", "n3"))
    for i, a in enumerate(("n1", "n2", "n3")):
        assert c.create("ds", a, network(i + 2)).status_code == 201
    yield c
    assert srv.stop() == 0, srv.stderr_tail()


def test_query_across_dataspace(dataspace):
    r = dataspace.get("/v2/dataspaces/ds/nodes/query", **{"cps-path": "//device[@id='dev-2']"})
    assert r.status_code == 200, r.text
    got = sorted(r.json(), key=lambda x: x["anchorName"])
    assert [g["anchorName"] for g in got] == ["n2", "n3"]  # n1 has dev-0 and dev-1 only
    for g in got:
        assert g["dataNodes"] == [{"dn:device": {"id": "dev-2", "vendor": "acme", "site": "site-2"}}]


def test_query_across_dataspace_paging(dataspace):
    seen = []
    for page in (1, 2, 3):
        r = dataspace.get(
            "/v2/dataspaces/ds/nodes/query", **{"cps-path": "//network", "pageIndex": page, "pageSize": 1}
        )
        assert r.status_code == 200, r.text
        assert r.headers["total-pages"] == "3"
        [entry] = r.json()
        seen.append(entry["anchorName"])
    assert seen == ["n1", "n2", "n3"]
    r = dataspace.get("/v2/dataspaces/ds/nodes/query", **{"cps-path": "//network", "pageIndex": 1, "pageSize": 2})
    assert r.headers["total-pages"] == "2" and len(r.json()) == 2
    r = dataspace.get("/v2/dataspaces/ds/nodes/query", **{"cps-path": "//network"})
    assert r.headers["total-pages"] == "1" and len(r.json()) == 3


@pytest.mark.parametrize("page", [{"pageIndex": 0, "pageSize": 1}, {"pageIndex": 1, "pageSize": 0}])
def test_query_across_dataspace_bad_paging_is_400(dataspace, page):
    r = dataspace.get("/v2/dataspaces/ds/nodes/query", **{"cps-path": "//network", **page})
    body = assert_cps_error(r, 400, "Pagination validation error.")
    assert body["details"] == "Invalid page index or size"


def test_deep_queries(dataspace):
    q = lambda p, d="none": dataspace.query("ds", "n3", p, d)  # noqa: E731
    r = q("//unit[@vlan=311]")
    assert r.json() == [{"dn:unit": {"number": 1, "vlan": 311}}]
    r = q("//device[@vendor='acme']/interface[@name='eth0']/unit[@number=1]/counters")
    assert sorted(x["dn:counters"]["out-octets"] for x in r.json()) == [2, 2]
    r = q("//interface[@mtu>1500 and @enabled='false']")
    assert len(r.json()) == 4
    r = q("//unit[@vlan=311]/ancestor::device", "none")
    assert r.json() == [{"dn:device": {"id": "dev-3", "vendor": "zenith", "site": "site-0"}}]
    r = q("//route[@prefix-length=16]/@next-hop")
    assert sorted(x["next-hop"] for x in r.json()) == [f"198.51.100.{d}" for d in range(4)]
    r = q("/network/device[@id='dev-1']/interface[@name='eth1']", "all")
    assert r.json()[0]["dn:interface"]["unit"][1]["counters"] == {"in-octets": 1, "out-octets": 2}

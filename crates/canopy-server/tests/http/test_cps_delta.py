"""CPS delta over `canopy serve`: between two anchors, between an anchor and a
posted document, and applying a delta report."""

from __future__ import annotations

import json

import pytest

from cps_support import STORES_DATA, Cps, assert_cps_error, start

SOURCE = {
    "shops": {
        "bookstore": {
            "bookstore-name": "Chapters",
            "categories": [{"code": 1, "name": "SciFi"}, {"code": 2, "name": "Kids"}],
        }
    }
}
TARGET = {
    "shops": {
        "bookstore": {
            "bookstore-name": "Chapters",
            "categories": [{"code": 1, "name": "Comic"}, {"code": 3, "name": "Fiction"}],
        }
    }
}
# One entry per data node, CPS's data maps: a list entry as a one-element
# list under its name, a replaced entry's sides with its key (as text, from
# the xpath).
EXPECTED = [
    {
        "action": "replace",
        "xpath": "/shops/bookstore/categories[@code='1']",
        "sourceData": {"categories": [{"code": "1", "name": "SciFi"}]},
        "targetData": {"categories": [{"code": "1", "name": "Comic"}]},
    },
    {
        "action": "remove",
        "xpath": "/shops/bookstore/categories[@code='2']",
        "sourceData": {"categories": [{"code": 2, "name": "Kids"}]},
    },
    {
        "action": "create",
        "xpath": "/shops/bookstore/categories[@code='3']",
        "targetData": {"categories": [{"code": 3, "name": "Fiction"}]},
    },
]
# With grouping-enabled: the siblings removed (created) together, at their
# parent's xpath.
GROUPED = [
    {
        "action": "remove",
        "xpath": "/shops/bookstore",
        "sourceData": {"categories": [{"code": 2, "name": "Kids"}]},
    },
    EXPECTED[0],
    {
        "action": "create",
        "xpath": "/shops/bookstore",
        "targetData": {"categories": [{"code": 3, "name": "Fiction"}]},
    },
]


def by_xpath(report):
    return sorted(report, key=lambda e: (e["xpath"], e["action"]))


@pytest.fixture
def cps(tmp_path):
    srv = start(tmp_path)
    c = Cps(srv)
    c.setup("ds", "ss", ("stores.yang",), ("src", "tgt"))
    assert c.create("ds", "src", SOURCE).status_code == 201
    assert c.create("ds", "tgt", TARGET).status_code == 201
    yield c
    assert srv.stop() == 0, srv.stderr_tail()


def test_delta_between_anchors(cps):
    r = cps.get("/v2/dataspaces/ds/anchors/src/delta", **{"target-anchor-name": "tgt", "xpath": "/", "descendants": "all"})
    assert r.status_code == 200, r.text
    assert by_xpath(r.json()) == by_xpath(EXPECTED)


def test_delta_in_document_order(cps):
    r = cps.get("/v2/dataspaces/ds/anchors/src/delta", **{"target-anchor-name": "tgt", "xpath": "/", "descendants": "all"})
    assert r.json() == EXPECTED


def test_delta_grouped(cps):
    params = {"target-anchor-name": "tgt", "xpath": "/", "descendants": "all", "grouping-enabled": "true"}
    r = cps.get("/v2/dataspaces/ds/anchors/src/delta", **params)
    assert r.status_code == 200, r.text
    assert r.json() == GROUPED


def test_delta_grouped_carries_descendants(cps):
    # A whole subtree removed and another created: one entry each, with
    # their descendants; without grouping, one entry per node.
    nested = {"shops": {"bookstore": {"bookstore-name": "Chapters", "categories": [
        {"code": 7, "name": "Art", "books": {"book": [{"title": "A", "price": 5}, {"title": "B", "price": 6}]}}]}}}
    cps.anchor("ds", "ss", "nested")
    assert cps.create("ds", "nested", nested).status_code == 201
    params = {"target-anchor-name": "nested", "xpath": "/shops/bookstore", "descendants": "all"}
    r = cps.get("/v2/dataspaces/ds/anchors/src/delta", **params, **{"grouping-enabled": "true"})
    assert r.json() == [
        {"action": "remove", "xpath": "/shops/bookstore", "sourceData": {"categories": [
            {"code": 1, "name": "SciFi"}, {"code": 2, "name": "Kids"}]}},
        {"action": "create", "xpath": "/shops/bookstore", "targetData": {"categories": [
            {"code": 7, "name": "Art", "books": {"book": [{"title": "A", "price": 5}, {"title": "B", "price": 6}]}}]}},
    ]
    r = cps.get("/v2/dataspaces/ds/anchors/src/delta", **params)
    assert [(e["action"], e["xpath"]) for e in r.json()] == [
        ("remove", "/shops/bookstore/categories[@code='1']"),
        ("remove", "/shops/bookstore/categories[@code='2']"),
        ("create", "/shops/bookstore/categories[@code='7']"),
        ("create", "/shops/bookstore/categories[@code='7']/books"),
        ("create", "/shops/bookstore/categories[@code='7']/books/book[@title='A']"),
        ("create", "/shops/bookstore/categories[@code='7']/books/book[@title='B']"),
    ]
    # Either report, applied, turns the source into the target.
    for grouping in ("true", "false"):
        cps.anchor("ds", "ss", f"copy-{grouping}")
        assert cps.create("ds", f"copy-{grouping}", SOURCE).status_code == 201
        report = cps.get("/v2/dataspaces/ds/anchors/src/delta", **params, **{"grouping-enabled": grouping}).json()
        r = cps.send("POST", f"/v2/dataspaces/ds/anchors/copy-{grouping}/applyChangesInDeltaReport", report)
        assert r.status_code == 201, r.text
        assert cps.node("ds", f"copy-{grouping}", "/shops", "all") == cps.node("ds", "nested", "/shops", "all")


def test_delta_descendants_default_to_none(cps):
    # CPS's default: the nodes at the xpath, without their children.
    r = cps.get("/v2/dataspaces/ds/anchors/src/delta", **{"target-anchor-name": "tgt", "xpath": "/shops/bookstore"})
    assert r.status_code == 200 and r.json() == []
    r = cps.get(
        "/v2/dataspaces/ds/anchors/src/delta",
        **{"target-anchor-name": "tgt", "xpath": "/shops/bookstore/categories[@code='1']"},
    )
    assert r.json() == [EXPECTED[0]]
    r = cps.get("/v2/dataspaces/ds/anchors/src/delta", **{"target-anchor-name": "tgt", "xpath": "/shops/bookstore",
                                                           "descendants": "direct"})
    assert r.json() == EXPECTED


def test_delta_of_identical_anchors_is_empty(cps):
    r = cps.get("/v2/dataspaces/ds/anchors/src/delta", **{"target-anchor-name": "src", "xpath": "/"})
    assert r.status_code == 200 and r.json() == []


def test_delta_under_xpath(cps):
    r = cps.get(
        "/v2/dataspaces/ds/anchors/src/delta",
        **{"target-anchor-name": "tgt", "xpath": "/shops/bookstore/categories[@code='1']", "descendants": "all"},
    )
    assert r.json() == [EXPECTED[0]]


def test_delta_missing_target_anchor_is_400(cps):
    r = cps.get("/v2/dataspaces/ds/anchors/src/delta", **{"target-anchor-name": "nope", "xpath": "/"})
    assert_cps_error(r, 400, "Anchor not found")


def test_delta_with_posted_document(cps):
    files = {"targetData": ("target.json", json.dumps(TARGET).encode(), "application/json")}
    r = cps.req("POST", "/v2/dataspaces/ds/anchors/src/delta", params={"xpath": "/"}, files=files)
    assert r.status_code == 200, r.text
    assert by_xpath(r.json()) == by_xpath(EXPECTED)


def test_delta_with_invalid_document_is_400(cps):
    files = {"targetData": ("target.json", b'{"shops": {"nope": 1}}', "application/json")}
    r = cps.req("POST", "/v2/dataspaces/ds/anchors/src/delta", params={"xpath": "/"}, files=files)
    assert_cps_error(r, 400)


@pytest.mark.parametrize("report", [EXPECTED, GROUPED], ids=["per-node", "grouped"])
def test_apply_delta_report(cps, report):
    r = cps.send("POST", "/v2/dataspaces/ds/anchors/src/applyChangesInDeltaReport", report)
    assert r.status_code == 201, r.text
    r = cps.get("/v2/dataspaces/ds/anchors/src/delta", **{"target-anchor-name": "tgt", "xpath": "/", "descendants": "all"})
    assert r.json() == []
    assert cps.node("ds", "src", "/shops", "all") == cps.node("ds", "tgt", "/shops", "all")


def test_apply_bad_delta_report_is_400(cps):
    bad = [{"action": "explode", "xpath": "/shops"}]
    r = cps.send("POST", "/v2/dataspaces/ds/anchors/src/applyChangesInDeltaReport", bad)
    body = assert_cps_error(r, 400, "Invalid 'action' in delta report.")
    assert "'explode'" in body["details"]
    assert cps.node("ds", "src", "/shops", "all") == [{"book-store:shops": SOURCE["shops"]}]


def test_apply_is_all_or_nothing(cps):
    report = [EXPECTED[0], {"action": "remove", "xpath": "/shops/bookstore/categories[@code='9']"}]
    r = cps.send("POST", "/v2/dataspaces/ds/anchors/src/applyChangesInDeltaReport", report)
    assert_cps_error(r, 400)
    assert cps.node("ds", "src", "/shops", "all") == [{"book-store:shops": SOURCE["shops"]}]


def test_full_stores_delta_roundtrip(cps):
    cps.anchor("ds", "ss", "full")
    assert cps.create("ds", "full", STORES_DATA).status_code == 201
    r = cps.get("/v2/dataspaces/ds/anchors/src/delta", **{"target-anchor-name": "full", "xpath": "/", "descendants": "all"})
    assert r.status_code == 200
    r = cps.send("POST", "/v2/dataspaces/ds/anchors/src/applyChangesInDeltaReport", r.json())
    assert r.status_code == 201, r.text
    assert cps.node("ds", "src", "/", "all") == cps.node("ds", "full", "/", "all")

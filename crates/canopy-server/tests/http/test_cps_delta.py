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
EXPECTED = [
    {"action": "remove", "xpath": "/shops/bookstore/categories[@code='2']", "sourceData": {"code": 2, "name": "Kids"}},
    {
        "action": "replace",
        "xpath": "/shops/bookstore/categories[@code='1']",
        "sourceData": {"name": "SciFi"},
        "targetData": {"name": "Comic"},
    },
    {"action": "create", "xpath": "/shops/bookstore/categories[@code='3']", "targetData": {"code": 3, "name": "Fiction"}},
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


def test_delta_of_identical_anchors_is_empty(cps):
    r = cps.get("/v2/dataspaces/ds/anchors/src/delta", **{"target-anchor-name": "src", "xpath": "/"})
    assert r.status_code == 200 and r.json() == []


def test_delta_under_xpath(cps):
    r = cps.get(
        "/v2/dataspaces/ds/anchors/src/delta",
        **{"target-anchor-name": "tgt", "xpath": "/shops/bookstore/categories[@code='1']", "descendants": "all"},
    )
    assert r.json() == [EXPECTED[1]]


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


def test_apply_delta_report(cps):
    r = cps.send("POST", "/v2/dataspaces/ds/anchors/src/applyChangesInDeltaReport", EXPECTED)
    assert r.status_code == 201, r.text
    r = cps.get("/v2/dataspaces/ds/anchors/src/delta", **{"target-anchor-name": "tgt", "xpath": "/", "descendants": "all"})
    assert r.json() == []
    assert cps.node("ds", "src", "/shops", "all") == cps.node("ds", "tgt", "/shops", "all")


def test_apply_bad_delta_report_is_400(cps):
    bad = [{"action": "explode", "xpath": "/shops"}]
    r = cps.send("POST", "/v2/dataspaces/ds/anchors/src/applyChangesInDeltaReport", bad)
    assert_cps_error(r, 400)
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

"""CPS in XML over `canopy serve`: GET `node` and queries answered in XML
(as CPS does when the request's Content-Type names application/xml), XML
error bodies for a client that accepts only XML, delta reports in XML both
ways, and the composite query (POST nodes/query)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from cps_support import STORES_DATA, Cps, assert_cps_error, module_text, start

A = "/v2/dataspaces/ds/anchors"
XML = {"Content-Type": "application/xml"}
ACCEPT_XML = {"Accept": "application/xml"}


@pytest.fixture(scope="module")
def cps(tmp_path_factory):
    srv = start(tmp_path_factory.mktemp("cps-xml"))
    c = Cps(srv)
    c.setup("ds", "ss", ("stores.yang",), ("a", "empty"))
    assert c.create("ds", "a", STORES_DATA).status_code == 201
    yield c
    assert srv.stop() == 0, srv.stderr_tail()


def get(c: Cps, path: str, headers: dict, **params):
    return c.req("GET", path, params=params, headers=headers)


def elements(text: str) -> list[ET.Element]:
    """The sibling elements of a CPS XML reply (no root; the prefix of a
    top-level node's name undeclared, as CPS writes it)."""
    plain = text.replace("<book-store:", "<").replace("</book-store:", "</")
    return list(ET.fromstring(f"<r>{plain}</r>"))


# --- data replies -------------------------------------------------------------------


def test_node_v2_in_xml(cps):
    r = get(cps, f"{A}/a/node", XML, xpath="/shops/bookstore/categories[@code='2']", descendants="all")
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/xml")
    assert r.text == (
        "<book-store:categories><books><book><title>Matilda</title></book></books>"
        "<code>2</code><name>Kids</name><numberOfBooks>1</numberOfBooks></book-store:categories>"
    )


def test_node_xml_lists_and_leaf_lists_repeat(cps):
    r = get(cps, f"{A}/a/node", XML, xpath="/shops/bookstore/categories[@code='1']/books", descendants="all")
    (books,) = elements(r.text)
    titles = [b.findtext("title") for b in books.findall("book")]
    assert titles == ["2001: A Space Odyssey", "Dune"]
    assert [e.text for e in books.find("book").findall("label")] == ["sale", "classic"]
    # Its JSON reply holds the same data.
    j = cps.node("ds", "a", "/shops/bookstore/categories[@code='1']/books", "all")
    assert [b["title"] for b in j[0]["book-store:books"]["book"]] == titles


def test_node_xml_of_a_list_names_every_entry(cps):
    for version in ("v2", "v3"):
        r = get(cps, f"/{version}/dataspaces/ds/anchors/a/node", XML, xpath="/shops/bookstore/categories")
        assert r.status_code == 200, r.text
        got = elements(r.text)
        assert [(e.tag, e.findtext("code")) for e in got] == [("categories", "1"), ("categories", "2")], version
        # Descendants none: the entries' leaves only.
        assert got[0].find("books") is None


def test_node_xml_at_the_root(cps):
    r = get(cps, f"{A}/a/node", XML, xpath="/", descendants="direct")
    assert r.status_code == 200, r.text
    (shops,) = elements(r.text)
    assert shops.tag == "shops"
    assert shops.find("bookstore").findtext("bookstore-name") == "Chapters"
    assert shops.find("bookstore").find("categories") is None
    v3 = get(cps, "/v3/dataspaces/ds/anchors/a/node", XML, xpath="/", descendants="direct")
    assert v3.text == r.text


def test_node_xml_escapes_text(cps):
    cps.anchor("ds", "ss", "odd")
    doc = {"shops": {"bookstore": {"bookstore-name": "A & B <C>", "categories": []}}}
    doc["shops"]["bookstore"].pop("categories")
    assert cps.create("ds", "odd", doc).status_code == 201
    r = get(cps, f"{A}/odd/node", XML, xpath="/shops/bookstore")
    assert r.text == "<book-store:bookstore><bookstore-name>A &amp; B &lt;C&gt;</bookstore-name></book-store:bookstore>"
    assert elements(r.text)[0].findtext("bookstore-name") == "A & B <C>"


def test_node_accept_xml_alone_answers_xml(cps):
    # CPS picks the format by Content-Type; a client that only sends
    # Accept: application/xml gets XML too (CPS would label JSON as XML).
    r = get(cps, f"{A}/a/node", ACCEPT_XML, xpath="/shops/bookstore")
    assert r.headers["Content-Type"].startswith("application/xml")
    assert elements(r.text)[0].findtext("bookstore-name") == "Chapters"


def test_node_v1_and_json_stay_json(cps):
    r = get(cps, "/v1/dataspaces/ds/anchors/a/node", XML, xpath="/shops/bookstore")
    assert r.json() == {"book-store:bookstore": {"bookstore-name": "Chapters", "name": "Chapters"}}
    r = get(cps, f"{A}/a/node", {"Content-Type": "application/json"}, xpath="/shops/bookstore")
    assert r.json() == [{"book-store:bookstore": {"bookstore-name": "Chapters", "name": "Chapters"}}]


def test_query_in_xml(cps):
    r = get(cps, f"{A}/a/nodes/query", XML, **{"cps-path": "//categories[@code=1]", "descendants": "none"})
    assert r.status_code == 200, r.text
    assert r.text == (
        "<book-store:categories><code>1</code><name>SciFi</name>"
        "<numberOfBooks>2</numberOfBooks></book-store:categories>"
    )


def test_query_xml_attribute_axis_and_no_result(cps):
    r = get(cps, f"{A}/a/nodes/query", XML, **{"cps-path": "//categories/@name"})
    assert sorted(e.text for e in elements(r.text)) == ["Kids", "SciFi"]
    assert {e.tag for e in elements(r.text)} == {"name"}
    r = get(cps, f"{A}/a/nodes/query", XML, **{"cps-path": "//nothing"})
    assert r.status_code == 200 and r.text == ""


def test_query_xml_with_descendants(cps):
    r = get(cps, f"{A}/a/nodes/query", XML, **{"cps-path": "//categories[@code=2]", "descendants": "all"})
    (kids,) = elements(r.text)
    assert kids.find("books").find("book").findtext("title") == "Matilda"


# --- errors -------------------------------------------------------------------------


def xml_error(r, status: int, message: str) -> ET.Element:
    assert r.status_code == status, r.text
    assert r.headers["Content-Type"].startswith("application/xml"), r.headers
    e = ET.fromstring(r.text)
    assert e.tag == "ErrorMessage"
    assert e.findtext("status") == f"{status} {'NOT_FOUND' if status == 404 else 'BAD_REQUEST'}"
    assert e.findtext("message") == message
    assert e.findtext("details")
    return e


def test_errors_in_xml_for_a_client_accepting_only_xml(cps):
    r = get(cps, f"{A}/a/node", ACCEPT_XML, xpath="/shops/bookstore/categories[@code='9']")
    e = xml_error(r, 404, "DataNode not found")
    assert "categories[@code='9']" in e.findtext("details")
    r = get(cps, f"{A}/a/node", ACCEPT_XML, xpath="/", descendants="some")
    xml_error(r, 400, "FetchDescendantsOption validation error.")
    r = get(cps, f"{A}/a/nodes/query", ACCEPT_XML, **{"cps-path": "//categories["})
    xml_error(r, 400, "Error while parsing cpsPath expression")


def test_errors_stay_json_otherwise(cps):
    # Content-Type XML picks the reply's format, not the error's (as CPS).
    r = get(cps, f"{A}/a/node", XML, xpath="/shops/bookstore/categories[@code='9']")
    assert_cps_error(r, 404, "DataNode not found")
    # An endpoint that never answers in XML.
    r = cps.req("GET", "/v2/dataspaces/ds/anchors/nope", headers=ACCEPT_XML)
    assert_cps_error(r, 400)
    r = get(cps, f"{A}/a/node", {"Accept": "application/xml, application/json"},
            xpath="/shops/bookstore/categories[@code='9']")
    assert_cps_error(r, 404)


# --- composite query ------------------------------------------------------------------


def composite(c: Cps, body, descendants: str = "none", anchor: str = "a"):
    return c.req("POST", f"{A}/{anchor}/nodes/query", params={"descendants": descendants},
                 data=body if isinstance(body, (str, bytes)) else json.dumps(body),
                 headers={"Content-Type": "application/json"})


def codes(r) -> list:
    assert r.status_code == 200, r.text
    return [n["book-store:categories"]["code"] for n in r.json()]


def test_composite_query_of_one_path(cps):
    r = composite(cps, {"cpsPath": "//categories[@code=1]"})
    assert r.json() == [{"book-store:categories": {"code": 1, "name": "SciFi", "numberOfBooks": 2}}]
    # Equal to the GET query, descendants included.
    for d in ("none", "direct", "all"):
        q = cps.query("ds", "a", "//categories", d).json()
        assert composite(cps, {"cpsPath": "//categories"}, d).json() == q


def test_composite_query_and_or(cps):
    both = {"cpsPath": "//categories", "conditions": [{"cpsPath": "//categories[@numberOfBooks>1]"}]}
    assert codes(composite(cps, both)) == [1]
    assert codes(composite(cps, {**both, "operator": "and"})) == [1]
    either = {"cpsPath": "//categories[@code=2]", "operator": "or",
              "conditions": [{"cpsPath": "//categories[@name='SciFi']"}]}
    assert codes(composite(cps, either)) == [2, 1]
    nested = {"cpsPath": "//categories", "conditions": [
        {"operator": "OR", "conditions": [{"cpsPath": "//categories[@code=2]"}, {"cpsPath": "//categories[@code=9]"}]}]}
    assert codes(composite(cps, nested)) == [2]
    none = {"cpsPath": "//categories[@code=1]", "conditions": [{"cpsPath": "//categories[@code=2]"}]}
    assert composite(cps, none).json() == []
    # Unknown members are ignored, as CPS's reader does.
    assert codes(composite(cps, {"cpsPath": "//categories[@code=2]", "comment": "x"})) == [2]


@pytest.mark.parametrize("body, message", [
    ("{", "Parsing error occurred while converting JSON content to specific class type."),
    ("[]", "Invalid composite query"),
    ({"operator": "and"}, "Invalid composite query"),
    ({"cpsPath": "//categories", "operator": "xor"}, "Invalid composite query"),
    ({"cpsPath": "//categories", "conditions": {"cpsPath": "//x"}}, "Invalid composite query"),
    ({"cpsPath": 5}, "Invalid composite query"),
    ({"cpsPath": "//categories["}, "Error while parsing cpsPath expression"),
    ({"cpsPath": "//categories", "conditions": [{"cpsPath": "//["}]}, "Error while parsing cpsPath expression"),
])
def test_composite_query_errors(cps, body, message):
    assert_cps_error(composite(cps, body), 400, message)


def test_composite_query_bad_descendants_and_missing_anchor(cps):
    assert_cps_error(composite(cps, {"cpsPath": "//categories"}, "x"), 400, "FetchDescendantsOption validation error.")
    assert_cps_error(composite(cps, {"cpsPath": "//categories"}, anchor="nope"), 400)


# --- deltas ---------------------------------------------------------------------------


@pytest.fixture
def two(tmp_path):
    srv = start(tmp_path)
    c = Cps(srv)
    c.setup("ds", "ss", ("stores.yang",), ("src", "tgt"))
    src = {"shops": {"bookstore": {"bookstore-name": "Chapters", "categories": [
        {"code": 1, "name": "SciFi"}, {"code": 2, "name": "Kids"}]}}}
    tgt = {"shops": {"bookstore": {"bookstore-name": "Chapters", "categories": [
        {"code": 1, "name": "Comic"}, {"code": 3, "name": "Fiction"}]}}}
    assert c.create("ds", "src", src).status_code == 201
    assert c.create("ds", "tgt", tgt).status_code == 201
    yield c
    assert srv.stop() == 0, srv.stderr_tail()


DELTA_XML = (
    "<deltaReports>"
    "<deltaReport><action>replace</action><xpath>/shops/bookstore/categories[@code='1']</xpath>"
    "<sourceData><categories><code>1</code><name>SciFi</name></categories></sourceData>"
    "<targetData><categories><code>1</code><name>Comic</name></categories></targetData></deltaReport>"
    "<deltaReport><action>remove</action><xpath>/shops/bookstore/categories[@code='2']</xpath>"
    "<sourceData><categories><code>2</code><name>Kids</name></categories></sourceData></deltaReport>"
    "<deltaReport><action>create</action><xpath>/shops/bookstore/categories[@code='3']</xpath>"
    "<targetData><categories><code>3</code><name>Fiction</name></categories></targetData></deltaReport>"
    "</deltaReports>"
)


def test_delta_between_anchors_in_xml(two):
    params = {"target-anchor-name": "tgt", "xpath": "/", "descendants": "all"}
    r = two.req("GET", f"{A}/src/delta", params=params, headers=XML)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/xml")
    assert r.text == DELTA_XML
    # The same report as the JSON one.
    j = two.get(f"{A}/src/delta", **params).json()
    assert [(e["action"], e["xpath"]) for e in j] == [
        (d.findtext("action"), d.findtext("xpath")) for d in ET.fromstring(r.text)]


def test_delta_grouped_in_xml_repeats_list_entries(two):
    params = {"target-anchor-name": "src", "xpath": "/shops/bookstore", "descendants": "all",
              "grouping-enabled": "true"}
    r = two.req("GET", f"{A}/tgt/delta", params=params, headers=XML)
    reports = ET.fromstring(r.text).findall("deltaReport")
    create = [d for d in reports if d.findtext("action") == "create"][0]
    assert [c.findtext("code") for c in create.find("targetData").findall("categories")] == ["2"]


def test_delta_with_posted_xml_document(two):
    doc = ("<shops><bookstore><bookstore-name>Chapters</bookstore-name>"
           "<categories><code>1</code><name>Comic</name></categories>"
           "<categories><code>3</code><name>Fiction</name></categories></bookstore></shops>")
    files = {"targetData": ("target.xml", doc.encode(), "application/xml")}
    r = two.req("POST", f"{A}/src/delta", params={"xpath": "/"}, files=files, headers=ACCEPT_XML)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/xml")
    assert r.text == DELTA_XML
    # Namespaced, in a wrapper, and answered in JSON without Accept XML.
    wrapped = f"<data><shops xmlns='org:onap:ccsdk:sample'>{doc[7:]}</data>"
    files = {"targetData": ("target.xml", wrapped.encode(), "application/xml")}
    r = two.req("POST", f"{A}/src/delta", params={"xpath": "/"}, files=files)
    assert r.status_code == 200, r.text
    assert [e["action"] for e in r.json()] == ["replace", "remove", "create"]


def test_delta_posted_document_errors(two):
    for data, accept in [(b"<shops><nope/></shops>", ACCEPT_XML), (b"<shops>", ACCEPT_XML), (b"  ", {})]:
        files = {"targetData": ("t", data, "application/octet-stream")}
        r = two.req("POST", f"{A}/src/delta", params={"xpath": "/"}, files=files, headers=accept)
        assert r.status_code == 400, r.text
        if accept:
            assert ET.fromstring(r.text).tag == "ErrorMessage"
        else:
            assert_cps_error(r, 400, "Failed to read data file")


def test_delta_with_posted_document_and_its_own_schema(two):
    doc = {"shops": {"bookstore": {"bookstore-name": "Chapters", "categories": [{"code": 1, "name": "SciFi"}]}}}
    files = [("targetData", ("t.json", json.dumps(doc).encode(), "application/json")),
             ("yangResourceFile", ("stores.yang", module_text("stores.yang").encode(), "application/octet-stream"))]
    r = two.req("POST", f"{A}/src/delta", params={"xpath": "/"}, files=files)
    assert r.status_code == 200, r.text
    assert [(e["action"], e["xpath"]) for e in r.json()] == [("remove", "/shops/bookstore/categories[@code='2']")]
    files[1] = ("yangResourceFile", ("stores.txt", b"x", "application/octet-stream"))
    assert_cps_error(two.req("POST", f"{A}/src/delta", params={"xpath": "/"}, files=files), 400,
                     "Unsupported file type.")


def test_apply_xml_delta_report(two):
    r = two.req("POST", f"{A}/src/applyChangesInDeltaReport", data=DELTA_XML, headers=XML)
    assert r.status_code == 201, r.text
    assert two.node("ds", "src", "/", "all") == two.node("ds", "tgt", "/", "all")


def test_apply_xml_report_as_generated_then_grouped(two):
    params = {"target-anchor-name": "tgt", "xpath": "/shops/bookstore", "descendants": "all",
              "grouping-enabled": "true"}
    report = two.req("GET", f"{A}/src/delta", params=params, headers=XML).text
    r = two.req("POST", f"{A}/src/applyChangesInDeltaReport", data=report, headers=XML)
    assert r.status_code == 201, r.text
    assert two.node("ds", "src", "/", "all") == two.node("ds", "tgt", "/", "all")


@pytest.mark.parametrize("body, message", [
    ("<deltaReports><deltaReport>", "XML parsing error at line: 1, column: 28"),
    ("<deltaReports><deltaReport><action>move</action><xpath>/shops</xpath></deltaReport></deltaReports>",
     "Invalid 'action' in delta report."),
    ("<deltaReports><deltaReport><action>create</action><xpath>/shops/bookstore</xpath>"
     "<targetData><nope>1</nope></targetData></deltaReport></deltaReports>", "Data Validation Failed"),
])
def test_apply_bad_xml_report_is_400_and_changes_nothing(two, body, message):
    before = two.node("ds", "src", "/", "all")
    r = two.req("POST", f"{A}/src/applyChangesInDeltaReport", data=body, headers=XML)
    assert_cps_error(r, 400)
    assert r.json()["message"].startswith(message.split(":")[0]), r.json()
    assert two.node("ds", "src", "/", "all") == before


def test_apply_xml_remove_of_a_missing_node_names_its_xpath(two):
    body = ("<deltaReports><deltaReport><action>remove</action>"
            "<xpath>/shops/bookstore/categories[@code='9']</xpath></deltaReport></deltaReports>")
    r = two.req("POST", f"{A}/src/applyChangesInDeltaReport", data=body, headers=XML)
    err = assert_cps_error(r, 400, "DataNode not found")
    assert "/shops/bookstore/categories[@code='9']" in err["details"], err


def test_xml_data_body_without_namespace(cps):
    # CPS's documents name no namespace: each element is read in its
    # schema node's module's namespace.
    cps.anchor("ds", "ss", "plain")
    doc = ("<shops><bookstore><bookstore-name>Plain</bookstore-name>"
           "<categories><code>4</code><name>Maps</name></categories></bookstore></shops>")
    r = cps.send("POST", f"{A}/plain/nodes", doc, params={"xpath": "/"}, headers=XML)
    assert r.status_code == 201, r.text
    r = cps.send("POST", f"{A}/plain/list-nodes", "<categories><code>5</code><name>Art</name></categories>",
                 params={"xpath": "/shops/bookstore"}, headers=XML)
    assert r.status_code == 201, r.text
    got = cps.node("ds", "plain", "/shops/bookstore", "all")
    assert got == [{"book-store:bookstore": {"bookstore-name": "Plain", "categories": [
        {"code": 4, "name": "Maps"}, {"code": 5, "name": "Art"}]}}]
    r = cps.send("POST", f"{A}/plain/list-nodes", "<categories><code>x</code></categories>",
                 params={"xpath": "/shops/bookstore"}, headers=XML)
    assert_cps_error(r, 400, "Data Validation Failed")

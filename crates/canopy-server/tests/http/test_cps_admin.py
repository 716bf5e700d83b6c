"""CPS REST admin API over `canopy serve`: dataspaces, schema sets, anchors
(cps-rest OpenAPI cpsAdmin*.yml)."""

from __future__ import annotations

import pytest

from cps_support import Cps, assert_cps_error, module_text, start, zip_of


@pytest.fixture
def cps(tmp_path):
    srv = start(tmp_path)
    yield Cps(srv)
    assert srv.stop() == 0, srv.stderr_tail()


def test_dataspace_create_list_get_delete(cps):
    r = cps.req("POST", "/v2/dataspaces", params={"dataspace-name": "ds1"})
    assert r.status_code == 201 and r.text == ""
    r = cps.req("POST", "/v1/dataspaces", params={"dataspace-name": "ds2"})
    assert r.status_code == 201 and r.text == "ds2"
    r = cps.get("/v1/admin/dataspaces")
    assert r.status_code == 200
    assert sorted(d["name"] for d in r.json()) == ["ds1", "ds2"]
    assert cps.get("/v2/admin/dataspaces/ds1").json() == {"name": "ds1"}
    r = cps.req("DELETE", "/v2/dataspaces", params={"dataspace-name": "ds1"})
    assert r.status_code == 204
    assert sorted(d["name"] for d in cps.get("/v2/admin/dataspaces").json()) == ["ds2"]


def test_duplicate_dataspace_is_409(cps):
    cps.dataspace("ds")
    r = cps.req("POST", "/v2/dataspaces", params={"dataspace-name": "ds"})
    assert_cps_error(r, 409, "Already defined exception")


def test_missing_dataspace_is_400(cps):
    # CPS reports an unknown dataspace as a bad request (CpsAdminException).
    body = assert_cps_error(cps.get("/v2/admin/dataspaces/nope"), 400, "Dataspace not found")
    assert "nope" in body["details"]
    assert_cps_error(cps.get("/v2/dataspaces/nope/anchors"), 400)


@pytest.mark.parametrize("name", ["bad name", "a/b", "x!y", ""])
def test_invalid_dataspace_name_is_400(cps, name):
    r = cps.req("POST", "/v2/dataspaces", params={"dataspace-name": name})
    assert_cps_error(r, 400)


def test_dataspace_with_anchor_cannot_be_deleted(cps):
    cps.setup("ds", "ss", ("stores.yang",), ("a",))
    r = cps.req("DELETE", "/v2/dataspaces", params={"dataspace-name": "ds"})
    assert_cps_error(r, 409)


def test_schema_set_from_one_yang_file(cps):
    cps.dataspace("ds")
    r = cps.schema_set("ds", "ss", "stores.yang")
    assert r.status_code == 201, r.text
    details = cps.get("/v2/dataspaces/ds/schema-sets/ss").json()
    assert details["name"] == "ss" and details["dataspaceName"] == "ds"
    assert details["moduleReferences"] == [
        {"name": "stores", "namespace": "org:onap:ccsdk:sample", "revision": "2020-09-15"}
    ]
    listed = cps.get("/v1/dataspaces/ds/schema-sets").json()
    assert [s["name"] for s in listed] == ["ss"]


def test_schema_set_v1_answers_its_name(cps):
    cps.dataspace("ds")
    r = cps.schema_set("ds", "ss", "stores.yang", version="v1")
    assert r.status_code == 201 and r.text == "ss"


def test_schema_set_from_zip_with_revision_date_import(cps):
    """bookstore imports bookstore-types with a revision-date; the zip names the
    file without a revision, as CPS users bring them."""
    cps.dataspace("ds")
    r = cps.schema_set("ds", "ss", "bookstore.yang", "bookstore-types.yang")
    assert r.status_code == 201, r.text
    refs = cps.get("/v2/dataspaces/ds/schema-sets/ss").json()["moduleReferences"]
    assert sorted((m["name"], m["revision"]) for m in refs) == [
        ("bookstore", "2024-02-08"),
        ("bookstore-types", "2024-01-30"),
    ]


def test_schema_set_two_files_in_one_upload(cps):
    cps.dataspace("ds")
    files = [
        ("file", (f, module_text(f).encode(), "application/octet-stream"))
        for f in ("bookstore.yang", "bookstore-types.yang")
    ]
    r = cps.req("POST", "/v2/dataspaces/ds/schema-sets", params={"schema-set-name": "ss"}, files=files)
    assert r.status_code == 201, r.text


def test_schema_set_with_missing_import_is_400(cps):
    cps.dataspace("ds")
    r = cps.schema_set("ds", "ss", "bookstore.yang")
    assert_cps_error(r, 400)


def test_schema_set_invalid_yang_is_400(cps):
    cps.dataspace("ds")
    files = [("file", ("broken.yang", b"module broken { namespace", "application/octet-stream"))]
    r = cps.req("POST", "/v2/dataspaces/ds/schema-sets", params={"schema-set-name": "ss"}, files=files)
    assert_cps_error(r, 400)


def test_schema_set_file_of_wrong_extension_is_400(cps):
    cps.dataspace("ds")
    files = [("file", ("stores.txt", module_text("stores.yang").encode(), "text/plain"))]
    r = cps.req("POST", "/v2/dataspaces/ds/schema-sets", params={"schema-set-name": "ss"}, files=files)
    assert_cps_error(r, 400)


def test_schema_set_zip_without_yang_is_400(cps):
    cps.dataspace("ds")
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("readme.txt", "nothing here")
    files = [("file", ("empty.zip", buf.getvalue(), "application/zip"))]
    r = cps.req("POST", "/v2/dataspaces/ds/schema-sets", params={"schema-set-name": "ss"}, files=files)
    assert_cps_error(r, 400)


def test_schema_set_without_file_is_400(cps):
    cps.dataspace("ds")
    r = cps.req("POST", "/v2/dataspaces/ds/schema-sets", params={"schema-set-name": "ss"})
    assert_cps_error(r, 400)


def test_duplicate_schema_set_is_409(cps):
    cps.dataspace("ds")
    assert cps.schema_set("ds", "ss", "stores.yang").status_code == 201
    assert_cps_error(cps.schema_set("ds", "ss", "stores.yang"), 409, "Already defined exception")


def test_schema_set_in_use_is_409_then_deleted(cps):
    cps.setup("ds", "ss", ("stores.yang",), ("a",))
    assert_cps_error(cps.req("DELETE", "/v2/dataspaces/ds/schema-sets/ss"), 409)
    assert cps.req("DELETE", "/v2/dataspaces/ds/anchors/a").status_code == 204
    assert cps.req("DELETE", "/v2/dataspaces/ds/schema-sets/ss").status_code == 204
    assert_cps_error(cps.get("/v2/dataspaces/ds/schema-sets/ss"), 400, "Schema Set not found.")


def test_anchor_create_list_get_delete(cps):
    cps.dataspace("ds")
    assert cps.schema_set("ds", "s1", "stores.yang").status_code == 201
    assert cps.schema_set("ds", "s2", "deep-network.yang").status_code == 201
    cps.anchor("ds", "s1", "a1")
    r = cps.req("POST", "/v1/dataspaces/ds/anchors", params={"schema-set-name": "s2", "anchor-name": "a2"})
    assert r.status_code == 201 and r.text == "a2"
    assert cps.get("/v2/dataspaces/ds/anchors/a1").json() == {
        "name": "a1",
        "dataspaceName": "ds",
        "schemaSetName": "s1",
    }
    names = sorted(a["name"] for a in cps.get("/v2/dataspaces/ds/anchors").json())
    assert names == ["a1", "a2"]
    only = cps.get("/v2/dataspaces/ds/anchors", **{"schema-set-names": "s2"}).json()
    assert [a["name"] for a in only] == ["a2"]
    assert cps.req("DELETE", "/v2/dataspaces/ds/anchors/a1").status_code == 204
    assert_cps_error(cps.get("/v2/dataspaces/ds/anchors/a1"), 400, "Anchor not found")


def test_anchor_on_missing_schema_set_is_400(cps):
    cps.dataspace("ds")
    r = cps.req("POST", "/v2/dataspaces/ds/anchors", params={"schema-set-name": "nope", "anchor-name": "a"})
    assert_cps_error(r, 400)


def test_duplicate_anchor_is_409(cps):
    cps.setup("ds", "ss", ("stores.yang",), ("a",))
    r = cps.req("POST", "/v2/dataspaces/ds/anchors", params={"schema-set-name": "ss", "anchor-name": "a"})
    assert_cps_error(r, 409, "Already defined exception")


def test_deleted_anchor_data_is_gone(cps):
    cps.setup("ds", "ss", ("stores.yang",), ("a",))
    assert cps.create("ds", "a", {"shops": {"bookstore": {"name": "x"}}}).status_code == 201
    assert cps.req("DELETE", "/v2/dataspaces/ds/anchors/a").status_code == 204
    cps.anchor("ds", "ss", "a")
    r = cps.get("/v2/dataspaces/ds/anchors/a/node", xpath="/shops")
    assert_cps_error(r, 404, "DataNode not found")


def test_admin_state_survives_restart(tmp_path):
    srv = start(tmp_path)
    cps = Cps(srv)
    cps.setup("ds", "ss", ("stores.yang",), ("a",))
    assert cps.create("ds", "a", {"shops": {"bookstore": {"name": "x"}}}).status_code == 201
    assert srv.stop() == 0
    srv.proc = None
    srv.session = type(srv.session)()
    srv.start()
    try:
        assert cps.get("/v2/dataspaces/ds/anchors/a").status_code == 200
        assert cps.node("ds", "a", "/shops/bookstore", version="v1") == {"book-store:bookstore": {"name": "x"}}
    finally:
        assert srv.stop() == 0


def test_clean_dataspace_is_204(cps):
    cps.dataspace("ds")
    assert cps.req("POST", "/v2/admin/dataspaces/ds/actions/clean").status_code == 204

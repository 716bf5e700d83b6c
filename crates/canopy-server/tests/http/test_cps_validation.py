"""How CPS anchors check data: CPS parses documents against the schema set
(names, structure, types) and checks no constraint between nodes (mandatory
nodes, min-elements, leafrefs, must). canopy's schema sets do the same unless
created with its own `validation=full` parameter, which holds their anchors to
every constraint."""

from __future__ import annotations

import pytest

import io
import zipfile

from cps_support import CPS_MODULES, Cps, assert_cps_error, start

NODES = "/v2/dataspaces/ds/anchors/a/nodes"

# A device on a site nobody declared, with too many ports, and a site without
# its mandatory region: every constraint between nodes broken, types kept.
LOOSE = {"inventory:inventory": {"site": [{"name": "lab"}], "device": [{"id": 1, "site": "nowhere", "ports": 96}]}}
VALID = {"inventory:inventory": {"site": [{"name": "lab", "region": "eu"}], "device": [{"id": 1, "site": "lab", "ports": 24}]}}


def setup(cps: Cps, level: str | None) -> None:
    cps.dataspace("ds")
    params = {"schema-set-name": "ss"}
    if level is not None:
        params["validation"] = level
    text = (CPS_MODULES / "inventory.yang").read_bytes()
    r = cps.req("POST", "/v2/dataspaces/ds/schema-sets", params=params, files=[("file", ("inventory.yang", text))])
    assert r.status_code == 201, r.text
    cps.anchor("ds", "ss", "a")


@pytest.fixture
def server(tmp_path):
    srv = start(tmp_path)
    yield srv
    assert srv.stop() == 0, srv.stderr_tail()


def test_default_checks_structure_and_types_only(server):
    cps = Cps(server)
    setup(cps, None)
    r = cps.create("ds", "a", LOOSE)
    assert r.status_code == 201, r.text
    got = cps.node("ds", "a", "/inventory/device[@id='1']")
    assert got == [{"inv:device": {"id": 1, "site": "nowhere", "ports": 96}}]
    # Types and names are still checked: nothing is stored.
    bad_type = {"inventory:inventory": {"device": [{"id": 2, "ports": 300}]}}
    assert_cps_error(cps.send("PATCH", NODES, bad_type, params={"xpath": "/"}), 400, "Data Validation Failed")
    bad_length = {"site": [{"name": "lab", "region": "far-too-long-a-region"}]}
    r = cps.send("PATCH", NODES, bad_length, params={"xpath": "/inventory"})
    assert_cps_error(r, 400, "Data Validation Failed")
    unknown = {"inventory:inventory": {"shelf": [{"id": 1}]}}
    assert_cps_error(cps.send("PATCH", NODES, unknown, params={"xpath": "/"}), 400, "Data Validation Failed")
    assert cps.get("/v2/dataspaces/ds/anchors/a/node", xpath="/inventory/device[@id='2']").status_code == 404
    # Deleting the last site (min-elements 1) is not refused either.
    r = cps.req("DELETE", NODES, params={"xpath": "/inventory/site[@name='lab']"})
    assert r.status_code == 204, r.text


def test_full_validation_is_per_schema_set(server):
    cps = Cps(server)
    setup(cps, "full")
    r = cps.create("ds", "a", LOOSE)
    assert_cps_error(r, 400, "Data Validation Failed")
    for needle in ("region: mandatory node is missing", "leafref", "at most 48 ports"):
        assert needle in r.json()["details"], r.text
    assert cps.get("/v2/dataspaces/ds/anchors/a/node", xpath="/inventory").status_code == 404
    r = cps.create("ds", "a", VALID)
    assert r.status_code == 201, r.text
    # Deleting the last site breaks min-elements and the device's leafref.
    r = cps.req("DELETE", NODES, params={"xpath": "/inventory/site[@name='lab']"})
    assert_cps_error(r, 400, "Data Validation Failed")
    # Another schema set of the same dataspace keeps CPS's default.
    text = (CPS_MODULES / "inventory.yang").read_bytes()
    r = cps.req("POST", "/v2/dataspaces/ds/schema-sets", params={"schema-set-name": "loose"},
                files=[("file", ("inventory.yang", text))])
    assert r.status_code == 201, r.text
    cps.anchor("ds", "loose", "b")
    r = cps.create("ds", "b", LOOSE)
    assert r.status_code == 201, r.text


def test_unknown_validation_level_is_400(server):
    cps = Cps(server)
    cps.dataspace("ds")
    text = (CPS_MODULES / "inventory.yang").read_bytes()
    r = cps.req("POST", "/v2/dataspaces/ds/schema-sets", params={"schema-set-name": "ss", "validation": "strict"},
                files=[("file", ("inventory.yang", text))])
    assert_cps_error(r, 400, "Invalid validation level")
    assert "strict" in r.json()["details"]
    assert cps.get("/v2/dataspaces/ds/schema-sets").json() == []


def test_level_survives_restart(tmp_path):
    srv = start(tmp_path)
    cps = Cps(srv)
    setup(cps, "full")
    assert srv.stop() == 0, srv.stderr_tail()
    srv.proc = None
    srv.session = type(srv.session)()
    srv.start()
    try:
        cps = Cps(srv)
        assert_cps_error(cps.create("ds", "a", LOOSE), 400, "Data Validation Failed")
        text = (CPS_MODULES / "inventory.yang").read_bytes()
        r = cps.req("POST", "/v2/dataspaces/ds/schema-sets", params={"schema-set-name": "loose"},
                    files=[("file", ("inventory.yang", text))])
        assert r.status_code == 201, r.text
        cps.anchor("ds", "loose", "b")
        assert cps.create("ds", "b", LOOSE).status_code == 201
    finally:
        assert srv.stop() == 0, srv.stderr_tail()


def test_unresolved_leafref_is_relaxed_with_a_warning(server):
    """A leafref path that does not resolve where its grouping is used: ODL
    yangtools (CPS) loads the set, libyang refuses it. canopy loads it with
    that leaf as a string and says so in a Warning header."""
    cps = Cps(server)
    cps.dataspace("ds")
    text = (CPS_MODULES / "port-refs.yang").read_bytes()
    r = cps.req("POST", "/v2/dataspaces/ds/schema-sets", params={"schema-set-name": "ss"},
                files=[("file", ("port-refs.yang", text))])
    assert r.status_code == 201, r.text
    warning = r.headers.get("Warning", "")
    assert warning.startswith('299 canopy "port-refs.yang:11: leafref `port`'), warning
    assert "../../port/name" in warning and "string" in warning, warning
    cps.anchor("ds", "ss", "a")
    doc = {"port-refs:devices": {"device": [{"id": "d1", "port": [{"name": "p1"}], "link": {"port": "p9"}}]},
           "port-refs:spare": {"port": "anything"}}
    r = cps.create("ds", "a", doc)
    assert r.status_code == 201, r.text
    assert cps.node("ds", "a", "/spare") == [{"pr:spare": {"port": "anything"}}]
    assert cps.node("ds", "a", "/devices/device[@id='d1']/link") == [{"pr:link": {"port": "p9"}}]
    # The set is listed with its module as any other.
    refs = cps.get("/v2/dataspaces/ds/schema-sets/ss").json()["moduleReferences"]
    assert [m["name"] for m in refs] == ["port-refs"], refs


def test_other_schema_errors_are_not_relaxed(server):
    cps = Cps(server)
    cps.dataspace("ds")
    text = b"module bad { namespace urn:bad; prefix b;\n  leaf x { type nope; }\n}\n"
    r = cps.req("POST", "/v2/dataspaces/ds/schema-sets", params={"schema-set-name": "ss"},
                files=[("file", ("bad.yang", text))])
    body = assert_cps_error(r, 400, "Model validation failed")
    assert "bad.yang:2" in body["details"], body
    assert "Warning" not in r.headers


def zip_bytes(files: list) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for _, (name, data) in files:
            z.writestr(name, data)
    return buf.getvalue()


def test_a_copy_of_a_builtin_types_module_is_relaxed_with_a_warning(server):
    """A module with the namespace and revision of ietf-inet-types under
    another name: libyang, which always holds ietf-inet-types, refuses it;
    CPS's YANG parser loads the set. canopy loads it with a namespace of its
    own, says so, and its types still check values."""
    cps = Cps(server)
    cps.dataspace("ds")
    files = [("file", (f, (CPS_MODULES / f).read_bytes())) for f in ("svc.yang", "svc-types.yang")]
    r = cps.req("POST", "/v2/dataspaces/ds/schema-sets", params={"schema-set-name": "ss"},
                files=[("file", ("svc.zip", zip_bytes(files)))])
    assert r.status_code == 201, r.text
    warning = r.headers.get("Warning", "")
    assert warning.startswith('299 canopy "svc-types.yang:2: module `svc-types` has the namespace'), warning
    cps.anchor("ds", "ss", "a")
    r = cps.create("ds", "a", {"svc:services": {"service": [{"name": "web", "port": 8080}]}})
    assert r.status_code == 201, r.text
    assert cps.node("ds", "a", "/services/service[@name='web']") == [{"svc:service": {"name": "web", "port": 8080}}]
    r = cps.create("ds", "a", {"service": [{"name": "bad", "port": 0}]}, xpath="/services")
    assert_cps_error(r, 400)
    refs = cps.get("/v2/dataspaces/ds/schema-sets/ss").json()["moduleReferences"]
    assert sorted(m["name"] for m in refs) == ["svc", "svc-types"], refs


def test_model_errors_name_the_uploaded_file(server):
    """An error in a module read through another's import names the file as
    uploaded, not where the server put it."""
    cps = Cps(server)
    cps.dataspace("ds")
    bad = b"module lib { namespace urn:lib; prefix l;\n  typedef t { type nope; }\n}\n"
    user = b"module user { namespace urn:user; prefix u;\n  import lib { prefix l; }\n  leaf x { type l:t; }\n}\n"
    files = [("file", ("user.yang", user)), ("file", ("lib.yang", bad))]
    r = cps.req("POST", "/v2/dataspaces/ds/schema-sets", params={"schema-set-name": "ss"},
                files=[("file", ("set.zip", zip_bytes(files)))])
    body = assert_cps_error(r, 400, "Model validation failed")
    assert "/tmp" not in body["details"] and ".tmp" not in body["details"], body

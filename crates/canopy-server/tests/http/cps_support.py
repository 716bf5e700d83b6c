"""Helpers of the CPS REST tests (test_cps_*.py): a `canopy serve` on an empty
store, the CPS error body, uploads of schema sets and the sample documents.

The CPS REST API lives under /cps/api (ONAP CPS's cps-rest OpenAPI: v1, v2 and
v3 paths). Errors are CPS's ErrorMessage: {"status", "message", "details"}."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import requests

from conftest import MODULES, Server, TIMEOUT

CPS = "/cps/api"
CPS_MODULES = MODULES / "cps"


def module_text(name: str) -> str:
    return (CPS_MODULES / name).read_text()


class Cps:
    """A CPS client over one server."""

    def __init__(self, server: Server):
        self.server = server

    def req(self, method: str, path: str, params: dict | None = None, **kw: Any) -> requests.Response:
        kw.setdefault("timeout", TIMEOUT)
        return self.server.session.request(method, self.server.url(CPS + path), params=params, **kw)

    def get(self, path: str, **params: Any) -> requests.Response:
        return self.req("GET", path, params=params)

    def send(self, method: str, path: str, body: Any, params: dict | None = None, **kw: Any) -> requests.Response:
        data = body if isinstance(body, (str, bytes)) else json.dumps(body)
        headers = {"Content-Type": "application/json", **kw.pop("headers", {})}
        return self.req(method, path, params=params, data=data, headers=headers, **kw)

    # admin

    def dataspace(self, name: str) -> None:
        r = self.req("POST", "/v2/dataspaces", params={"dataspace-name": name})
        assert r.status_code == 201, r.text

    def schema_set(self, ds: str, name: str, *files: str, version: str = "v2") -> requests.Response:
        uploads = [("file", (f, module_text(f).encode(), "application/octet-stream")) for f in files]
        if len(files) > 1:
            uploads = [("file", ("modules.zip", zip_of(*files), "application/zip"))]
        return self.req(
            "POST", f"/{version}/dataspaces/{ds}/schema-sets", params={"schema-set-name": name}, files=uploads
        )

    def anchor(self, ds: str, schema_set: str, name: str) -> None:
        r = self.req(
            "POST", f"/v2/dataspaces/{ds}/anchors", params={"schema-set-name": schema_set, "anchor-name": name}
        )
        assert r.status_code == 201, r.text

    def setup(self, ds: str, schema_set: str, files: tuple[str, ...], anchors: tuple[str, ...]) -> None:
        self.dataspace(ds)
        r = self.schema_set(ds, schema_set, *files)
        assert r.status_code == 201, r.text
        for a in anchors:
            self.anchor(ds, schema_set, a)

    # data

    def nodes(self, ds: str, anchor: str) -> str:
        return f"/v2/dataspaces/{ds}/anchors/{anchor}/nodes"

    def create(self, ds: str, anchor: str, body: Any, xpath: str = "/", **params: Any) -> requests.Response:
        return self.send("POST", self.nodes(ds, anchor), body, params={"xpath": xpath, **params})

    def node(self, ds: str, anchor: str, xpath: str = "/", descendants: str = "all", version: str = "v2") -> Any:
        r = self.get(f"/{version}/dataspaces/{ds}/anchors/{anchor}/node", xpath=xpath, descendants=descendants)
        assert r.status_code == 200, f"GET node {xpath}: {r.status_code} {r.text[:500]}"
        return r.json()

    def query(self, ds: str, anchor: str, cps_path: str, descendants: str = "none") -> requests.Response:
        return self.get(
            f"/v2/dataspaces/{ds}/anchors/{anchor}/nodes/query", **{"cps-path": cps_path, "descendants": descendants}
        )


def zip_of(*files: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for f in files:
            z.writestr(f"yang/{f}", module_text(f))
    return buf.getvalue()


def assert_cps_error(resp: requests.Response, status: int, message: str | None = None) -> dict:
    """CPS's ErrorMessage body with the status given; `message` when given."""
    assert resp.status_code == status, f"expected {status}, got {resp.status_code}: {resp.text[:500]}"
    assert resp.headers.get("Content-Type", "").startswith("application/json"), resp.headers
    body = resp.json()
    assert set(body) == {"status", "message", "details"}, body
    assert body["status"].startswith(str(status)), body
    assert isinstance(body["details"], str) and body["details"], body
    if message is not None:
        assert body["message"] == message, body
    return body


def start(tmp_path: Path) -> Server:
    """A `canopy serve` on a new, empty store."""
    workdir = tmp_path / "cps-server"
    workdir.mkdir()
    store = workdir / "store"
    store.mkdir()
    srv = Server(workdir=workdir, store=store)
    srv.start()
    return srv


# The sample data of the CPS path documentation (docs/cps-path.rst).
STORES_DATA = {
    "shops": {
        "bookstore": {
            "bookstore-name": "Chapters",
            "name": "Chapters",
            "categories": [
                {
                    "code": 1,
                    "name": "SciFi",
                    "numberOfBooks": 2,
                    "books": {
                        "book": [
                            {
                                "title": "2001: A Space Odyssey",
                                "price": 5,
                                "label": ["sale", "classic"],
                                "edition": ["1968", "2018"],
                            },
                            {"title": "Dune", "price": 5, "label": ["classic"], "edition": ["1965"]},
                        ]
                    },
                },
                {"code": 2, "name": "Kids", "numberOfBooks": 1, "books": {"book": [{"title": "Matilda"}]}},
            ],
        }
    }
}

# The bookstore of CPS's REST examples (dataSampleForV3), extended.
BOOKSTORE_DATA = {
    "bookstore": {
        "bookstore-name": "Chapters",
        "categories": [
            {
                "code": "01",
                "name": "SciFi",
                "books": [
                    {"title": "Book 1", "lang": "N/A", "price": 11, "editions": [2009]},
                    {"title": "Book 2", "lang": "German", "price": 39, "editions": [2007, 2013, 2021]},
                ],
            },
            {
                "code": "02",
                "name": "kids",
                "books": [{"title": "Book 3", "lang": "English", "price": 15, "editions": [2010]}],
            },
        ],
    }
}


def network(devices: int, interfaces: int = 2, units: int = 2) -> dict:
    """A deep-network document: `devices` devices with interfaces and units."""
    return {
        "network": {
            "device": [
                {
                    "id": f"dev-{d}",
                    "vendor": "acme" if d % 2 == 0 else "zenith",
                    "site": f"site-{d % 3}",
                    "interface": [
                        {
                            "name": f"eth{i}",
                            "mtu": 1500 + i,
                            "enabled": i % 2 == 0,
                            "unit": [
                                {
                                    "number": u,
                                    "vlan": 100 * d + 10 * i + u,
                                    "counters": {"in-octets": u, "out-octets": 2 * u},
                                }
                                for u in range(units)
                            ],
                        }
                        for i in range(interfaces)
                    ],
                    "route": [
                        {"destination": "10.0.0.0", "prefix-length": 8, "next-hop": f"192.0.2.{d}"},
                        {"destination": "10.0.0.0", "prefix-length": 16, "next-hop": f"198.51.100.{d}"},
                    ],
                }
                for d in range(devices)
            ]
        }
    }


def by_key(nodes: list[dict], name: str, key: str) -> list:
    """The `key` leaf of each `{name: {...}}` entry of a v2 reply."""
    return sorted(n[name][key] for n in nodes)

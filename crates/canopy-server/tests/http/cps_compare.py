#!/usr/bin/env python3
"""Sends the same CPS REST requests to a running ONAP CPS and to `canopy serve`
and reports where their replies differ.

Not a test (pytest collects only test_*.py, and CI runs none of this): it
needs a CPS to talk to.

    python3 cps_compare.py --cps http://HOST:PORT [--canopy http://HOST:PORT]

Without --canopy, a `canopy serve` is started on an empty LMDB store in a
temporary directory (the binary $CANOPY_BIN, default target/debug/canopy)
and stopped at the end. Every run creates dataspaces of its own (named with
a random suffix) on both servers and deletes them at the end.

The requests: the bookstore model of CPS's docs/cps-path.rst (a dataspace, a
schema set, anchors, the sample data); GET `node` with every descendants
option, in JSON and XML; every query of docs/cps-path.rst (tests of
test_cps_query.py), in JSON and XML; the query across the dataspace with
paging; writes (PUT, PATCH, list-nodes, DELETE); errors (400, 404, 409);
deltas between anchors and with a posted document, in JSON and XML; applying
a delta report. For each: the statuses, and the bodies compared as JSON
(objects without their key order, each reply's lists also without their
order) or as XML (also without element order), or as text. Error bodies are
compared on status and message; their details are shown when they differ.

Output: one line per request (`same`, `same but order`, `DIFFERS`), the two
replies of each difference, and a count. Exit status 0 when every reply is
the same (order aside), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import requests

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cps_support import STORES_DATA  # noqa: E402
from test_cps_query import ATTRIBUTE_EXAMPLES, DOC_EXAMPLES  # noqa: E402

MODULES = HERE / "modules" / "cps"
TIMEOUT = 60


class Target:
    def __init__(self, name: str, base: str):
        self.name = name
        self.base = base.rstrip("/") + "/cps/api"
        self.http = requests.Session()

    def send(self, method: str, path: str, params=None, headers=None, data=None, files=None) -> requests.Response:
        return self.http.request(
            method, self.base + path, params=params, headers=headers, data=data, files=files, timeout=TIMEOUT
        )


def start_canopy(workdir: Path) -> tuple[subprocess.Popen, str]:
    binary = os.environ.get("CANOPY_BIN", str(HERE.parents[3] / "target" / "debug" / "canopy"))
    store = workdir / "store"
    store.mkdir()
    proc = subprocess.Popen(
        [binary, "serve", "--store", f"lmdb:{store}", "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=open(workdir / "serve.stderr", "wb"),
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout
    line = proc.stdout.readline().decode()
    if not line.startswith("listening on "):
        proc.kill()
        sys.exit(f"canopy serve did not start: {line!r}")
    return proc, line[len("listening on ") :].strip()


# --- comparing ------------------------------------------------------------------


def unordered(v: Any) -> Any:
    """`v` with every list sorted (by canonical text), recursively."""
    if isinstance(v, dict):
        return {k: unordered(x) for k, x in v.items()}
    if isinstance(v, list):
        return sorted((unordered(x) for x in v), key=lambda x: json.dumps(x, sort_keys=True))
    return v


def xml_canon(text: str, ordered: bool) -> Any:
    """An XML body (possibly several sibling elements) as a comparable tree."""

    def tree(e: ET.Element) -> Any:
        kids = [tree(c) for c in e]
        if not ordered:
            kids.sort(key=lambda x: json.dumps(x))
        return [e.tag, (e.text or "").strip(), kids]

    # CPS names top-level nodes `prefix:name` without declaring the prefix.
    plain = re.sub(r"<(/?)[A-Za-z_][\w.-]*:", r"<\1", text)
    return tree(ET.fromstring(f"<r>{plain}</r>"))


def kind(r: requests.Response) -> str:
    ct = r.headers.get("Content-Type", "")
    body = r.text.strip()
    if not body:
        return "empty"
    if body.startswith("<"):
        return "xml"
    try:
        json.loads(body)
        return "json"
    except ValueError:
        return "text"


def compare(a: requests.Response, b: requests.Response, error_details: bool) -> tuple[str, str]:
    """('same' | 'same but order' | 'DIFFERS', why)."""
    if a.status_code != b.status_code:
        return "DIFFERS", f"status {a.status_code} vs {b.status_code}"
    ka, kb = kind(a), kind(b)
    if ka != kb:
        return "DIFFERS", f"body {ka} vs {kb}"
    if ka == "json":
        ja, jb = json.loads(a.text), json.loads(b.text)
        if a.status_code >= 400 and isinstance(ja, dict) and isinstance(jb, dict):
            keys = ("status", "message") + (("details",) if error_details else ())
            ja = {k: ja.get(k) for k in keys}
            jb = {k: jb.get(k) for k in keys}
        if ja == jb:
            return "same", ""
        if unordered(ja) == unordered(jb):
            return "same but order", "lists in another order"
        return "DIFFERS", "JSON bodies differ"
    if ka == "xml":
        try:
            if xml_canon(a.text, True) == xml_canon(b.text, True):
                return "same", ""
            if xml_canon(a.text, False) == xml_canon(b.text, False):
                return "same but order", "elements in another order"
        except ET.ParseError as e:
            return ("same", "") if a.text == b.text else ("DIFFERS", f"XML not comparable: {e}")
        return "DIFFERS", "XML bodies differ"
    if a.text == b.text:
        return "same", ""
    return "DIFFERS", "bodies differ"


# --- the requests -----------------------------------------------------------------


def steps(ds: str) -> list[dict]:
    """The requests, in order; each a dict of send() arguments plus a name."""
    stores = (MODULES / "stores.yang").read_bytes()
    a = f"/v2/dataspaces/{ds}/anchors"
    xml = {"Content-Type": "application/xml"}
    accept_xml = {"Accept": "application/xml"}
    jsonh = {"Content-Type": "application/json"}
    out: list[dict] = [
        dict(name="create dataspace", method="POST", path="/v2/dataspaces", params={"dataspace-name": ds}),
        dict(name="create dataspace again (409)", method="POST", path="/v2/dataspaces",
             params={"dataspace-name": ds}),
        dict(name="get dataspace", method="GET", path=f"/v1/admin/dataspaces/{ds}"),
        dict(name="schema set", method="POST", path=f"/v2/dataspaces/{ds}/schema-sets",
             params={"schema-set-name": "ss"}, files=[("file", ("stores.yang", stores))]),
        dict(name="schema set again (409)", method="POST", path=f"/v2/dataspaces/{ds}/schema-sets",
             params={"schema-set-name": "ss"}, files=[("file", ("stores.yang", stores))]),
        dict(name="schema set of a .txt (400)", method="POST", path=f"/v2/dataspaces/{ds}/schema-sets",
             params={"schema-set-name": "bad"}, files=[("file", ("stores.txt", stores))]),
        dict(name="get schema set", method="GET", path=f"/v2/dataspaces/{ds}/schema-sets/ss"),
    ]
    for anchor in ("a", "b", "c"):
        out.append(dict(name=f"anchor {anchor}", method="POST", path=a,
                        params={"schema-set-name": "ss", "anchor-name": anchor}))
    out += [
        dict(name="anchor again (409)", method="POST", path=a, params={"schema-set-name": "ss", "anchor-name": "a"}),
        dict(name="anchor on a missing schema set", method="POST", path=a,
             params={"schema-set-name": "nope", "anchor-name": "z"}),
        dict(name="get anchor", method="GET", path=f"{a}/a"),
        dict(name="get missing anchor", method="GET", path=f"{a}/nope"),
        dict(name="post data", method="POST", path=f"{a}/a/nodes", params={"xpath": "/"}, headers=jsonh,
             data=json.dumps(STORES_DATA)),
        dict(name="post data again (409)", method="POST", path=f"{a}/a/nodes", params={"xpath": "/"},
             headers=jsonh, data=json.dumps(STORES_DATA)),
        dict(name="post data on b", method="POST", path=f"{a}/b/nodes", params={"xpath": "/"}, headers=jsonh,
             data=json.dumps(STORES_DATA)),
        dict(name="post malformed JSON (400)", method="POST", path=f"{a}/c/nodes", params={"xpath": "/"},
             headers=jsonh, data="{"),
        dict(name="post unknown node (400)", method="POST", path=f"{a}/c/nodes", params={"xpath": "/"},
             headers=jsonh, data='{"nothing": {}}'),
    ]
    for version in ("v1", "v2", "v3"):
        for d in (["false", "true"] if version == "v1" else ["none", "direct", "2", "all"]):
            pname = "include-descendants" if version == "v1" else "descendants"
            for xpath in ("/", "/shops/bookstore", "/shops/bookstore/categories[@code='1']",
                          "/shops/bookstore/categories"):
                out.append(dict(name=f"GET {version} node {xpath} {pname}={d}", method="GET",
                                path=f"/{version}/dataspaces/{ds}/anchors/a/node",
                                params={"xpath": xpath, pname: d}))
    for version in ("v2", "v3"):
        for xpath in ("/", "/shops/bookstore", "/shops/bookstore/categories"):
            out.append(dict(name=f"GET {version} node {xpath} all, XML", method="GET",
                            path=f"/{version}/dataspaces/{ds}/anchors/a/node",
                            params={"xpath": xpath, "descendants": "all"}, headers=xml))
        out.append(dict(name=f"GET {version} node, Accept XML", method="GET",
                        path=f"/{version}/dataspaces/{ds}/anchors/a/node",
                        params={"xpath": "/shops/bookstore", "descendants": "none"}, headers=accept_xml))
    out += [
        dict(name="GET node missing (404)", method="GET", path=f"/v2/dataspaces/{ds}/anchors/a/node",
             params={"xpath": "/shops/bookstore/categories[@code='9']"}),
        dict(name="GET node missing (404), Accept XML", method="GET", path=f"/v2/dataspaces/{ds}/anchors/a/node",
             params={"xpath": "/shops/bookstore/categories[@code='9']"}, headers=accept_xml),
        dict(name="GET node bad xpath (400)", method="GET", path=f"/v2/dataspaces/{ds}/anchors/a/node",
             params={"xpath": "/shops/bookstore["}),
        dict(name="GET node bad descendants (400)", method="GET", path=f"/v2/dataspaces/{ds}/anchors/a/node",
             params={"xpath": "/", "descendants": "some"}),
        dict(name="GET node of an empty anchor", method="GET", path=f"/v2/dataspaces/{ds}/anchors/c/node",
             params={"xpath": "/"}),
    ]
    for cps_path, _ in DOC_EXAMPLES + ATTRIBUTE_EXAMPLES:
        out.append(dict(name=f"query {cps_path}", method="GET", path=f"{a}/a/nodes/query",
                        params={"cps-path": cps_path, "descendants": "none"}))
    for cps_path in ("//categories[@code<'2']", "//book[@price=5.0]", "//categories[@name=1]",
                     "//categories[@code!='1']", "//book[@price='05']"):
        out.append(dict(name=f"query {cps_path}", method="GET", path=f"{a}/a/nodes/query",
                        params={"cps-path": cps_path}))
    for cps_path in ("//categories", "//categories/@name", "//nothing"):
        out.append(dict(name=f"query {cps_path} all, XML", method="GET", path=f"{a}/a/nodes/query",
                        params={"cps-path": cps_path, "descendants": "all"}, headers=xml))
    out += [
        dict(name="query v1 include-descendants", method="GET", path=f"/v1/dataspaces/{ds}/anchors/a/nodes/query",
             params={"cps-path": "//categories[@code=1]", "include-descendants": "true"}),
        dict(name="query bad cps path (400)", method="GET", path=f"{a}/a/nodes/query",
             params={"cps-path": "//categories[@code="}),
        dict(name="query across the dataspace", method="GET", path=f"/v2/dataspaces/{ds}/nodes/query",
             params={"cps-path": "//categories[@code=1]", "descendants": "none"}),
        dict(name="query across the dataspace, page 1 of 1", method="GET", path=f"/v2/dataspaces/{ds}/nodes/query",
             params={"cps-path": "//bookstore", "pageIndex": 1, "pageSize": 1}),
        dict(name="query across the dataspace, page 2", method="GET", path=f"/v2/dataspaces/{ds}/nodes/query",
             params={"cps-path": "//bookstore", "pageIndex": 2, "pageSize": 1}),
        dict(name="query across the dataspace, pageSize 0", method="GET", path=f"/v2/dataspaces/{ds}/nodes/query",
             params={"cps-path": "//bookstore", "pageIndex": 1, "pageSize": 0}),
        dict(name="composite query", method="POST", path=f"{a}/a/nodes/query", headers=jsonh,
             data=json.dumps({"cpsPath": "//categories"})),
        dict(name="delta a to b (none)", method="GET", path=f"{a}/a/delta",
             params={"target-anchor-name": "b", "xpath": "/"}),
        dict(name="PATCH b", method="PATCH", path=f"{a}/b/nodes", params={"xpath": "/shops/bookstore"},
             headers=jsonh, data=json.dumps({"categories": [{"code": 1, "name": "Comic"}]})),
        dict(name="POST list-nodes b", method="POST", path=f"{a}/b/list-nodes",
             params={"xpath": "/shops/bookstore"}, headers=jsonh,
             data=json.dumps({"categories": [{"code": 3, "name": "Poetry"}]})),
        dict(name="DELETE b kids", method="DELETE", path=f"{a}/b/nodes",
             params={"xpath": "/shops/bookstore/categories[@code='2']"}),
        dict(name="DELETE b missing (400)", method="DELETE", path=f"{a}/b/nodes",
             params={"xpath": "/shops/bookstore/categories[@code='9']"}),
        dict(name="PUT b name", method="PUT", path=f"{a}/b/nodes", params={"xpath": "/shops"},
             headers=jsonh, data=json.dumps({"bookstore": {"bookstore-name": "Pages", "categories": [
                 {"code": 1, "name": "Comic"}, {"code": 3, "name": "Poetry"}]}})),
    ]
    for d in ("none", "all"):
        for grouping in ("false", "true"):
            out.append(dict(name=f"delta a to b descendants={d} grouping={grouping}", method="GET",
                            path=f"{a}/a/delta", params={"target-anchor-name": "b", "xpath": "/",
                                                         "descendants": d, "grouping-enabled": grouping}))
    out.append(dict(name="delta a to b all, XML", method="GET", path=f"{a}/a/delta",
                    params={"target-anchor-name": "b", "xpath": "/", "descendants": "all"}, headers=xml))
    out.append(dict(name="delta to a missing anchor", method="GET", path=f"{a}/a/delta",
                    params={"target-anchor-name": "nope", "xpath": "/"}))
    target_doc = {"shops": {"bookstore": {"bookstore-name": "Chapters", "categories": [
        {"code": 1, "name": "SciFi", "numberOfBooks": 2}, {"code": 5, "name": "Art"}]}}}
    target_xml = ("<shops><bookstore><bookstore-name>Chapters</bookstore-name>"
                  "<categories><code>1</code><name>SciFi</name><numberOfBooks>2</numberOfBooks></categories>"
                  "<categories><code>5</code><name>Art</name></categories></bookstore></shops>")
    out += [
        dict(name="delta a to a posted document", method="POST", path=f"{a}/a/delta", params={"xpath": "/"},
             files=[("targetData", ("t.json", json.dumps(target_doc).encode(), "application/json"))]),
        dict(name="delta a to a posted document, grouped", method="POST", path=f"{a}/a/delta",
             params={"xpath": "/", "grouping-enabled": "true"},
             files=[("targetData", ("t.json", json.dumps(target_doc).encode(), "application/json"))]),
        dict(name="delta a to a posted XML document", method="POST", path=f"{a}/a/delta", params={"xpath": "/"},
             headers=accept_xml,
             files=[("targetData", ("t.xml", target_xml.encode(), "application/xml"))]),
        dict(name="delta a to a posted document with its schema", method="POST", path=f"{a}/a/delta",
             params={"xpath": "/"},
             files=[("targetData", ("t.json", json.dumps(target_doc).encode(), "application/json")),
                    ("yangResourceFile", ("stores.yang", stores, "application/octet-stream"))]),
        dict(name="delta with an empty document (400)", method="POST", path=f"{a}/a/delta", params={"xpath": "/"},
             files=[("targetData", ("t.json", b"", "application/json"))]),
        dict(name="apply a create at / (CPS: 500)", method="POST", path=f"{a}/c/applyChangesInDeltaReport",
             headers=jsonh, data=json.dumps([{"action": "create", "xpath": "/", "targetData": STORES_DATA}])),
        dict(name="delete c's data", method="DELETE", path=f"{a}/c/nodes", params={"xpath": "/"}),
        dict(name="post data on c", method="POST", path=f"{a}/c/nodes", params={"xpath": "/"}, headers=jsonh,
             data=json.dumps(STORES_DATA)),
        dict(name="apply a create", method="POST", path=f"{a}/c/applyChangesInDeltaReport", headers=jsonh,
             data=json.dumps([{"action": "create", "xpath": "/shops/bookstore",
                               "targetData": {"categories": [{"code": 7, "name": "Maps"}]}}])),
        dict(name="apply a replace", method="POST", path=f"{a}/c/applyChangesInDeltaReport", headers=jsonh,
             data=json.dumps([{"action": "replace", "xpath": "/shops/bookstore/categories[@code='1']",
                               "sourceData": {"categories": [{"code": 1, "name": "SciFi"}]},
                               "targetData": {"categories": [{"code": 1, "name": "Comic"}]}}])),
        dict(name="apply a remove", method="POST", path=f"{a}/c/applyChangesInDeltaReport", headers=jsonh,
             data=json.dumps([{"action": "remove", "xpath": "/shops/bookstore/categories[@code='7']",
                               "sourceData": {"categories": [{"code": 7, "name": "Maps"}]}}])),
        dict(name="GET c after the applies", method="GET", path=f"/v2/dataspaces/{ds}/anchors/c/node",
             params={"xpath": "/shops/bookstore", "descendants": "direct"}),
        dict(name="apply an XML report (remove)", method="POST", path=f"{a}/c/applyChangesInDeltaReport",
             headers=xml,
             data="<deltaReports><deltaReport><action>remove</action>"
                  "<xpath>/shops/bookstore/categories[@code='2']</xpath><sourceData><categories><code>2</code>"
                  "<name>Kids</name></categories></sourceData></deltaReport></deltaReports>"),
        dict(name="apply an XML report in the model's namespace (remove)", method="POST",
             path=f"{a}/c/applyChangesInDeltaReport", headers=xml,
             data="<deltaReports><deltaReport><action>remove</action>"
                  "<xpath>/shops/bookstore/categories[@code='2']</xpath><sourceData>"
                  "<categories xmlns='org:onap:ccsdk:sample'><code>2</code>"
                  "<name>Kids</name></categories></sourceData></deltaReport></deltaReports>"),
        dict(name="GET c after the XML applies", method="GET", path=f"/v2/dataspaces/{ds}/anchors/c/node",
             params={"xpath": "/shops/bookstore", "descendants": "direct"}),
        dict(name="apply an unknown action (400)", method="POST", path=f"{a}/c/applyChangesInDeltaReport",
             headers=jsonh, data=json.dumps([{"action": "move", "xpath": "/shops"}])),
        dict(name="delete anchor c", method="DELETE", path=f"{a}/c"),
        dict(name="delete schema set in use (409)", method="DELETE", path=f"/v2/dataspaces/{ds}/schema-sets/ss"),
        dict(name="delete dataspace in use (409)", method="DELETE", path="/v2/dataspaces",
             params={"dataspace-name": ds}),
    ]
    return out


def cleanup(t: Target, ds: str) -> None:
    for anchor in ("a", "b", "c"):
        t.send("DELETE", f"/v2/dataspaces/{ds}/anchors/{anchor}")
    t.send("DELETE", f"/v2/dataspaces/{ds}/schema-sets/ss")
    t.send("DELETE", "/v2/dataspaces", params={"dataspace-name": ds})


def show(r: requests.Response) -> str:
    body = r.text if len(r.text) < 1500 else r.text[:1500] + "..."
    return f"{r.status_code} {r.headers.get('Content-Type', '')}\n      {body}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cps", required=True, help="base URL of a running CPS (without /cps/api)")
    ap.add_argument("--canopy", help="base URL of a running canopy serve (default: start one)")
    ap.add_argument("--details", action="store_true", help="compare error details too")
    args = ap.parse_args()
    proc = None
    workdir = None
    if args.canopy:
        canopy_url = args.canopy
    else:
        workdir = Path(tempfile.mkdtemp(prefix="cps-compare-"))
        proc, canopy_url = start_canopy(workdir)
    cps, canopy = Target("cps", args.cps), Target("canopy", canopy_url)
    ds = f"cmp{secrets.token_hex(4)}"
    counts = {"same": 0, "same but order": 0, "DIFFERS": 0}
    try:
        for s in steps(ds):
            name = s.pop("name")
            ra, rb = cps.send(**s), canopy.send(**s)
            verdict, why = compare(ra, rb, args.details)
            counts[verdict] += 1
            print(f"{verdict:15} {name}" + (f"  ({why})" if why else ""))
            if verdict == "DIFFERS" or (why and args.details):
                print(f"    cps:    {show(ra)}\n    canopy: {show(rb)}")
    finally:
        cleanup(cps, ds)
        cleanup(canopy, ds)
        if proc:
            proc.terminate()
            proc.wait(timeout=30)
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    print(", ".join(f"{k}: {v}" for k, v in counts.items()))
    return 0 if counts["DIFFERS"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

"""Two `canopy serve` processes on one store on a database server (PostgreSQL,
Redis, etcd, MongoDB's wire protocol), each reading through `cache=watch` or
uncached (where reads and writes first take the revision their store last
knew for the store's, on Redis without asking, and must not trust it): what
one commits the other serves, a stale `If-Match` sent to either is refused
(RFC 9110 section 13.1.1), conditional read-modify-write cycles through both
lose no update, and each stops with exit status 0 on SIGTERM.

The servers' URLs come from the environment (`scripts/servers.sh start` prints
them); a backend whose variable is unset is skipped, except in CI, where it
fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from conftest import DATA, JUKEBOX, MODULES, YANG_PATCH_JSON, Server, canopy_bin

# (backend, variable, the URL parameter that names a store's namespace; MongoDB's
# namespace is the database, the URL's path).
BACKENDS = [
    ("postgres", "CANOPY_POSTGRES_URL", "schema"),
    ("redis", "CANOPY_REDIS_URL", "prefix"),
    ("etcd", "CANOPY_ETCD_URL", "prefix"),
    ("mongodb", "CANOPY_MONGODB_URL", None),
]

ALBUM = "/example-jukebox:jukebox/library/artist=Shared/album=Counter"
YEAR = ALBUM + "/year"


def store_url(var: str, param: str | None) -> str:
    server = os.environ.get(var, "")
    if not server:
        if os.environ.get("CI"):
            pytest.fail(f"{var} is not set: CI runs every server backend (scripts/servers.sh start)")
        pytest.skip(f"{var} is not set (eval \"$(scripts/servers.sh start)\" sets it)")
    name = "http_" + uuid.uuid4().hex[:12]
    if param is None:
        parts = urlsplit(server)
        return urlunsplit(parts._replace(path="/" + name))
    sep = "&" if "?" in server else "?"
    return f"{server}{sep}{param}={name}"


class SharedServer(Server):
    """A server on a store URL given whole (the fixture's stores are LMDB directories)."""

    url_of_store: str = ""

    @property
    def store_url(self) -> str:  # type: ignore[override]
        return self.url_of_store


MODES = [(b, cache) for b in BACKENDS for cache in ("watch", "off")]


@pytest.fixture(params=MODES, ids=[f"{b[0]}-cache-{cache}" for b, cache in MODES])
def shared(request, tmp_path: Path):
    """Two servers on one fresh store of the backend, with example-jukebox and
    an album whose year the tests count up."""
    (_, var, param), cache = request.param
    base = store_url(var, param)
    url = base + ("&" if "?" in base else "?") + f"cache={cache}"
    cmd = [str(canopy_bin()), "--store", base, "schema", "add", str(MODULES / JUKEBOX), "--search", str(MODULES)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"schema add: {done.stderr.strip()}"
    servers = []
    for n in range(2):
        workdir = tmp_path / f"server{n}"
        workdir.mkdir()
        srv = SharedServer(workdir=workdir, store=workdir)
        srv.url_of_store = url
        servers.append(srv)
    servers[0].cli(
        "import",
        "-",
        stdin=json.dumps(
            {
                "example-jukebox:jukebox": {
                    "library": {"artist": [{"name": "Shared", "album": [{"name": "Counter", "year": 1900}]}]}
                }
            }
        ),
    )
    for srv in servers:
        srv.start()
    yield servers
    problems = []
    for srv in servers:
        code = srv.stop()
        if code != 0:
            problems.append(f"canopy serve exited with {code}; stderr: {srv.stderr_tail(800)}")
    if problems:
        pytest.fail("\n".join(problems))


def year_of(srv: Server) -> tuple[int, str]:
    r = srv.get(DATA + YEAR)
    assert r.status_code == 200, f"{r.status_code} {r.text[:300]}"
    etag = r.headers.get("ETag")
    assert etag, dict(r.headers)
    return r.json()["example-jukebox:year"], etag


def eventually(check, what: str, timeout: float = 10.0):
    """`check()` until it returns a true value (the other server hears a
    commit when the store announces it)."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not seen within {timeout}s")
        time.sleep(0.05)


def test_what_one_server_commits_the_other_serves(shared):
    a, b = shared
    r = a.put(DATA + YEAR, {"example-jukebox:year": 1999})
    assert r.status_code == 204, r.text
    eventually(lambda: year_of(b)[0] == 1999, "B reading A's commit")
    r = b.delete(DATA + ALBUM)
    assert r.status_code == 204, r.text
    eventually(lambda: a.get(DATA + ALBUM).status_code == 404, "A reading B's delete")


def test_a_stale_if_match_is_refused_by_either_server(shared):
    a, b = shared
    _, etag = year_of(a)
    r = b.put(DATA + YEAR, {"example-jukebox:year": 2001})
    assert r.status_code == 204, r.text
    for srv in (a, b):
        r = srv.put(DATA + YEAR, {"example-jukebox:year": 2002}, headers={"If-Match": etag})
        assert r.status_code == 412, f"{r.status_code} {r.text[:300]}"
    assert eventually(lambda: year_of(a)[0] == 2001 and year_of(b)[0] == 2001, "both at 2001")


def test_conditional_increments_through_both_servers_lose_no_update(shared):
    a, b = shared
    per_worker, workers = 15, 4
    errors: list[str] = []

    def work(srv: Server) -> None:
        done = 0
        tries = 0
        while done < per_worker and tries < 400:
            tries += 1
            year, etag = year_of(srv)
            r = srv.put(DATA + YEAR, {"example-jukebox:year": year + 1}, headers={"If-Match": etag})
            if r.status_code == 204:
                done += 1
            elif r.status_code != 412:
                errors.append(f"{r.status_code} {r.text[:300]}")
                return
        if done < per_worker:
            errors.append(f"{done} of {per_worker} increments in {tries} tries")

    threads = [threading.Thread(target=work, args=(shared[i % 2],)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    want = 1900 + per_worker * workers
    assert eventually(lambda: year_of(a)[0] == want and year_of(b)[0] == want, f"both at {want}")


def test_a_yang_patch_with_a_stale_if_match_is_refused(shared):
    """A YANG Patch (RFC 8072) is a write like any other: its `If-Match` is
    checked at the revision it commits at, through either server."""
    a, b = shared
    _, etag = year_of(a)
    r = b.put(DATA + YEAR, {"example-jukebox:year": 2003})
    assert r.status_code == 204, r.text
    doc = {
        "ietf-yang-patch:yang-patch": {
            "patch-id": "stale",
            "edit": [
                {
                    "edit-id": "e1",
                    "operation": "merge",
                    "target": "/year",
                    "value": {"example-jukebox:year": 2004},
                }
            ],
        }
    }
    r = a.patch(DATA + ALBUM, doc, ctype=YANG_PATCH_JSON, headers={"If-Match": etag})
    assert r.status_code == 412, f"{r.status_code} {r.text[:300]}"
    assert year_of(b)[0] == 2003
    album = a.get(DATA + ALBUM)
    assert album.status_code == 200, album.text
    r = a.patch(DATA + ALBUM, doc, ctype=YANG_PATCH_JSON, headers={"If-Match": album.headers["ETag"]})
    assert r.status_code == 200, f"{r.status_code} {r.text[:300]}"
    assert eventually(lambda: year_of(b)[0] == 2004, "B reading the patch")

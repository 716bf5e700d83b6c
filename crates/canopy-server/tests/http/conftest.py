"""Fixtures for the black-box HTTP tests of `canopy serve` (RESTCONF: RFC 8040,
RFC 8527, RFC 8072, and canopy's change streams).

The tests build nothing. They run the binary named by $CANOPY_BIN (default
`target/debug/canopy` under the repository root): `canopy --store lmdb:DIR schema
add` loads the YANG modules of `modules/` into a fresh store, optional seed data
goes in through the CLI (`import`, `--ds operational import`) while no server
runs, then `canopy serve --store lmdb:DIR --listen 127.0.0.1:0` starts as a child
process; its first stdout line names the port. Every test gets its own store and
server (isolation matters more than the ~0.1 s a start costs); teardown stops the
server with SIGTERM, by its PID, and fails the test if it does not exit with 0.

Every network read is bounded: plain requests carry a timeout, event streams are
read by a helper thread into a queue that the test reads with a timeout.
"""

from __future__ import annotations

import codecs
import http.client
import json
import os
import re
import queue
import select
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import quote, urljoin, urlsplit

import pytest
import requests

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]  # tests/http -> tests -> canopy-server -> crates -> repo
MODULES = HERE / "modules"

YANG_JSON = "application/yang-data+json"
YANG_XML = "application/yang-data+xml"
YANG_PATCH_JSON = "application/yang-patch+json"
YANG_PATCH_XML = "application/yang-patch+xml"

JUKEBOX = "example-jukebox@2016-08-15.yang"
SYSTEM = "example-system.yang"
EVENTS = "example-events.yang"
DEFAULTS = "example.yang"  # RFC 6243 Appendix A.1 style, for with-defaults
TOP = "example-top.yang"  # RFC 8040 §3.5.3 api-path examples

START_TIMEOUT = 30.0  # seconds until the "listening on" line
STOP_TIMEOUT = 15.0  # seconds from SIGTERM to exit
TIMEOUT = (5.0, 30.0)  # (connect, read) of every plain request

DATA = "/restconf/data"
DS = "/restconf/ds/ietf-datastores:"  # + running | candidate | startup | operational
JB = DATA + "/example-jukebox:jukebox"


def canopy_bin() -> Path:
    raw = os.environ.get("CANOPY_BIN", "target/debug/canopy")
    path = Path(raw)
    return path if path.is_absolute() else REPO / path


def qs(*pairs: tuple[str, str], **params: str) -> str:
    """A query string with every value percent-encoded as RFC 3986 requires
    (requests' own `params=` writes a space as `+`, which RFC 8040 does not
    read as a space). Pairs keep their order and may repeat a name."""
    items = list(pairs) + list(params.items())
    return "?" + "&".join(f"{k}={quote(str(v), safe='')}" for k, v in items)


def key(value: str) -> str:
    """One list key value as an api-path segment needs it (RFC 8040 §3.5.3):
    every reserved character percent-encoded."""
    return quote(value, safe="")


# --- RFC 8040 §7: error-tag -> status codes -----------------------------------

ERROR_STATUS = {
    "in-use": {409},
    "invalid-value": {400, 404, 406},
    "too-big": {413, 400},  # 413 for a request, 400 for a response
    "missing-attribute": {400},
    "bad-attribute": {400},
    "unknown-attribute": {400},
    "missing-element": {400},
    "bad-element": {400},
    "unknown-element": {400},
    "unknown-namespace": {400},
    "access-denied": {401, 403},
    "lock-denied": {409},
    "resource-denied": {409},
    "rollback-failed": {500},
    "data-exists": {409},
    "data-missing": {409},
    "operation-not-supported": {405, 501},
    "operation-failed": {412, 500},
    "partial-operation": {500},
    "malformed-message": {400},
}
DECIMAL = re.compile(r"-?[0-9]+\.[0-9]+")
ERROR_TYPES = {"transport", "rpc", "protocol", "application"}


def errors_of(resp: requests.Response) -> list[dict]:
    """The `error` entries of an RFC 8040 §7.1 JSON error reply; asserts its shape."""
    ctype = resp.headers.get("Content-Type", "")
    assert ctype.startswith(YANG_JSON), f"error reply media type {ctype!r}: {resp.text[:300]}"
    body = resp.json()
    assert list(body) == ["ietf-restconf:errors"], body
    errs = body["ietf-restconf:errors"]["error"]
    assert isinstance(errs, list) and errs, body
    for e in errs:
        assert e.get("error-type") in ERROR_TYPES, e
        assert e.get("error-tag") in ERROR_STATUS, e
        assert set(e) <= {
            "error-type",
            "error-tag",
            "error-app-tag",
            "error-path",
            "error-message",
            "error-info",
        }, e
    return errs


def assert_error(
    resp: requests.Response,
    status: int | Iterable[int],
    tags: str | Iterable[str] | None = None,
) -> dict:
    """Asserts an RFC 8040 error reply: the status, a well-formed `errors` body,
    an error-tag among `tags` (when given) and a status that §7's table allows
    for that tag. Returns the first error."""
    statuses = {status} if isinstance(status, int) else set(status)
    assert resp.status_code in statuses, (
        f"{resp.request.method} {resp.request.url}: expected {sorted(statuses)}, got "
        f"{resp.status_code}: {resp.text[:500]}"
    )
    if resp.request.method == "HEAD":
        return {}
    errs = errors_of(resp)
    first = errs[0]
    if tags is not None:
        wanted = {tags} if isinstance(tags, str) else set(tags)
        assert first["error-tag"] in wanted, f"error-tag {first['error-tag']!r}, want {wanted}"
    # §7's table gives no error-tag for 415 (§5.2 names only the status).
    assert resp.status_code == 415 or resp.status_code in ERROR_STATUS[first["error-tag"]], (
        f"RFC 8040 §7: error-tag {first['error-tag']!r} does not go with status "
        f"{resp.status_code}"
    )
    return first


def unwrap_data(doc: dict) -> dict:
    """The top-level nodes of a datastore reply. RFC 8040 Appendix B.3.3 shows a
    GET on a datastore resource wrapped in `ietf-restconf:data`; some servers
    (rousette) print the top-level nodes bare. Both are accepted."""
    if list(doc) == ["ietf-restconf:data"]:
        return doc["ietf-restconf:data"] or {}
    return doc


def strip_meta(value: Any) -> Any:
    """A JSON tree without RFC 7952 metadata members (`@`, `@name`)."""
    if isinstance(value, dict):
        return {k: strip_meta(v) for k, v in value.items() if not k.startswith("@")}
    if isinstance(value, list):
        return [strip_meta(v) for v in value]
    return value


def norm(value: Any) -> Any:
    """A JSON tree in a form that compares by meaning: member order and list
    entry order ignored, metadata removed, and decimal64 values compared as
    numbers (RFC 7951 §6.1 prints them as strings, RFC 8040's examples as
    numbers)."""
    value = strip_meta(value)
    if isinstance(value, dict):
        return {k: norm(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [norm(v) for v in value]
        if items and all(isinstance(v, dict) for v in items):
            # List entries: a system-ordered list has whatever order the server
            # keeps (RFC 7950 §7.7.7); tests that care about order check it.
            items.sort(key=lambda v: json.dumps(v, sort_keys=True))
        return items
    if isinstance(value, str) and DECIMAL.fullmatch(value):
        return float(value)
    return value


def find_entry(entries: list[dict], **keys: Any) -> dict | None:
    for e in entries:
        if all(e.get(k) == v for k, v in keys.items()):
            return e
    return None


# --- the server -----------------------------------------------------------------


@dataclass
class Server:
    """One `canopy serve` child process on its own store, plus HTTP helpers."""

    workdir: Path
    store: Path
    proc: subprocess.Popen | None = None
    base: str = ""
    stdout_rest: list[bytes] = field(default_factory=list)
    session: requests.Session = field(default_factory=requests.Session)
    streams: list["EventStream"] = field(default_factory=list)
    serve_args: tuple[str, ...] = ()

    @property
    def store_url(self) -> str:
        return f"lmdb:{self.store}"

    # process control

    def cli(self, *args: str, stdin: str | None = None, ds: str | None = None) -> str:
        """Runs the canopy CLI on this store (only while no server runs)."""
        assert self.proc is None or self.proc.poll() is not None, "CLI while the server runs"
        cmd = [str(canopy_bin()), "--store", self.store_url]
        if ds:
            cmd += ["--ds", ds]
        cmd += list(args)
        done = subprocess.run(
            cmd, input=stdin, capture_output=True, text=True, cwd=self.workdir, timeout=60
        )
        assert done.returncode == 0, f"{' '.join(cmd)}: {done.stderr.strip()}"
        return done.stdout

    def start(self) -> None:
        log = open(self.workdir / "serve.stderr", "wb")
        self.proc = subprocess.Popen(
            [
                str(canopy_bin()),
                "serve",
                "--store",
                self.store_url,
                "--listen",
                "127.0.0.1:0",
                *self.serve_args,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=self.workdir,
        )
        log.close()
        line = self._first_line(START_TIMEOUT)
        prefix = "listening on "
        assert line.startswith(prefix), f"first stdout line {line!r}; stderr: {self.stderr_tail()}"
        self.base = line[len(prefix) :].strip().rstrip("/")
        assert urlsplit(self.base).port, self.base
        threading.Thread(target=self._drain, daemon=True).start()

    def _first_line(self, timeout: float) -> str:
        assert self.proc and self.proc.stdout
        fd = self.proc.stdout.fileno()
        buf = b""
        deadline = time.monotonic() + timeout
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                pytest.fail(f"canopy serve printed no line in {timeout}s; {self.stderr_tail()}")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    code = self.proc.wait(timeout=5)
                    pytest.fail(f"canopy serve exited ({code}) before listening; {self.stderr_tail()}")
                buf += chunk
        line, rest = buf.split(b"\n", 1)
        self.stdout_rest.append(rest)
        return line.decode()

    def _drain(self) -> None:
        assert self.proc and self.proc.stdout
        try:
            while chunk := os.read(self.proc.stdout.fileno(), 65536):
                self.stdout_rest.append(chunk)
        except OSError:
            pass

    def stderr_tail(self, n: int = 2000) -> str:
        try:
            return (self.workdir / "serve.stderr").read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self) -> int | None:
        """SIGTERM by PID; returns the exit status (None if it had to be killed)."""
        for s in self.streams:
            s.close()
        self.session.close()
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            return self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    # HTTP

    def url(self, path: str) -> str:
        return self.base + path

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        ctype: str | None = None,
        accept: str | None = YANG_JSON,
        headers: dict[str, str] | None = None,
        **kw: Any,
    ) -> requests.Response:
        """One request. A dict or list body is sent as JSON text with `ctype`
        (default application/yang-data+json); a str/bytes body as given."""
        hdrs: dict[str, str] = {}
        if accept is not None:
            hdrs["Accept"] = accept
        data = body
        if isinstance(body, (dict, list)):
            data = json.dumps(body)
            hdrs["Content-Type"] = ctype or YANG_JSON
        elif body is not None and ctype is not None:
            hdrs["Content-Type"] = ctype
        if headers:
            hdrs.update(headers)
        kw.setdefault("timeout", TIMEOUT)
        kw.setdefault("allow_redirects", False)
        return self.session.request(method, self.url(path), data=data, headers=hdrs, **kw)

    def get(self, path: str, **kw: Any) -> requests.Response:
        return self.request("GET", path, **kw)

    def head(self, path: str, **kw: Any) -> requests.Response:
        return self.request("HEAD", path, **kw)

    def options(self, path: str, **kw: Any) -> requests.Response:
        return self.request("OPTIONS", path, **kw)

    def put(self, path: str, body: Any, **kw: Any) -> requests.Response:
        return self.request("PUT", path, body, **kw)

    def post(self, path: str, body: Any, **kw: Any) -> requests.Response:
        return self.request("POST", path, body, **kw)

    def patch(self, path: str, body: Any, **kw: Any) -> requests.Response:
        return self.request("PATCH", path, body, **kw)

    def delete(self, path: str, **kw: Any) -> requests.Response:
        return self.request("DELETE", path, **kw)

    def raw(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        """A request through http.client, path sent byte for byte (requests and
        urllib3 re-encode what they take for a bad percent-encoding)."""
        parts = urlsplit(self.base)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=TIMEOUT[1])
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, dict(resp.getheaders()), resp.read()
        finally:
            conn.close()

    def get_json(self, path: str, **kw: Any) -> Any:
        r = self.get(path, **kw)
        assert r.status_code == 200, f"GET {path}: {r.status_code} {r.text[:500]}"
        assert r.headers.get("Content-Type", "").startswith(YANG_JSON), r.headers
        return r.json()

    def exists(self, path: str) -> bool:
        r = self.get(path)
        assert r.status_code in (200, 404), f"GET {path}: {r.status_code} {r.text[:300]}"
        return r.status_code == 200

    def location_path(self, resp: requests.Response) -> str:
        """The path of a response's Location header (RFC 7231 allows a relative
        reference; it is resolved against the request URI)."""
        loc = resp.headers.get("Location")
        assert loc, f"no Location header: {dict(resp.headers)}"
        absolute = urljoin(resp.request.url, loc)
        parts = urlsplit(absolute)
        base = urlsplit(self.base)
        assert (parts.hostname, parts.port) == (base.hostname, base.port), absolute
        return parts.path

    def stream(self, path: str, headers: dict[str, str] | None = None) -> "EventStream":
        s = EventStream.open(self, path, headers or {})
        self.streams.append(s)
        return s

    def revision(self, resp: requests.Response) -> int:
        raw = resp.headers.get("Canopy-Revision")
        assert raw is not None, f"no Canopy-Revision header: {dict(resp.headers)}"
        assert raw.strip().isdigit(), raw
        return int(raw)


# --- Server-Sent Events -----------------------------------------------------------


@dataclass
class Event:
    event: str  # "message" when the stream named none
    id: str | None
    data: str

    def json(self) -> Any:
        return json.loads(self.data)


class EventStream:
    """A text/event-stream response read by a daemon thread into a queue
    (the HTML Living Standard's event-stream parsing, enough of it for tests)."""

    def __init__(self, resp: requests.Response):
        self.resp = resp
        self.events: queue.Queue[Event | BaseException | None] = queue.Queue()
        ctype = resp.headers.get("Content-Type", "")
        if resp.status_code == 200 and ctype.startswith("text/event-stream"):
            self.thread = threading.Thread(target=self._read, daemon=True)
            self.thread.start()
        else:  # an error reply: left to the test to read
            self.events.put(None)

    @classmethod
    def open(cls, server: Server, path: str, headers: dict[str, str]) -> "EventStream":
        hdrs = {"Accept": "text/event-stream", **headers}
        resp = requests.get(server.url(path), headers=hdrs, stream=True, timeout=(5.0, 60.0))
        return cls(resp)

    @property
    def status_code(self) -> int:
        return self.resp.status_code

    def _chunks(self) -> Iterable[bytes]:
        # Whatever has arrived, as soon as it has (iter_content(None) would wait
        # for the end of a body that is not chunked).
        raw = self.resp.raw
        if hasattr(raw, "read1"):
            while chunk := raw.read1(65536):
                yield chunk
        else:
            yield from self.resp.iter_content(chunk_size=1)

    def _read(self) -> None:
        buf = ""
        ev: dict[str, Any] = {"event": None, "id": None, "data": []}
        decoder = codecs.getincrementaldecoder("utf-8")()
        try:
            for chunk in self._chunks():
                buf += decoder.decode(chunk)
                while True:
                    cut = min((i for i in (buf.find("\r\n"), buf.find("\n"), buf.find("\r")) if i >= 0), default=-1)
                    if cut < 0:
                        break
                    sep = 2 if buf.startswith("\r\n", cut) else 1
                    line, buf = buf[:cut], buf[cut + sep :]
                    if line == "":
                        if ev["data"] or ev["event"]:
                            self.events.put(Event(ev["event"] or "message", ev["id"], "\n".join(ev["data"])))
                        ev = {"event": None, "id": None, "data": []}
                        continue
                    if line.startswith(":"):
                        continue  # comment / keep-alive
                    name, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if name == "data":
                        ev["data"].append(value)
                    elif name in ("event", "id"):
                        ev[name] = value
            self.events.put(None)
        except BaseException as e:  # noqa: BLE001 - handed to the reader
            self.events.put(e)

    def next(self, timeout: float = 10.0) -> Event | None:
        """The next event, or None when none came within `timeout` seconds or
        the stream ended."""
        try:
            item = self.events.get(timeout=timeout)
        except queue.Empty:
            return None
        if item is None or isinstance(item, BaseException):
            self.events.put(item)  # stays ended
            return None
        return item

    def take(self, n: int, timeout: float = 10.0) -> list[Event]:
        """Exactly `n` events, each within `timeout` seconds of the previous one."""
        got = []
        for _ in range(n):
            ev = self.next(timeout)
            assert ev is not None, f"event {len(got) + 1} of {n} did not come in {timeout}s; got {got}"
            got.append(ev)
        return got

    def close(self) -> None:
        # Shut the socket down so that the reader thread's recv returns now.
        try:
            sock = self.resp.raw._fp.fp.raw._sock  # type: ignore[union-attr]
            sock.shutdown(socket.SHUT_RDWR)
        except Exception:  # noqa: BLE001 - best effort; close() follows
            pass
        self.resp.close()


# --- fixtures ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def binary() -> Path:
    path = canopy_bin()
    if not path.exists():
        pytest.fail(f"{path} does not exist (set CANOPY_BIN, or build first)")
    return path


@pytest.fixture(scope="session")
def _templates(tmp_path_factory: pytest.TempPathFactory, binary: Path) -> dict:
    """Stores with a schema loaded, one per module set, copied per test."""
    return {"root": tmp_path_factory.mktemp("templates"), "made": {}}


def _template(templates: dict, modules: tuple[str, ...]) -> Path:
    made = templates["made"]
    if modules not in made:
        path = templates["root"] / f"t{len(made)}"
        cmd = [str(canopy_bin()), "--store", f"lmdb:{path}", "schema", "add"]
        cmd += [str(MODULES / m) for m in modules] + ["--search", str(MODULES)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{' '.join(cmd)}: {done.stderr.strip()}"
        made[modules] = path
    return made[modules]


class ServerFactory:
    def __init__(self, tmp_path: Path, templates: dict):
        self.tmp_path = tmp_path
        self.templates = templates
        self.servers: list[Server] = []

    def __call__(
        self,
        modules: Iterable[str] = (JUKEBOX,),
        config: dict | None = None,
        state: dict | None = None,
        datastores: dict[str, dict] | None = None,
        before: Iterable[Iterable[str]] = (),
        start: bool = True,
        serve_args: Iterable[str] = (),
    ) -> Server:
        """A server on a fresh store with `modules`; `config` is imported into
        running, `state` into operational, `datastores` maps a datastore name to
        a document imported there; `before` lists CLI argument lists to run
        first (commits made before the server starts); `serve_args` are added to
        the `canopy serve` command line."""
        n = len(self.servers)
        workdir = self.tmp_path / f"server{n}"
        workdir.mkdir()
        store = workdir / "store"
        shutil.copytree(_template(self.templates, tuple(modules)), store)
        srv = Server(workdir=workdir, store=store)
        self.servers.append(srv)
        if config is not None:
            srv.cli("import", "-", stdin=json.dumps(config))
        for ds, doc in (datastores or {}).items():
            srv.cli("import", "-", stdin=json.dumps(doc), ds=ds)
        if state is not None:
            srv.cli("import", "-", stdin=json.dumps(state), ds="operational")
        for args in before:
            srv.cli(*args)
        srv.serve_args = tuple(serve_args)
        if start:
            srv.start()
        return srv

    def stop_all(self) -> list[str]:
        problems = []
        for srv in self.servers:
            if srv.proc is None:
                continue
            code = srv.stop()
            if code != 0:
                problems.append(
                    f"canopy serve (pid {srv.proc.pid}) "
                    + ("did not stop on SIGTERM" if code is None else f"exited with {code}")
                    + f"; stderr: {srv.stderr_tail(800)}"
                )
        return problems


@pytest.fixture
def servers(tmp_path: Path, _templates: dict):
    factory = ServerFactory(tmp_path, _templates)
    yield factory
    problems = factory.stop_all()
    if problems:
        pytest.fail("\n".join(problems))


@pytest.fixture
def jukebox(servers: ServerFactory) -> Server:
    """A server with example-jukebox loaded and no data."""
    return servers()


# The data of RFC 8040 Appendix B.3.2's first reply, plus the song "Bridge
# Burning" in the library: the RFC's playlist entry 2 points at it through an
# instance-identifier, which YANG requires to exist (require-instance is true
# by default), yet the RFC's library lacks it.
JUKEBOX_B32 = {
    "example-jukebox:jukebox": {
        "library": {
            "artist": [
                {
                    "name": "Foo Fighters",
                    "album": [
                        {
                            "name": "Wasting Light",
                            "genre": "example-jukebox:alternative",
                            "year": 2011,
                            "song": [
                                {
                                    "name": "Wasting Light",
                                    "location": "/media/foo/a7/wasting-light.mp3",
                                    "format": "MP3",
                                    "length": 286,
                                },
                                {
                                    "name": "Rope",
                                    "location": "/media/foo/a7/rope.mp3",
                                    "format": "MP3",
                                    "length": 259,
                                },
                                {
                                    "name": "Bridge Burning",
                                    "location": "/media/foo/a7/bridge-burning.mp3",
                                    "format": "MP3",
                                    "length": 288,
                                },
                            ],
                        }
                    ],
                }
            ]
        },
        "playlist": [
            {
                "name": "Foo-One",
                "description": "example playlist 1",
                "song": [
                    {
                        "index": 1,
                        "id": "/example-jukebox:jukebox/library/artist[name='Foo Fighters']"
                        "/album[name='Wasting Light']/song[name='Rope']",
                    },
                    {
                        "index": 2,
                        "id": "/example-jukebox:jukebox/library/artist[name='Foo Fighters']"
                        "/album[name='Wasting Light']/song[name='Bridge Burning']",
                    },
                ],
            }
        ],
        "player": {"gap": "0.5"},
    }
}

# State (config false) for the library, pushed into operational before start.
JUKEBOX_STATE = {
    "example-jukebox:jukebox": {
        "library": {"artist-count": 42, "album-count": 59, "song-count": 374}
    }
}


def song_id(song: str, album: str = "Wasting Light", artist: str = "Foo Fighters") -> str:
    return (
        f"/example-jukebox:jukebox/library/artist[name='{artist}']"
        f"/album[name='{album}']/song[name='{song}']"
    )


@pytest.fixture
def jukebox_data(servers: ServerFactory) -> Server:
    """A server whose running datastore holds JUKEBOX_B32 and whose operational
    datastore adds JUKEBOX_STATE."""
    return servers(config=JUKEBOX_B32, state=JUKEBOX_STATE)

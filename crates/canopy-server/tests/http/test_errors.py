"""Every class of bad request gets RFC 8040's error reply (§7: an
`ietf-restconf:errors` body and the status its table gives the error-tag),
stores nothing, and leaves the server serving."""

from __future__ import annotations

import os
import select
import socket
import time
import xml.etree.ElementTree as ET
from urllib.parse import urlsplit

import pytest

from conftest import (
    DATA,
    JB,
    JUKEBOX_B32,
    YANG_JSON,
    YANG_PATCH_JSON,
    YANG_XML,
    assert_error,
    norm,
    song_id,
)

FOO = JB + "/library/artist=Foo%20Fighters"
ALBUM = FOO + "/album=Wasting%20Light"
RC_NS = "urn:ietf:params:xml:ns:yang:ietf-restconf"

# A body of this many bytes must be refused with 413 (RFC 8040 §7: a request
# "too-big"). The limit is canopy's choice (256 MiB by default); set this
# above it if it is raised.
HUGE = int(os.environ.get("CANOPY_TEST_HUGE_BODY", str(257 * 1024 * 1024)))


@pytest.fixture
def srv(servers):
    return servers(config=JUKEBOX_B32)


def unchanged(srv) -> None:
    """The store still holds JUKEBOX_B32 where these tests write."""
    album = srv.get_json(ALBUM)["example-jukebox:album"][0]
    assert album["year"] == 2011 and album["genre"] == "example-jukebox:alternative"
    assert sorted(s["name"] for s in album["song"]) == ["Bridge Burning", "Rope", "Wasting Light"]
    artists = srv.get_json(JB + "/library")["example-jukebox:library"]["artist"]
    assert [a["name"] for a in artists] == ["Foo Fighters"]


def still_serving(srv) -> None:
    r = srv.get(JB + "/player")
    assert r.status_code == 200, r.text


# --- malformed bodies ----------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b'{"example-jukebox:year": 2012',  # truncated
        b'{"example-jukebox:year": 2012,}',  # trailing comma
        b"example-jukebox:year = 2012",  # not JSON
        b'{"example-jukebox:year": 2012}{"x": 1}',  # two texts
        b'\xff\xfe{"example-jukebox:year": 2012}',  # not UTF-8
    ],
)
def test_malformed_json_is_400(srv, body):
    r = srv.put(ALBUM + "/year", body, ctype=YANG_JSON)
    assert_error(r, 400, {"malformed-message", "invalid-value"})
    unchanged(srv)


@pytest.mark.parametrize(
    "body",
    [
        b'<year xmlns="http://example.com/ns/example-jukebox">2012',  # unclosed
        b'<year xmlns="http://example.com/ns/example-jukebox">2012</yaer>',  # mismatched
        b"<year>2012</year>",  # no namespace
        b'<?xml version="1.0"?><!DOCTYPE y [<!ENTITY a "aaaaaaaaaa">]><year xmlns="http://example.com/ns/example-jukebox">&a;</year>',
    ],
)
def test_malformed_xml_is_400(srv, body):
    r = srv.put(ALBUM + "/year", body, ctype=YANG_XML)
    assert_error(r, 400)
    unchanged(srv)


def test_deeply_nested_json_is_400(srv):
    body = b'{"example-jukebox:year": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    r = srv.put(ALBUM + "/year", body, ctype=YANG_JSON)
    assert_error(r, 400)
    unchanged(srv)
    still_serving(srv)


@pytest.mark.parametrize(
    "body",
    [
        [{"example-jukebox:year": 2012}],  # an array, not an object
        {"example-jukebox:year": [2012]},  # a leaf as an array
        {"example-jukebox:year": {"value": 2012}},  # a leaf as an object
        {"year": 2012},  # top-level member without its module
        {},  # no member at all
    ],
)
def test_body_of_wrong_shape_is_400(srv, body):
    r = srv.put(ALBUM + "/year", body)
    assert_error(r, 400)
    unchanged(srv)


def test_list_entry_as_object_is_400(srv):
    # RFC 7951 §5.4: a list is a JSON array, even of one entry.
    r = srv.put(FOO, {"example-jukebox:artist": {"name": "Foo Fighters"}})
    assert_error(r, 400)
    unchanged(srv)


def test_body_names_another_node_than_the_target(srv):
    r = srv.put(ALBUM + "/year", {"example-jukebox:genre": "example-jukebox:rock"})
    assert_error(r, 400)
    unchanged(srv)


# --- unknown modules and nodes in bodies ------------------------------------------------


def test_unknown_leaf_in_body_is_400(srv):
    r = srv.patch(ALBUM, {"example-jukebox:album": [{"name": "Wasting Light", "year": 2012, "colour": "red"}]})
    assert_error(r, 400, {"unknown-element", "invalid-value", "bad-element", "malformed-message"})
    unchanged(srv)


def test_unknown_module_in_body_is_400(srv):
    r = srv.post(DATA, {"no-such-module:thing": {}})
    assert_error(r, 400, {"unknown-namespace", "unknown-element", "invalid-value", "bad-element",
                          "malformed-message"})
    unchanged(srv)


def test_unknown_namespace_in_xml_body_is_400(srv):
    r = srv.put(ALBUM + "/year", b'<year xmlns="urn:nowhere">2012</year>', ctype=YANG_XML)
    assert_error(r, 400)
    unchanged(srv)


# --- bad api-paths (more in test_restconf_basics) -------------------------------------------


def test_key_mismatch_on_put_is_400(srv):
    r = srv.put(ALBUM, {"example-jukebox:album": [{"name": "Wasting Lights", "year": 1999}]})
    # RFC 8040 §4.5: the body's key leaf values MUST equal the URI's.
    assert_error(r, 400)
    unchanged(srv)
    assert not srv.exists(FOO + "/album=Wasting%20Lights")


def test_key_in_uri_with_wrong_type_is_400(srv):
    # "index" is a uint32: "one" is no value of it.
    assert_error(srv.get(JB + "/playlist=Foo-One/song=one"), {400, 404})
    r = srv.put(JB + "/playlist=Foo-One/song=one", {"example-jukebox:song": [{"index": "one", "id": song_id("Rope")}]})
    assert_error(r, 400)
    unchanged(srv)


# --- media types (RFC 8040 §5.2) ----------------------------------------------------------------


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", "application/yang-data+jsonx"])
def test_unsupported_content_type_is_415(srv, ctype):
    r = srv.put(ALBUM + "/year", b'{"example-jukebox:year": 2012}', ctype=ctype)
    assert_error(r, 415)
    unchanged(srv)


def test_yang_patch_media_type_on_put_is_415(srv):
    # application/yang-patch+json is a PATCH media type (RFC 8072 §2.1).
    r = srv.put(ALBUM + "/year", b'{"example-jukebox:year": 2012}', ctype=YANG_PATCH_JSON)
    assert_error(r, 415)
    unchanged(srv)


def test_missing_content_type_with_body(srv):
    r = srv.put(ALBUM + "/year", b'{"example-jukebox:year": 2012}', ctype=None)
    # No media type: the server cannot know the encoding; 415 (RFC 7231
    # §3.1.1.5 lets a server assume one, so a 2xx that stored 2012 is allowed).
    if r.status_code in (200, 201, 204):
        assert srv.get_json(ALBUM + "/year") == {"example-jukebox:year": 2012}
    else:
        assert_error(r, {400, 415})
        unchanged(srv)


@pytest.mark.parametrize("accept", ["text/csv", "application/json-patch+json", "image/*"])
def test_unsupported_accept_is_406(srv, accept):
    # RFC 8040 §5.2: no requested output encoding supported -> 406.
    assert_error(srv.get(ALBUM, accept=accept), 406)


def test_errors_follow_accept_xml(srv):
    r = srv.get(JB + "/library/artist=Nobody", accept=YANG_XML)
    assert r.status_code == 404
    assert r.headers["Content-Type"].startswith(YANG_XML)
    root = ET.fromstring(r.content)
    assert root.tag == f"{{{RC_NS}}}errors"
    error = root.find(f"{{{RC_NS}}}error")
    assert error is not None
    assert error.findtext(f"{{{RC_NS}}}error-type") in ("protocol", "application")
    assert error.findtext(f"{{{RC_NS}}}error-tag") == "invalid-value"


# --- missing and duplicate resources ----------------------------------------------------------------


def test_missing_resource_get_is_404(srv):
    assert_error(srv.get(FOO + "/album=Nothing"), 404, "invalid-value")


def test_missing_resource_delete_is_404(srv):
    r = srv.delete(FOO + "/album=Nothing")
    assert_error(r, 404)
    unchanged(srv)


def test_missing_parent_of_post(srv):
    r = srv.post(JB + "/library/artist=Nobody", {"example-jukebox:album": [{"name": "X"}]})
    # The parent must exist; RFC 8040 does not fix the status.
    assert_error(r, {400, 404, 409})
    assert not srv.exists(JB + "/library/artist=Nobody")


def test_duplicate_create_is_409(srv):
    r = srv.post(FOO, {"example-jukebox:album": [{"name": "Wasting Light", "year": 1999}]})
    assert_error(r, 409, {"resource-denied", "data-exists"})
    unchanged(srv)


# --- schema violations -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path,body",
    [
        (ALBUM + "/year", {"example-jukebox:year": "two thousand"}),  # type
        (ALBUM + "/year", {"example-jukebox:year": 1800}),  # range 1900..max
        (ALBUM + "/year", {"example-jukebox:year": 70000}),  # uint16
        (ALBUM + "/year", {"example-jukebox:year": "2011"}),  # uint16 is a JSON number (RFC 7951 §6.1)
        (ALBUM + "/genre", {"example-jukebox:genre": "example-jukebox:polka"}),  # no such identity
        (ALBUM + "/genre", {"example-jukebox:genre": "example-jukebox:genre"}),  # the base is not derived
        (JB + "/player/gap", {"example-jukebox:gap": "2.5"}),  # range 0.0..2.0
        (JB + "/player/gap", {"example-jukebox:gap": "0.55"}),  # fraction-digits 1
    ],
)
def test_invalid_value_is_400(srv, path, body):
    r = srv.put(path, body)
    assert_error(r, 400, "invalid-value")
    unchanged(srv)
    assert norm(srv.get_json(JB + "/player/gap")) == {"example-jukebox:gap": 0.5}


def test_empty_key_violating_length_is_400(srv):
    r = srv.post(JB + "/library", {"example-jukebox:artist": [{"name": ""}]})
    assert_error(r, 400, "invalid-value")
    unchanged(srv)


def test_missing_mandatory_leaf(srv):
    # "location" is mandatory. RFC 7950 leaves the error-tag to the server
    # (data-missing: 409, invalid-value: 400...); §7's table must hold.
    r = srv.post(ALBUM, {"example-jukebox:song": [{"name": "Walk", "format": "MP3"}]})
    assert_error(r, {400, 409})
    assert not srv.exists(ALBUM + "/song=Walk")
    unchanged(srv)


def test_instance_identifier_to_nothing(srv):
    # require-instance (RFC 7950 §15.5: error-tag data-missing, hence 409 by
    # RFC 8040 §7; a 400 invalid-value is accepted as well).
    r = srv.post(JB + "/playlist=Foo-One", {"example-jukebox:song": [{"index": 9, "id": song_id("Nope")}]})
    assert_error(r, {400, 409}, {"data-missing", "invalid-value"})
    assert not srv.exists(JB + "/playlist=Foo-One/song=9")


def test_write_to_state_data_is_refused(servers):
    srv = servers(config=JUKEBOX_B32, state={"example-jukebox:jukebox": {"library": {"artist-count": 1}}})
    r = srv.put(JB + "/library/artist-count", {"example-jukebox:artist-count": 7})
    assert_error(r, {400, 405})
    assert srv.get_json(JB + "/library/artist-count") == {"example-jukebox:artist-count": 1}


def test_one_bad_value_in_a_tree_stores_nothing(srv):
    # One edit is one transaction: the valid parts of a rejected body are not stored.
    r = srv.patch(JB + "/library", {"example-jukebox:library": {"artist": [
        {"name": "New Artist", "album": [{"name": "Good", "year": 2000}, {"name": "Bad", "year": 1066}]}]}})
    assert_error(r, 400, "invalid-value")
    assert not srv.exists(JB + "/library/artist=New%20Artist")
    unchanged(srv)


# --- methods -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["FROB", "TRACE"])
def test_unknown_method_is_405_with_allow(srv, method):
    r = srv.request(method, ALBUM)
    assert r.status_code == 405, r.text
    allow = {m.strip() for m in r.headers.get("Allow", "").split(",")}
    assert {"GET", "PUT", "DELETE"} <= allow, r.headers
    unchanged(srv)


# --- transport-level abuse (issue 12: never takes the server down) ---------------------------------------


def _connect(srv) -> socket.socket:
    parts = urlsplit(srv.base)
    return socket.create_connection((parts.hostname, parts.port), timeout=10)


def _read_status(sock: socket.socket, timeout: float) -> int | None:
    """The status code of the response on `sock`, or None if the connection
    closed (or nothing came) before a status line."""
    sock.settimeout(timeout)
    buf = b""
    try:
        while b"\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    if not buf.startswith(b"HTTP/1."):
        return None
    return int(buf.split(b" ", 2)[1])


def _huge_request(srv, chunked: bool) -> int | None:
    """PUTs an endless JSON string at a leaf until the server answers or HUGE
    bytes (plus a margin) are sent; returns the status it answered."""
    parts = urlsplit(srv.base)
    sock = _connect(srv)
    try:
        head = (
            f"PUT {ALBUM}/year HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
            f"Content-Type: {YANG_JSON}\r\nAccept: {YANG_JSON}\r\nConnection: close\r\n"
        )
        head += "Transfer-Encoding: chunked\r\n" if chunked else f"Content-Length: {16 * HUGE}\r\n"
        sock.sendall(head.encode() + b"\r\n")
        piece = b'{"example-jukebox:year": "' if not chunked else b""
        filler = b"x" * (256 * 1024)
        sent = 0
        deadline = time.monotonic() + 120
        while sent <= HUGE + len(filler) and time.monotonic() < deadline:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break
            data = piece + filler
            piece = b""
            frame = (b"%x\r\n" % len(data)) + data + b"\r\n" if chunked else data
            try:
                sock.sendall(frame)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(data)
        return _read_status(sock, 15)
    finally:
        sock.close()


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_huge_body_is_413(srv, chunked):
    status = _huge_request(srv, chunked)
    assert status == 413, f"a {HUGE}-byte body got {status}"
    unchanged(srv)
    still_serving(srv)


def test_garbage_request_line(srv):
    sock = _connect(srv)
    try:
        sock.sendall(b"HELLO THERE\r\n\r\n")
        status = _read_status(sock, 10)
        assert status in (400, None), status  # a 400 or a closed connection
    finally:
        sock.close()
    still_serving(srv)


def test_half_closed_request_does_not_block_others(srv):
    parts = urlsplit(srv.base)
    sock = _connect(srv)
    try:
        sock.sendall(
            (f"PUT {ALBUM}/year HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
             f"Content-Type: {YANG_JSON}\r\nContent-Length: 100\r\n\r\n").encode() + b'{"example-jukebox:'
        )
        sock.shutdown(socket.SHUT_WR)  # the body never completes
        still_serving(srv)  # others are served (each request has its timeout)
        status = _read_status(sock, 30)
        assert status in (400, None), status
    finally:
        sock.close()
    unchanged(srv)
    still_serving(srv)


def test_slow_client_does_not_block_others(srv):
    parts = urlsplit(srv.base)
    slow = [_connect(srv) for _ in range(8)]
    try:
        for s in slow:  # headers begun, never finished
            s.sendall(f"GET {JB} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\nAcc".encode())
        for _ in range(5):
            still_serving(srv)  # each request has its timeout
    finally:
        for s in slow:
            s.close()
    still_serving(srv)


# --- a deadline on request heads (canopy serve --header-timeout) ---------------------


def _until_closed(sock: socket.socket, limit: float) -> bytes:
    """What the server sends on `sock` until it closes the connection; fails
    if it is still open after `limit` seconds (a bound, far above the
    deadline, that keeps a broken server from hanging the suite)."""
    sock.settimeout(limit)
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except socket.timeout:
        pytest.fail(f"the connection is still open after {limit}s; got {got!r}")
    except ConnectionResetError:
        pass
    return got


@pytest.fixture
def quick(servers):
    """A server whose clients have one second for a request head."""
    return servers(config=JUKEBOX_B32, serve_args=("--header-timeout", "1"))


def served_anew(srv) -> None:
    """still_serving on a new connection: the server closes kept-alive
    connections idle for longer than the deadline, and a pooled one may be
    reused just as it closes."""
    srv.session.close()
    still_serving(srv)


def test_head_not_finished_in_time_is_closed(quick):
    parts = urlsplit(quick.base)
    slow, silent = _connect(quick), _connect(quick)
    try:
        slow.sendall(f"GET {JB} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\nAcc".encode())
        still_serving(quick)  # others are served while these wait
        got = _until_closed(slow, 60)
        assert got == b"" or got.startswith(b"HTTP/1.1 408"), got
        got = _until_closed(silent, 60)  # connected, never sent a byte
        assert got == b"" or got.startswith(b"HTTP/1.1 408"), got
    finally:
        slow.close()
        silent.close()
    served_anew(quick)


def test_head_trickled_byte_by_byte_is_cut_off(quick):
    # Slowloris: every byte comes in time for a per-read timeout, the head
    # as a whole never ends.
    parts = urlsplit(quick.base)
    sock = _connect(quick)
    head = f"GET {JB} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n".encode() + b"X-Pad: " + b"a" * 10_000
    sent = 0
    try:
        for b in head:
            try:
                sock.sendall(bytes([b]))
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += 1
            time.sleep(0.01)
            r, _, _ = select.select([sock], [], [], 0)
            if r:
                break  # the server answered or closed
        assert sent < len(head), "the server read the whole trickled head"
        got = _until_closed(sock, 60)
        assert got == b"" or got.startswith(b"HTTP/1.1 408"), got
    finally:
        sock.close()
    served_anew(quick)


def test_deadline_spares_slow_bodies_and_open_streams(quick):
    # The head arrives at once; the body takes longer than the head deadline.
    parts = urlsplit(quick.base)
    body = b'{"example-jukebox:year": 2013}'
    stream = quick.stream("/restconf/streams/running?path=/example-jukebox:jukebox")
    assert stream.status_code == 200
    sock = _connect(quick)
    try:
        sock.sendall(
            (f"PUT {ALBUM}/year HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
             f"Content-Type: {YANG_JSON}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body[:10]
        )
        time.sleep(2.5)  # past the deadline twice over
        sock.sendall(body[10:])
        assert _read_status(sock, 30) == 204
    finally:
        sock.close()
    # The change stream, open all along, still delivers.
    (ev,) = stream.take(1)
    assert "2013" in ev.data, ev
    quick.session.close()
    assert quick.get_json(ALBUM + "/year") == {"example-jukebox:year": 2013}

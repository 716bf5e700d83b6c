#!/usr/bin/env bash
# The black-box HTTP tests of `canopy serve` (crates/canopy-server/tests/http):
# pytest + requests against the server started as a child process. Builds
# nothing: scripts/test.sh calls this after the cargo build, and $CANOPY_BIN
# (default target/debug/canopy) names the binary to test. Extra arguments go
# to pytest (e.g. -k etag, -x).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! python3 -c 'import pytest, requests' 2>/dev/null; then
    echo "http-tests: installing crates/canopy-server/tests/http/requirements.txt" >&2
    python3 -m pip install -q -r crates/canopy-server/tests/http/requirements.txt
fi
export PYTHONDONTWRITEBYTECODE=1
exec python3 -m pytest -q crates/canopy-server/tests/http "$@"

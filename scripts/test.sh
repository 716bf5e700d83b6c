#!/usr/bin/env bash
# The one test command: formatting, lints, then every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { echo "== $*" >&2; }

# Installs what this machine lacks (a no-op when everything is there).
step "scripts/setup.sh"
scripts/setup.sh
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

# The published YANG modules scripts/setup.sh fetched, for the tests with
# real modules (they say they are skipped when this is unset, and fail in CI).
modules="${CANOPY_CACHE:-$HOME/.cache/canopy}/pyang-2.7.1/modules"
if [ -z "${CANOPY_YANG_MODULES:-}" ] && [ -d "$modules/ietf" ]; then
    export CANOPY_YANG_MODULES="$modules"
fi

step "scripts/layout.sh (crates/canopy/src: no file over 600 lines, no two modules importing each other)"
scripts/layout.sh

step "cargo fmt --all -- --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets -- -D warnings

# Throwaway database servers for the server backends' tests (their suites
# read CANOPY_POSTGRES_URL, CANOPY_REDIS_URL, CANOPY_ETCD_URL,
# CANOPY_MONGODB_URL; a server already named in the environment is used as
# it is).
wanted=()
[ -n "${CANOPY_POSTGRES_URL:-}" ] || wanted+=(postgres)
[ -n "${CANOPY_REDIS_URL:-}" ] || wanted+=(redis)
[ -n "${CANOPY_ETCD_URL:-}" ] || wanted+=(etcd)
[ -n "${CANOPY_MONGODB_URL:-}" ] || wanted+=(mongodb)
if [ ${#wanted[@]} -gt 0 ]; then
    step "scripts/servers.sh start ${wanted[*]}"
    # Assigned first, so that a server that does not start stops this script
    # (an `eval` of a failed substitution would go on without it).
    trap 'scripts/servers.sh stop' EXIT
    exports=$(scripts/servers.sh start "${wanted[@]}")
    eval "$exports"
fi
# Every server backend's suites run against a server: none is skipped.
for var in CANOPY_POSTGRES_URL CANOPY_REDIS_URL CANOPY_ETCD_URL CANOPY_MONGODB_URL; do
    [ -n "${!var:-}" ] || { echo "test.sh: $var is not set: its backend's suites would not run" >&2; exit 1; }
done

step "cargo test --workspace"
cargo test --workspace

# The server from outside: RESTCONF over HTTP against `canopy serve` as a child
# process (pytest and requests; the binary cargo test built).
step "scripts/http-tests.sh (RESTCONF over HTTP)"
CANOPY_BIN="${CARGO_TARGET_DIR:-target}/debug/canopy" scripts/http-tests.sh

# Extra test steps go here (each behind its own environment variable, e.g. the
# crash tests with CANOPY_CRASH_KILLS, backends that need a running server).

step "all tests passed"

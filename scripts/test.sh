#!/usr/bin/env bash
# The one test command: formatting, lints, then every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { echo "== $*" >&2; }

step "cargo fmt --all -- --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets -- -D warnings

step "cargo test --workspace"
cargo test --workspace

# Extra test steps go here (each behind its own environment variable, e.g. the
# crash tests with CANOPY_CRASH_KILLS, backends that need a running server).

step "all tests passed"

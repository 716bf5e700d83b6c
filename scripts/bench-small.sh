#!/usr/bin/env bash
# Runs every benchmark suite at its smallest size on every embedded backend
# with the release build, as CI does: `canopy bench` end to end, reports
# (md, json, svg) written to target/bench-small. Timings this small only show
# that the suites run; docs/benchmarks.md holds the seed-sized runs.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== building canopy (release)" >&2
cargo build --release --quiet -p canopy-cli
canopy_bin="${CARGO_TARGET_DIR:-target}/release/canopy"
out="${CARGO_TARGET_DIR:-target}/bench-small"

echo "== canopy bench all --size small --repeat 3 --out $out" >&2
"$canopy_bin" bench all --size small --repeat 3 --out "$out" --quiet
echo "== bench reports in $out" >&2

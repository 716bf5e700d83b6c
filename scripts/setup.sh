#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to build and test canopy.
# Idempotent, quiet and quick: does nothing when everything is present.
# scripts/demo.sh and scripts/test.sh (the README's two commands) run it first,
# so a newcomer never runs it by hand. LMDB is
# bundled (the lmdb-master-sys crate builds it), so besides the Rust toolchain
# the system needs are a C and C++ compiler, cmake and PCRE2 (for libyang).
set -euo pipefail

[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

packages=()
command -v cc >/dev/null 2>&1 || packages+=(gcc libc6-dev)
# The fuzz targets link libFuzzer (libfuzzer-sys builds it): a C++ compiler.
command -v c++ >/dev/null 2>&1 || packages+=(g++)
# libyang (YANG schemas) is bundled too and built with cmake; it needs PCRE2.
command -v cmake >/dev/null 2>&1 || packages+=(cmake)
[ -f /usr/include/pcre2.h ] || packages+=(libpcre2-dev)
# The CLI tests run commands on a pseudo-terminal (`script`) and mount a small
# tmpfs to fill a disk (`mount`, as root).
command -v script >/dev/null 2>&1 || packages+=(bsdutils)
command -v mount >/dev/null 2>&1 || packages+=(mount)
# curl fetches rustup when there is no toolchain, and the `canopy serve` tests
# speak HTTP with it (crates/canopy-cli/tests/serve_auth.rs).
command -v curl >/dev/null 2>&1 || packages+=(curl ca-certificates)
# pip fetches the IETF YANG modules the tests use (below), once.
pyang_version=2.7.1
modules="${CANOPY_CACHE:-$HOME/.cache/canopy}/pyang-$pyang_version/modules"
if [ ! -d "$modules/ietf" ]; then
    command -v python3 >/dev/null 2>&1 || packages+=(python3)
    python3 -m pip --version >/dev/null 2>&1 || packages+=(python3-pip)
fi
if [ ${#packages[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "setup: apt-get install ${packages[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: installing the Rust toolchain with rustup" >&2
    curl -sSf https://sh.rustup.rs | sh -s -- -y -q --profile minimal --component rustfmt,clippy
    export PATH="$HOME/.cargo/bin:$PATH"
fi

# scripts/test.sh runs both.
cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
cargo clippy --version >/dev/null 2>&1 || rustup component add clippy

# Published YANG modules (ietf-interfaces, ietf-ip, ietf-routing, ...) for the
# tests with real modules: the pyang wheel ships them. Kept in a cache outside
# the repository; scripts/test.sh points the tests at it.
if [ ! -d "$modules/ietf" ]; then
    echo "setup: fetching the YANG modules of pyang $pyang_version" >&2
    tmp=$(mktemp -d)
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "pyang==$pyang_version"
    python3 - "$tmp"/pyang-*.whl "$modules" <<'PY'
import os, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
prefix = "share/yang/modules/"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        i = name.find(prefix)
        if i < 0 or not name.endswith(".yang"):
            continue
        out = os.path.join(dest, name[i + len(prefix):])
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "wb") as f:
            f.write(z.read(name))
PY
    rm -rf "$tmp"
fi

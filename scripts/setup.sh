#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to build and test canopy.
# Idempotent and quiet: does nothing when everything is present. LMDB is
# bundled (the lmdb-master-sys crate builds it), so besides the Rust toolchain
# the system needs are a C compiler, cmake and PCRE2 (for libyang).
set -euo pipefail

[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

packages=()
command -v cc >/dev/null 2>&1 || packages+=(gcc libc6-dev)
# libyang (YANG schemas) is bundled too and built with cmake; it needs PCRE2.
command -v cmake >/dev/null 2>&1 || packages+=(cmake)
[ -f /usr/include/pcre2.h ] || packages+=(libpcre2-dev)
# curl only to fetch rustup when there is no toolchain.
command -v cargo >/dev/null 2>&1 || command -v curl >/dev/null 2>&1 || packages+=(curl ca-certificates)
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

#!/usr/bin/env bash
# Builds canopy (release) and runs a short tour on the embedded default store
# (LMDB) in a temporary directory: import the sample document, query it, edit
# it, export it, check it. Prints each command before running it.
set -euo pipefail
cd "$(dirname "$0")/.."

# Installs what this machine lacks (a no-op when everything is there).
scripts/setup.sh
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

echo "== building canopy (release)"
cargo build --release --quiet -p canopy-cli
canopy_bin="${CARGO_TARGET_DIR:-target}/release/canopy"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CANOPY_STORE="$work/canopy-data"

# Prints a command as one could type it, then runs it.
run() {
    local shown="canopy" arg
    for arg in "$@"; do
        if [[ "$arg" =~ ^[A-Za-z0-9_./:=,-]+$ ]]; then
            shown+=" $arg"
        elif [[ "$arg" != *"'"* ]]; then
            shown+=" '$arg'"
        else
            shown+=" \"$arg\""
        fi
    done
    echo "\$ $shown" >&2
    "$canopy_bin" "$@"
}

step() { printf '\n== %s\n' "$*"; }

IFS_LIST=/ietf-interfaces:interfaces/interface
ACES="/ietf-access-control-list:acls/acl[name='edge-in']/aces"

step "Import examples/interfaces.json into a new store at \$CANOPY_STORE, declaring its keyed lists"
run import examples/interfaces.json \
    --list "$IFS_LIST=name" \
    --list "$IFS_LIST/ietf-ip:ipv4/address=ip" \
    --list /ietf-access-control-list:acls/acl=name \
    --user-ordered "/ietf-access-control-list:acls/acl/aces/ace=name"

step "A key lookup: one interface with its subtree"
run get "$IFS_LIST[name='eth0']"

step "XPath predicates: enabled interfaces, addresses with a prefix longer than /24"
run get "//interface[enabled='true']/name" --compact
run get "//address[prefix-length > 24]" --compact
run count "//address"

step "Only the top level of the interfaces, keys kept"
run get /ietf-interfaces:interfaces --depth 1 --compact

step "Set a leaf, merge a new interface, delete one"
run set "$IFS_LIST[name='eth1']/enabled" true
run set "$IFS_LIST[name='eth2']" '{"name": "eth2", "type": "iana-if-type:ethernetCsmacd", "mtu": 1500}'
run delete "$IFS_LIST[name='lo0']"
run get "//interface/enabled" --compact

step "Insert a rule into the user-ordered ACL, after permit-ssh"
echo '{"ace": [{"name": "permit-icmp", "action": "accept", "protocol": 1}]}' > "$work/ace.json"
run edit "$work/ace.json" --op create --path "$ACES/ace[name='permit-icmp']" --insert after=permit-ssh
run get "$ACES/ace/name" --compact

step "Export, and import the export into a second store: the same document comes back"
run export --compact > "$work/export.json"
cat "$work/export.json"
run --store "$work/copy" import "$work/export.json" \
    --list "$IFS_LIST=name" \
    --list "$IFS_LIST/ietf-ip:ipv4/address=ip" \
    --list /ietf-access-control-list:acls/acl=name \
    --user-ordered "/ietf-access-control-list:acls/acl/aces/ace=name"
run --store "$work/copy" export --compact > "$work/export2.json"
cmp "$work/export.json" "$work/export2.json" && echo "round trip: identical"

step "Check the store"
run compact
run check

step "Errors are one line with exit status 1"
set +e
run get "$IFS_LIST[name='eth0'"
echo "(exit status $?)"
run delete "$IFS_LIST[name='lo0']"
echo "(exit status $?)"
set -e

echo
echo "demo done"

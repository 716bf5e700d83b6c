#!/usr/bin/env bash
# Checks the layout of the library crate (crates/canopy/src): no file over
# 600 lines, and no two modules that import each other (a module imports
# another when it names `crate::other`). Prints what it finds; exit 1 on a
# violation. scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/../crates/canopy/src"

status=0
while read -r lines file; do
    [ "$file" = total ] && continue
    if [ "$lines" -gt 600 ]; then
        echo "layout: $file has $lines lines (at most 600)" >&2
        status=1
    fi
done < <(wc -l -- *.rs)

# The modules each module names through `crate::`.
declare -A deps
for f in *.rs; do
    m=${f%.rs}
    deps[$m]=" $( (grep -oE 'crate::[a-z_]+' "$f" || true) | sed 's/crate:://' | sort -u | tr '\n' ' ')"
done
for a in "${!deps[@]}"; do
    for b in ${deps[$a]}; do
        [ "$a" \< "$b" ] || continue
        if [[ "${deps[$b]:-}" == *" $a "* ]]; then
            echo "layout: $a.rs and $b.rs import each other" >&2
            status=1
        fi
    done
done
[ $status -eq 0 ] && echo "layout: crates/canopy/src: $(ls -- *.rs | wc -l) files, none over 600 lines, no two import each other"
exit $status

#!/usr/bin/env bash
# Per-GEMM-kernel SASS facts from a build: HGMMA count, local-memory traffic (LDL/STL, i.e.
# spills) and the register count reported by cuobjdump -res-usage.
#   scripts/gemm-sass.sh [BUILD_DIR]      (default: build-gpu)
set -euo pipefail
BUILD=${1:-build-gpu}
LIB="$BUILD/src/libtachyon.a"
[ -f "$LIB" ] || { echo "no $LIB: build first" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cuobjdump -sass "$LIB" >"$tmp/sass.txt"
cuobjdump -res-usage "$LIB" >"$tmp/res.txt" 2>&1
printf "%-70s %6s %5s %5s %5s %6s\n" kernel HGMMA LDL STL REG SETMAX
awk -v resfile="$tmp/res.txt" '
  BEGIN {
    while ((getline line < resfile) > 0) {
      if (line ~ /Function /) { fn = line; sub(/.*Function /, "", fn); sub(/:.*/, "", fn) }
      if (line ~ /REG:/) { r = line; sub(/.*REG:/, "", r); sub(/ .*/, "", r); reg[fn] = r }
    }
  }
  function flush() {
    if (name != "" && name ~ /gemm/) {
      cmd = "c++filt \"" name "\""; cmd | getline pretty; close(cmd)
      gsub(/\(anonymous namespace\)::/, "", pretty); sub(/^void /, "", pretty)
      sub(/^tachyon::detail::gemm::/, "", pretty); sub(/\(.*$/, "", pretty)
      printf "%-70.70s %6d %5d %5d %5s %6d\n", pretty, h, ll, sl, (name in reg ? reg[name] : "?"), sm
    }
  }
  /Function :/ { flush(); name = $3; h = ll = sl = sm = 0 }
  /HGMMA/ { h++ } /LDL/ { ll++ } /STL/ { sl++ } /USETMAXREG/ { sm++ }
  END { flush() }' "$tmp/sass.txt"

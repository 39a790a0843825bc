#!/usr/bin/env bash
# Before/after benchmark in one device call: builds a base tree (a `git archive` tarball, since
# the device copy has no history) beside this one, runs tachyon-bench on both in alternating
# rounds, and prints each case's ratio-to-copy before and after (the median over rounds).
#
#   BASE_TAR=.snap/base.tar SUITES="softmax cross_entropy" ROUNDS=2 scripts/ab-bench.sh
#   RUNS="--suite norm --shape 4194304x8;--suite norm --shape 4194304x16"   (';'-separated
#   tachyon-bench argument sets, instead of one --suite each of SUITES)
# Make the tarball here with: git archive -o .snap/base.tar <commit>
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/ab-out}
SUITES=${SUITES:-default}
ROUNDS=${ROUNDS:-2}
RUNS=${RUNS:-$(for s in $SUITES; do printf -- '--suite %s;' "$s"; done)}
BASE=/tmp/ab-base
mkdir -p "$OUT" "$BASE"
tar xf "${BASE_TAR:?set BASE_TAR}" -C "$BASE"
HEAD_BUILD=${HEAD_BUILD:-build-gpu}  # gpu-check.sh's build, reused when there
build() { [ -f "$2/build.ninja" ] || cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTACHYON_BUILD_PYTHON=OFF >/dev/null
          cmake --build "$2" -j "$(nproc)" --target tachyon-bench >/dev/null; }
build "$BASE" "$BASE/build" &
base_pid=$!
build . "$HEAD_BUILD"
wait $base_pid
for r in $(seq "$ROUNDS"); do
  for side in base head; do
    bin=$([ $side = base ] && echo "$BASE/build" || echo "$HEAD_BUILD")/bench/tachyon-bench
    mkdir -p "$OUT/$side"
    IFS=';' read -ra sets <<<"$RUNS"
    for a in "${sets[@]}"; do
      # shellcheck disable=SC2086
      "$bin" $a --results "$OUT/$side" >>"$OUT/$side.log" 2>&1
    done
  done
done
python3 - "$OUT" <<'EOF'
import json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])
def load(side):
    rows = {}
    for f in (out / side).glob("*.jsonl"):
        for line in f.read_text().splitlines():
            j = json.loads(line)
            if j.get("impl") == "tachyon" and j.get("ratio"):
                rows.setdefault((j["op"], j["dtype"], j["shape"]), []).append(j["ratio"])
    return {k: statistics.median(v) for k, v in rows.items()}
base, head = load("base"), load("head")
changes = []
for k in sorted(base.keys() & head.keys()):
    c = head[k] / base[k] - 1
    changes.append(c)
    print(f"{k[0]:32} {k[1]:5} {k[2]:14} {base[k]:.3f} -> {head[k]:.3f}  {100 * c:+.1f} %")
if changes:
    changes.sort()
    print(f"{len(changes)} cases: median {100 * statistics.median(changes):+.1f} %, "
          f"worst {100 * changes[0]:+.1f} %, best {100 * changes[-1]:+.1f} %")
EOF

#!/usr/bin/env bash
# Where an issue-bound row kernel's instructions go, in one device call: ncu's source counters
# for one tachyon-bench case (one launch of the kernel matching KERNEL), then per opcode the
# instructions an element and the share of stall samples, and the SASS with each line's
# executions per warp and row. Clocks are left as they run (--clock-control none: the device notes
# ask it; ncu's default locks them), so durations are the kernel's own; counts do not depend on it.
#
#   scripts/ncu-instructions.sh layer_norm_bwd bf16 32768x4096 norm_bwd_resident_pipelined [WARPS_PER_ROW]
# WARPS_PER_ROW (the row's warps in the whole team, e.g. 8 for 256 threads on one CTA) scales the
# per-line counts to one warp and row; without it they are per launch.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 4 ] || { echo "usage: $0 OP DTYPE MxN KERNEL_REGEX [WARPS_PER_ROW]"; exit 2; }
op=$1 dtype=$2 shape=$3 kernel=$4 warps=${5:-0}
OUT=${OUT:-$PWD/ncu-out}
BUILD=${BUILD:-build-gpu}
mkdir -p "$OUT"
[ -f "$BUILD/build.ninja" ] || cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTACHYON_BUILD_PYTHON=OFF >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target tachyon-bench >/dev/null
name="${op}_${dtype}_${shape}"
ncu --clock-control none --section SourceCounters --section InstructionStats --section WarpStateStats --section SchedulerStats \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis -k "regex:$kernel" -s 2 -c 1 -o "$OUT/$name" -f \
  "$BUILD/bench/tachyon-bench" --op "$op" --dtype "$dtype" --shape "$shape" --iters 3 --warmup 1 >"$OUT/$name.log" 2>&1
ncu -i "$OUT/$name.ncu-rep" --page source --csv --print-source sass >"$OUT/$name.sass.csv"
ncu -i "$OUT/$name.ncu-rep" --page details --csv >"$OUT/$name.details.csv"
python3 - "$OUT/$name" "$shape" "$warps" <<'EOF'
import collections, csv, re, sys
stem, shape, warps = sys.argv[1], sys.argv[2], int(sys.argv[3])
m, n = (int(v) for v in shape.split("x"))
rows = list(csv.reader(open(stem + ".sass.csv")))
head = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
lines = [dict(zip(rows[head], r)) for r in rows[head + 1:] if len(r) == len(rows[head])]
count = lambda d: int(d["Instructions Executed"] or 0)
stalls = lambda d: int(d["Warp Stall Sampling (All Samples)"] or 0)
total, samples = sum(map(count, lines)), max(1, sum(map(stalls, lines)))
print(f"{stem}: {total:,} warp instructions, {32 * total / (m * n):.2f} an element (x 32 threads)")
ops, ops_stall = collections.Counter(), collections.Counter()
for d in lines:
    op = re.sub(r"^@!?U?P\w+\s+", "", d["Source"].strip()).split(" ")[0]
    ops[op] += count(d)
    ops_stall[op] += stalls(d)
for op, c in ops.most_common(25):
    print(f"  {op:28} {32 * c / (m * n):6.2f} an element  {100 * ops_stall[op] / samples:5.1f} % of stall samples")
per = m * warps if warps else 1
base = int(lines[0]["Address"], 16)
with open(stem + ".annotated.txt", "w") as f:
    for d in lines:
        if count(d):
            f.write(f'{int(d["Address"], 16) - base:05x} {count(d) / per:10.2f} {stalls(d):6d}  {d["Source"].strip()}\n')
print(f"per-line counts ({'a warp and row' if warps else 'a launch'}): {stem}.annotated.txt")
wanted = ("Issued Warp Per Scheduler", "No Eligible", "Achieved Occupancy", "Registers Per Thread",
          "Warp Cycles Per Issued Instruction", "Block Size", "Grid Size", "Cluster Size", "Duration",
          "DRAM Throughput", "L1/TEX Hit Rate", "L2 Hit Rate", "Dynamic Shared Memory Per Block")
for d in csv.DictReader(open(stem + ".details.csv")):
    if d.get("Metric Name") in wanted:
        print(f'  {d["Metric Name"]}: {d["Metric Value"]} {d["Metric Unit"]}')
EOF
rm -f "$OUT/$name.ncu-rep"

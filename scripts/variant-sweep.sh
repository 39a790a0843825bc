#!/usr/bin/env bash
# Each row-kernel variant against the general path, in one device call: tachyon-bench times the
# ops a variant touches as built, then with the variant turned off (TACHYON_DISABLE_VARIANTS,
# src/core/variants.h), in alternating rounds; prints per variant its largest win (time without
# / time with) and where. A variant that wins by less than 2 % everywhere is a candidate to
# delete (issue #27's rule), with its kernels.
#
#   BENCH=build-gpu/bench/tachyon-bench VARIANTS="whole full_tile" ROUNDS=1 scripts/variant-sweep.sh
# A name joined with '+' turns several off together against all on (whole+fwd_stage: the typed
# build, unstaged); the first name picks the ops. SHAPES="32768x5120 32768x3071" times those
# shapes (--shape) instead of the suite's cases: widths and odd rows no suite holds.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-build-gpu/bench/tachyon-bench}
OUT=${OUT:-$PWD/variant-out}
ROUNDS=${ROUNDS:-1}
DTYPES=${DTYPES:-"bf16 f32"}  # fp16 rows run the bf16 kernels (same element size)
FWD="rms_norm_fwd layer_norm_fwd rms_norm_fwd_f32_weight"
BWD="rms_norm_bwd layer_norm_bwd rms_norm_bwd_f32_weight layer_norm_bwd_f32_weight"
declare -A OPS=(
  [whole]="$FWD" [whole_cluster]="$FWD" [full_tile]="$FWD rms_norm_fwd_residual"
  [fused_grouped]="rms_norm_fwd_residual rms_norm_fwd_residual_f32_weight" [load_balancing]="$FWD"
  [fwd_stage]="$FWD rms_norm_fwd_residual_f32_weight"
  [four_item_rows]="layer_norm_fwd layer_norm_fwd_f32_weight"
  [bwd_typed]="$BWD" [bwd_l2_prefetch]="$BWD rms_norm_bwd_residual" [bwd_typed_dresidual]="rms_norm_bwd_residual"
  [bwd_layouts]="layer_norm_bwd layer_norm_bwd_f32_weight" [bwd_packed_layout]="layer_norm_bwd"
  [bwd_narrow_dy]="$BWD" [bwd_framed]="$BWD" [bwd_four_warps]="$BWD" [bwd_cluster_cap]="layer_norm_bwd layer_norm_bwd_f32_weight" [bwd_packed_balanced]="layer_norm_bwd" [bwd_short_two_chunk]="$BWD" [ce_narrow]="cross_entropy_fwd cross_entropy_fwd_grad cross_entropy_fwd_mean cross_entropy_fwd_grad_mean"
  [fwd_framed]="$FWD" [fwd_framed_four]="$FWD" [fwd_framed_one_cta]="$FWD" [fwd_framed_wide]="$FWD"
  [fwd_four_slots]="$FWD layer_norm_fwd_f32_weight"
  [four_item_exact]="layer_norm_fwd layer_norm_fwd_f32_weight rms_norm_fwd softmax_fwd softmax_bwd cross_entropy_fwd cross_entropy_fwd_grad"
)
VARIANTS=${VARIANTS:-"${!OPS[*]}"}
mkdir -p "$OUT"
for v in $VARIANTS; do
  [ -n "${OPS[${v%%+*}]:-}" ] || { echo "unknown variant $v"; exit 2; }
  for r in $(seq "$ROUNDS"); do
    for side in on off; do
      mkdir -p "$OUT/$v/$side"
      for op in ${OPS[${v%%+*}]}; do
        for dt in $DTYPES; do
          [[ $op == *_f32_weight && $dt != bf16 ]] && continue
          for shape in ${SHAPES:-suite}; do
            cases=(--suite all); [ "$shape" = suite ] || cases=(--shape "$shape")
            if [ $side = on ]; then env -u TACHYON_DISABLE_VARIANTS "$BENCH" "${cases[@]}" --op "$op" --dtype "$dt" --results "$OUT/$v/on" >>"$OUT/$v.log" 2>&1 || true
            else TACHYON_DISABLE_VARIANTS=${v//+/,} "$BENCH" "${cases[@]}" --op "$op" --dtype "$dt" --results "$OUT/$v/off" >>"$OUT/$v.log" 2>&1 || true; fi
          done
        done
      done
    done
  done
done
python3 - "$OUT" $VARIANTS <<'EOF'
import json, pathlib, statistics, sys
out, variants = pathlib.Path(sys.argv[1]), sys.argv[2:]
def load(d):
    rows = {}
    for f in d.glob("*.jsonl"):
        for line in f.read_text().splitlines():
            j = json.loads(line)
            if j.get("impl") == "tachyon" and j.get("ms"):
                rows.setdefault((j["op"], j["dtype"], j["shape"]), []).append(j["ms"])
    return {k: statistics.median(v) for k, v in rows.items()}
for v in variants:
    on, off = load(out / v / "on"), load(out / v / "off")
    wins = sorted(((off[k] / on[k] - 1) * 100, k) for k in on.keys() & off.keys())
    if not wins:
        print(f"{v:22} no common cases (see {v}.log)"); continue
    best, worst = wins[-1], wins[0]
    verdict = "keep" if best[0] >= 2 else "candidate to delete"
    print(f"{v:22} best win {best[0]:+.1f} % ({' '.join(best[1])}), worst {worst[0]:+.1f} % "
          f"({' '.join(worst[1])}), {len(wins)} cases: {verdict}")
    for w, k in wins[::-1]:
        if w < 2: break
        print(f"{'':22}   {w:+.1f} % {' '.join(k)}")
EOF

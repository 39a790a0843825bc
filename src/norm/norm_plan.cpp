// The norm family's layout rules (declared in norm_params.h) and the forward's plan: pure
// functions of the problem, the row config and the kernels' registers, pinned by the CPU tests
// (tests/cpu/row_build_test.cpp). The measurements behind each rule: docs/perf/norm.md.
#include <algorithm>
#include <numeric>

#include "core/host_device.h"
#include "core/row_config.h"
#include "core/variants.h"
#include "norm/norm_params.h"

namespace tachyon::detail {

NormFwdMode forward_mode_for_config(NormFwdMode mode, const RowConfig& cfg, bool layer_norm, bool wide_weight) {
  const bool bounded = layer_norm && !wide_weight && mode == NormFwdMode::whole && cfg.cluster_size > 1;
  return bounded ? NormFwdMode::whole_cluster : mode;
}

FwdBuild fused_forward_build(NormFwdMode mode, bool fused, DType storage, const RowConfig& cfg, bool full_tile) {
  if (mode != NormFwdMode::typed || !fused || cfg.items != kBoundedForwardItems) return {mode};
  FwdBuild b{mode};
  // Fused typed cluster rows on the 8-chunk tile take the grouped build (x, then the residual in pairs, all
  // ahead of the stores): fp16 always, fp32 on 2-8 CTAs or where the rows fill the tile, bf16 only where
  // they fill it. One-CTA rows stay typed: plan_norm_forward gives them the 4-chunk tile, whose loads all
  // run ahead. Rows on 8+ CTAs set a carveout preference (docs/perf/norm.md#fused-residual-design).
  const bool f16 = storage == DType::f16, f32 = storage == DType::f32, bf16 = storage == DType::bf16;
  if (cfg.cluster_size > 1 && (f16 || (f32 && (cfg.cluster_size <= 8 || full_tile)) || (bf16 && full_tile)))
    b.mode = NormFwdMode::fused_grouped;
  if (cfg.cluster_size >= 8) b.smem_carveout = is_fused_grouped(b.mode) ? 75 : 100;
  return b;
}

bool forward_cluster_load_balancing(const RowConfig& cfg) { return cfg.cluster_size == 16; }

bool forward_full_tile(const RowConfig& cfg, NormFwdMode mode, bool layer_norm, bool whole_operands,
                       std::int64_t n) {
  const NormFwdMode build = forward_kernel_build(mode, cfg.items);
  const bool whole = build == NormFwdMode::whole || build == NormFwdMode::whole_cluster;
  const std::int64_t tile = static_cast<std::int64_t>(cfg.items) * cfg.threads_per_row * cfg.cluster_size * cfg.vec;
  return full_form_built(build, layer_norm, cfg.items) && (whole || whole_operands) && tile == n;
}

// Shared-memory bytes a CTA stages of the weight (and LayerNorm's bias), or 0. Staged: cluster rows, whose
// copies complete under the row's loads and exchange, and LayerNorm's bounded build through its window at
// any cluster size (unstaged, its output loop pays an L2 round trip a chunk after the reduction). One-CTA
// rows share the weight through L1 instead. At most 64 KiB a CTA (more costs CTAs an SM) and
// kForwardStagePerSm over the SM's CTAs: the stage is carved from the SM's L1, which the row's loads in
// flight need (docs/perf/norm.md#fp32-weight-forward, docs/perf.md#shared-memory-is-l1).
std::size_t forward_stage_bytes(const RowConfig& cfg, NormFwdMode build, bool layer_norm, int weight_bytes,
                                int bias_bytes, int ctas_per_sm) {
  // Streaming rows stage nothing; framed rows' weight lies off the 16-byte grid.
  // A chunk is 16 bytes of the row: vec gives the row's element size.
  const bool always = forward_staging(layer_norm, build, 16 / cfg.vec) == Staging::always;
  if (cfg.items <= 0 || build == NormFwdMode::framed || (!variant_enabled(Variant::fwd_stage) && !always))
    return 0;
  const int window = forward_stage_window(cfg.items, layer_norm, build);
  const std::size_t per_element = static_cast<std::size_t>(weight_bytes) + (layer_norm ? bias_bytes : 0);
  const std::size_t bytes = static_cast<std::size_t>(cfg.cta_threads) * window * cfg.vec * per_element;
  const bool windowed = window < cfg.items;
  // (An always-staged build stages past the cap an SM too: at its 64 registers it is at the cap.)
  const bool fits = bytes <= 64 * 1024 && (always || bytes * std::max(ctas_per_sm, 1) <= kForwardStagePerSm);
  return (cfg.cluster_size > 1 || windowed) && fits ? bytes : 0;
}

RowConfig backward_row_config(RowProblem prob, bool layer_norm, BwdWeightSlots slots) {
  prob.max_items = kBackwardItems;
  prob.single_cta_items = 2;
  // Short 16-bit rows (a warp of 4-chunk threads or less, several rows a CTA) on the 2-chunk tile:
  // twice the threads a row, its sums in registers, not in slots read and written each row.
  // (docs/perf/norm.md#short-rows)
  if (prob.elem_bytes == 2 && row_chunks(prob) <= 32LL * kBackwardItems &&
      variant_enabled(Variant::bwd_short_two_chunk)) {
    prob.max_items = 2;
    return choose_row_config(prob);
  }
  const RowConfig cfg = choose_row_config(prob);
  if (cfg.items == 2 && cfg.cluster_size == 1 && cfg.rows_per_cta == 1) {
    // A one-CTA 2-chunk row takes the 4-chunk tile where that keeps more warps an SM (backward_warps_an_sm,
    // each kernel at its register bound; more warps hide the row's load latency): 16-bit rows where it
    // keeps half as many again, fp32 rows only in their frame and where it keeps any more (their 2-chunk
    // RMSNorm kernels sit far under the bound) (docs/perf/norm.md#backward-design).
    auto warps = [&](const RowConfig& c) {
      return backward_warps_an_sm(c, layer_norm, prob.elem_bytes, prob.frames_vary);
    };
    RowProblem four = prob;
    four.single_cta_items = kBackwardItems;
    const RowConfig c = choose_row_config(four);
    const bool sixteen = prob.elem_bytes == 2 && variant_enabled(Variant::bwd_four_warps);
    const bool more = sixteen ? c.rows_per_cta == 1 && 2 * warps(c) >= 3 * warps(cfg)
                              : prob.frames_vary && warps(c) > warps(cfg);
    if (!c.streaming() && c.cluster_size == 1 && more) return c;
    // Else a 16-bit row whose one CTA leaves its SM under 16 warps takes a 2-CTA cluster of half the
    // threads where that keeps half as many warps again (docs/perf/norm.md#register-partitions).
    if (prob.elem_bytes == 2 && prob.max_cluster >= 2 && variant_enabled(Variant::bwd_pair_cluster)) {
      RowConfig pair = cfg;
      pair.cluster_size = 2;
      const std::int64_t per_warp = 32LL * cfg.items * pair.cluster_size;  // chunks a warp of each CTA holds
      pair.threads_per_row = pair.cta_threads = static_cast<int>(ceil_div(cfg.chunks, per_warp) * 32);
      if (warps(cfg) < 16 && 2 * warps(pair) >= 3 * warps(cfg)) return pair;
    }
  }
  // LayerNorm 16-bit rows with packed weight slots, past 2 x 512 chunks and up to kMostCtas x 512 x 4: the
  // 4-chunk tile on 1-4 CTAs of up to 512 threads, not the 2-chunk tile on twice the cluster; the packed
  // slots (and the compact exchange scratch) leave that tile the L1 its loads need. Other LayerNorm 16-bit
  // cluster rows take the 2-chunk tile on 256-thread CTAs, at most kLayerNormTwoChunkCluster of them (with
  // fp32 slots the 4-chunk tile keeps ~28 KiB of L1), past that the 4-chunk tile on at most
  // kLayerNormMaxCluster (docs/perf/norm.md#backward-and-l1, docs/perf.md#shared-memory-is-l1).
  const bool layouts = layer_norm && variant_enabled(Variant::bwd_layouts);
  if (layouts && slots == BwdWeightSlots::packed && prob.elem_bytes == 2 && !cfg.streaming() &&
      variant_enabled(Variant::bwd_packed_layout)) {
    constexpr int kThreads = 512, kMostCtas = 4;
    const std::int64_t per_cta = static_cast<std::int64_t>(kThreads) * kBackwardItems;
    if (cfg.chunks > 2LL * kThreads && cfg.chunks <= kMostCtas * per_cta) {
      RowConfig c = cfg;
      c.items = kBackwardItems;
      c.threads_per_row = c.cta_threads = kThreads;
      c.rows_per_cta = 1;
      c.cluster_size = static_cast<int>(ceil_div(cfg.chunks, per_cta));
      // The fewest CTAs, their threads balanced to fill them (empty slots still cost L1). A one-CTA row,
      // alone on its SM, keeps 512 threads unless balancing frees a quarter of its warps
      // (docs/perf/norm.md#backward-and-l1).
      const int balanced = static_cast<int>(ceil_div(cfg.chunks, 32LL * kBackwardItems * c.cluster_size) * 32);
      if (variant_enabled(Variant::bwd_packed_balanced) && (c.cluster_size > 1 || 4 * balanced <= 3 * kThreads))
        c.threads_per_row = c.cta_threads = balanced;
      if (c.cluster_size <= prob.max_cluster) return c;
    }
  }
  if (layouts && prob.elem_bytes == 2 && cfg.cluster_size > 1) {
    RowProblem narrow = prob;
    narrow.max_items = kLayerNormClusterItems;
    const RowConfig wide = choose_row_config(narrow);
    // Rows in their frame keep any cluster: their 4-chunk tile (which spills) is not measured there.
    const bool cap = variant_enabled(Variant::bwd_cluster_cap) && !prob.frames_vary;
    const int most_ctas = cap ? kLayerNormTwoChunkCluster : prob.max_cluster;
    if (!wide.streaming() && wide.cta_threads <= 256 && wide.cluster_size <= most_ctas) return wide;
    RowProblem eight = prob;
    eight.max_cluster = std::min(prob.max_cluster, kLayerNormMaxCluster);
    const RowConfig c = choose_row_config(eight);
    if (!c.streaming()) return c;
  }
  if (prob.elem_bytes != 4 || !cfg.streaming()) return cfg;
  prob.max_items = kBackwardLongRowItems;
  return choose_row_config(prob);
}

std::size_t backward_smem_bytes(const RowConfig& cfg, bool layer_norm, int elem_bytes, bool packed, bool sums,
                                std::int64_t n) {
  const std::size_t chunks = static_cast<std::size_t>(cfg.cta_threads) * cfg.items;
  const std::size_t set = chunks * (16 / elem_bytes);  // floats of an fp32 slot set
  const int sum_sets = backward_sums_in_smem(cfg.items) ? (layer_norm ? 2 : 1) : 0;
  std::size_t floats = set * (1 + sum_sets);
  if (packed) floats -= set - chunks * 4;  // the weight set as 16-byte quads
  if (cfg.rows_per_cta > 1 && sums) floats = std::max(floats, static_cast<std::size_t>(cfg.rows_per_cta) * n);
  return floats * sizeof(float);
}

long long backward_frame_groups(long long groups, long long total_groups, int rows_per_cta) {
  if (groups >= total_groups) return groups;
  const long long m = kFramePeriodRows / std::gcd(std::max(rows_per_cta, 1), kFramePeriodRows);
  return groups >= m ? groups / m * m : std::min(m, total_groups);
}

BwdBuild backward_build(int items, bool layer_norm, int elem_bytes, const BwdBuildAsk& ask) {
  BwdBuild b;
  b.items = items;
  b.typed = ask.typed;
  b.framed = ask.typed && ask.framed;
  if (!ask.typed || ask.framed) return b;
  const bool four = items == kBackwardItems, dres = ask.dres && !layer_norm;
  if (dres || ask.narrow_dy) {  // LayerNorm has no build for bf16 dy
    b.dres = dres;
    b.narrow_dy = ask.narrow_dy;
    b.ahead = ask.ahead && four;
  } else if (layer_norm && ask.packed) {
    b.packed = true;
    b.ahead = ask.ahead;
  } else if (ask.ahead && four) {
    b.ahead = true;
  } else if (layer_norm && ask.tight) {
    b.tight = true;
  } else {
    b.ahead = ask.ahead && items == 2 && elem_bytes == 2;
  }
  return b;
}

RowConfig backward_runtime_row_config(RowProblem prob) {
  prob.frames_vary = false;  // as backward_row_config: the columns stay with their threads
  prob.max_items = kBackwardItems;
  prob.min_items = kBackwardItems;
  return choose_row_config(prob);
}

bool backward_l2_prefetch(const RowConfig& cfg, bool layer_norm, int elem_bytes, bool fast_hbm) {
  if (cfg.rows_per_cta != 1 || cfg.cta_threads <= 0) return false;
  if (cfg.items == kBackwardItems && cfg.chunks * 16 >= 64 * 1024) return true;
  const bool tile = cfg.items == kBackwardItems || (cfg.items == 2 && elem_bytes == 2);
  return fast_hbm && tile && backward_warps_an_sm(cfg, layer_norm, elem_bytes, false) <= kAheadMaxWarps;
}

bool backward_typed_dresidual(const RowConfig& cfg) {
  return cfg.items == 2 || cfg.items == kBackwardItems || cfg.items == kBackwardLongRowItems;
}

NormFwdPlan plan_norm_forward(const NormFwdProblem& q, NormFwdRegs regs) {
  NormFwdPlan plan;
  RowProblem prob = q.rows;
  // The norm forward asks for the narrow layouts whatever its registers (256-thread CTAs and clusters
  // before 512-thread ones, rows of 257..512 chunks on the 4-item tile): its CTAs all wait at each row's
  // reduction, so more and smaller CTAs an SM overlap it. Fused rows too: their 4-item tile loads every
  // chunk before it stores (kFusedAheadItems) (docs/perf/norm.md#row-layouts).
  prob.narrow_ctas = true;
  prob.four_item_rows = true;
  // The row layout of a build: choose_row_config for its register tile and registers.
  auto lay = [&](NormFwdMode mode) {
    plan.mode = mode;
    prob.elem_bytes = forward_elem_bytes(mode, q.rows.elem_bytes);
    prob.max_items = kForwardMaxItems;
    prob.regs_per_thread = regs(q, mode);
    prob.min_items = kForwardMinItems;
    // The whole build's unfused rows of 384 chunks take the 96-thread team they fill, so LayerNorm's
    // full-tile form runs (framed and typed rows not measured; fused rows gain nothing there)
    // (docs/perf/norm.md#row-layouts).
    prob.four_item_exact = mode == NormFwdMode::whole && !q.fused;
    // Framed rows carry the frame's extra chunk, one past the power-of-two layouts, which would leave
    // slots idle or add a cluster. Past one warp of 8 chunks they take one CTA: 4 chunks a thread up
    // to 512 x 4, then 8; up to one warp they keep the plain layout, not two warps of 4
    // (docs/perf/norm.md#odd-rows).
    const std::int64_t chunks = row_chunks(prob);
    prob.single_cta_items = mode != NormFwdMode::framed || chunks <= 32 * 8                     ? 0
                            : chunks <= 512 * 4 && variant_enabled(Variant::fwd_framed_four)   ? 4
                            : chunks > 512 * 4 && variant_enabled(Variant::fwd_framed_one_cta) ? 8
                                                                                                 : 0;
    // Whole one-CTA rows whose chunks fill a CTA of 4-chunk threads exactly but no CTA of 8-chunk ones
    // take that full 4-chunk tile (the full-tile form, no idle slots); a 4-chunk layout that is not full
    // stays on 8 chunks (docs/perf/norm.md#row-layouts).
    if (mode == NormFwdMode::whole && chunks > 128 * 4 && chunks <= 512 * 4 && chunks % (32 * 4) == 0 &&
        chunks % (32 * 8) != 0 && variant_enabled(Variant::fwd_four_slots))
      prob.single_cta_items = 4;
    plan.cfg = choose_row_config(prob);
  };
  // Rows off the 16-byte grid take the whole build's loops in their frame where x and y share it
  // and the tile is built (docs/perf/norm.md#odd-rows).
  const bool framed = q.framed_rows && variant_enabled(Variant::fwd_framed);  // whole rows come first
  lay(!variant_enabled(Variant::whole) ? (q.typed ? NormFwdMode::typed : NormFwdMode::generic)
      : q.whole_rows                  ? NormFwdMode::whole
      : framed                        ? NormFwdMode::framed
      : q.typed                       ? NormFwdMode::typed
                                      : NormFwdMode::generic);
  // Fused rows take the tiles whose loads all run ahead of their stores (kFusedAheadItems): one chunk pair
  // in flight leaves them latency-bound. Rows into fp32 storage from other dtypes (generic build) take them
  // while the row fits and stream past that rather than take the 8-chunk tile; typed rows while one CTA
  // of up to 512 threads holds the row, not a 2-CTA cluster (docs/perf/norm.md#fused-residual-design).
  const bool generic_f32 = plan.mode == NormFwdMode::generic && q.storage == DType::f32;
  if (q.fused && (generic_f32 || (plan.mode == NormFwdMode::typed && plan.cfg.items > kFusedAheadItems))) {
    RowProblem four = prob;
    four.max_items = kFusedAheadItems;
    if (!generic_f32) four.single_cta_items = kFusedAheadItems;
    const RowConfig cfg = choose_row_config(four);
    if (generic_f32 || (!cfg.streaming() && cfg.cluster_size == 1)) plan.cfg = cfg;
  }
  // LayerNorm's cluster rows take the bounded whole build (64 registers), its weight and bias staged
  // through a window (forward_mode_for_config) (docs/perf/norm.md#forward-design).
  if (variant_enabled(Variant::whole_cluster) &&
      forward_mode_for_config(plan.mode, plan.cfg, q.layer_norm, q.wide_weight) != plan.mode)
    lay(NormFwdMode::whole_cluster);
  const bool full_tiles = variant_enabled(Variant::full_tile);
  if (variant_enabled(Variant::fused_grouped)) {
    const FwdBuild build = fused_forward_build(
        plan.mode, q.fused && !q.layer_norm, q.storage, plan.cfg,
        full_tiles && forward_full_tile(plan.cfg, NormFwdMode::fused_grouped, q.layer_norm, q.whole_fused, q.rows.n));
    plan.mode = build.mode;
    if (build.smem_carveout >= 0) plan.cfg.smem_carveout = build.smem_carveout;
  }
  plan.cfg.cluster_load_balancing =
      variant_enabled(Variant::load_balancing) && forward_cluster_load_balancing(plan.cfg);
  plan.full_tile = full_tiles && forward_full_tile(plan.cfg, plan.mode, q.layer_norm, q.whole_fused, q.rows.n);
  return plan;
}

}  // namespace tachyon::detail

#pragma once
// The norm family's kernel parameters (plain data, passed by value as __grid_constant__) and the
// host's layout rules, shared by norm.cpp, norm_fwd.cu and norm_bwd.cu. Each rule is a pure
// function of row config, dtype and op that picks a kernel build or refines choose_row_config's
// layout, so the CPU tests pin it; the measurements behind them are in docs/perf/norm.md.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/row_arg.h"
#include "core/row_config.h"
#include "tachyon/tensor.h"

namespace tachyon::detail {

struct NormFwdParams {
  RowArg x, residual, residual_out, y;  // residual_out (when fused) has the storage dtype
  RowArg weight, bias;                  // vectors: stride unused
  float* mean = nullptr;
  float* rstd = nullptr;
  std::int64_t rows = 0;
  int n = 0;
  float eps = 0.f, weight_offset = 0.f;
  int threads_per_row = 0, rows_per_cta = 0, cluster_size = 1;
  bool stage_operands = false;  // weight / bias staged in dynamic shared memory (set by the launcher)
};

struct NormBwdParams {
  RowArg x, dy, dresidual, dx;
  RowArg weight;
  const float* mean = nullptr;  // LayerNorm only
  const float* rstd = nullptr;
  float* dw_partial = nullptr;  // [groups][n] f32, or null when dw is not wanted
  float* db_partial = nullptr;  // [groups][n] f32, LayerNorm, or null
  std::int64_t rows = 0;
  int n = 0;
  float weight_offset = 0.f;
  int threads_per_row = 0, rows_per_cta = 0, cluster_size = 1;
  bool framed = false;  // rows in their frame: the typed loop's framed build (backward_frame_groups)
};

// The forward kernel's build (norm_fwd.cu): whole - one dtype, whole aligned 16-byte chunks,
// weight (and bias) present, no residual; typed - one dtype; generic - mixed dtypes;
// whole_cluster - LayerNorm's whole bounded to 64 registers; fused_grouped - the typed fused residual,
// bounded, with the residual's loads two chunks at a time ahead of its stores;
// framed - whole's chunk loops on rows off the 16-byte grid, in their frame (4- and 8-chunk tiles;
// x and y share the frame, weight and bias both in x's dtype or both fp32).
// (docs/perf/norm.md#forward-design, docs/perf/norm.md#fused-residual-design)
enum class NormFwdMode { generic, typed, whole, whole_cluster, fused_grouped, framed };

constexpr bool is_fused_grouped(NormFwdMode m) { return m == NormFwdMode::fused_grouped; }
// The residual chunks the grouped build keeps in flight.
inline constexpr int kFusedLoadGroup = 2;

// whole_cluster for LayerNorm's cluster rows, bounded to 64 registers: it stages weight and bias through a window
// of half the tile (forward_stage_window), where the whole build's full tile of both would pass the SM's stage cap
// and be read through L1, its output loop waiting an L2 round trip a chunk. Not RMSNorm (its weight alone stages
// whole within the cap) nor LayerNorm with an fp32 weight beside 16-bit rows (`wide_weight`, read through L1
// either way): their whole builds are as fast. Otherwise `mode` unchanged. (docs/perf/norm.md#forward-design)
NormFwdMode forward_mode_for_config(NormFwdMode mode, const RowConfig& cfg, bool layer_norm, bool wide_weight);

// The fused residual RMSNorm's build on the typed 8-chunk tile (`fused`; other modes and tiles unchanged): grouped
// where that runs ahead of typed: fp16 cluster rows (their typed tile is bounded too, and spills), fp32 rows on
// 2-8 CTAs, and fp32 16-CTA and bf16 cluster rows that fill the tile (`full_tile`: the full form spills least).
// On 8+ CTAs a carveout preference (100 % typed, 75 % grouped), per kernel: the other row kernels lose by it.
// The layout stays the plan's (cluster rows on 256-thread CTAs, RowProblem::narrow_ctas).
// (docs/perf/norm.md#fused-residual-design)
struct FwdBuild {
  NormFwdMode mode;
  int smem_carveout = -1;  // RowConfig::smem_carveout to ask for (-1: the driver's choice)
};
FwdBuild fused_forward_build(NormFwdMode mode, bool fused, DType storage, const RowConfig& cfg,
                             bool full_tile = false);

// The forward kernel launched for a build and tile: the bounded cluster builds exist for the
// 8-chunk tile only (the one cluster rows take); other tiles take the whole (typed) build.
inline constexpr int kBoundedForwardItems = 8;
constexpr NormFwdMode forward_kernel_build(NormFwdMode mode, int items) {
  if (items == kBoundedForwardItems) return mode;
  return mode == NormFwdMode::whole_cluster ? NormFwdMode::whole
         : is_fused_grouped(mode)             ? NormFwdMode::typed
                                              : mode;
}

// The builds with a full-tile form (norm_fwd_row's kFull), where it runs ahead of the whole-chunk path the other
// whole builds take at run time (norm_fwd_row's `inside`): LayerNorm's whole builds (4 and 8 chunks; H200 bf16
// 4096 0.943 against 0.84) and its bounded cluster build (there the `inside` path costs registers and spills),
// RMSNorm's grouped fused builds. Not the typed build: the full form's registers cost it CTAs an SM.
// (docs/perf/norm.md#forward-design)
constexpr bool full_form_built(NormFwdMode m, bool layer_norm, int items) {
  if (items == kBoundedForwardItems && (m == NormFwdMode::whole_cluster ? layer_norm : !layer_norm && is_fused_grouped(m)))
    return true;
  return layer_norm && m == NormFwdMode::whole && (items == 4 || items == kBoundedForwardItems);
}
// The whole builds' tiles that test once whether a thread's chunks all lie inside the row and
// then load, reduce and store without row-end tests (4 and 8 chunks; the full forms above aside).
constexpr bool inside_path_built(NormFwdMode m, bool layer_norm, int items) {
  return (m == NormFwdMode::whole || m == NormFwdMode::whole_cluster) && (items == 4 || items == kBoundedForwardItems) &&
         !full_form_built(m, layer_norm, items);
}

// Load-balancing cluster scheduling for 16-CTA rows (not 8-CTA ones): the default policy puts such a cluster on
// 16 SMs of one GPC, so only 112 of the H100's 132 SMs take them; load balancing may pair two of its CTAs on an SM.
// (docs/perf.md#16-cta-clusters-reach-112-of-132-sms, docs/perf/norm.md#variant-sweep)
bool forward_cluster_load_balancing(const RowConfig& cfg);

// Whether a build with a full form (full_form_built) fills its tile exactly (n == items x threads_per_row x
// cluster x vec: powers of two do, 5120 or 7168 bf16 do not) with every operand whole (`whole_operands`, implied by
// the whole builds): then that form runs, without row-end or alignment tests (~20 % fewer instructions).
// (docs/perf/norm.md#forward-design)
bool forward_full_tile(const RowConfig& cfg, NormFwdMode mode, bool layer_norm, bool whole_operands,
                       std::int64_t n);

// Chunk slots a resident forward kernel stages per operand (weight, bias) and thread: the whole
// tile, except in LayerNorm's bounded build, where two CTAs' full tiles (2 x 64 KiB a CTA at 8
// chunks) would not fit an SM: half of them, refilled along the row (norm_fwd.cu, write_row_whole).
__host__ __device__ constexpr int forward_stage_window(int items, bool layer_norm, NormFwdMode build) {
  return layer_norm && build == NormFwdMode::whole_cluster && items > 1 ? items / 2 : items;
}

// LayerNorm's bounded cluster build on 16-bit rows always stages its weight and bias (its window fits
// kForwardStagePerSm at its 64 registers), so those kernels compile the staged path only (VectorStage's kFixed).
// The others keep both paths, chosen per launch: fp32 rows run slower always staged, and the whole build runs
// slower compiled without its staged path, even where it never stages (an fp32 weight beside 16-bit rows).
// (docs/perf/norm.md#forward-design)
__host__ __device__ constexpr Staging forward_staging(bool layer_norm, NormFwdMode build, int elem_bytes) {
  return layer_norm && build == NormFwdMode::whole_cluster && elem_bytes == 2 ? Staging::always : Staging::per_launch;
}

// Dynamic shared memory for a resident forward launch's staged weight and bias, or 0 (read from
// global memory). `build` as forward_kernel_build gives it; weight_bytes / bias_bytes: element
// bytes as staged (0: absent); ctas_per_sm: the kernel's CTAs an SM unstaged (registers,
// threads). Why cluster rows, the window and the cap an SM: norm_plan.cpp.
inline constexpr std::size_t kForwardStagePerSm = 128 * 1024;
std::size_t forward_stage_bytes(const RowConfig& cfg, NormFwdMode build, bool layer_norm, int weight_bytes,
                                int bias_bytes, int ctas_per_sm);

// The forward's largest register tile: 8 chunks a thread, rows to 16-bit 524288 / fp32 262144 on a 16-CTA cluster
// of 512 threads; longer rows stream. Larger tiles (12, 16 chunks) beat streaming only on rows they fill.
// (docs/perf/norm.md#forward-design)
inline constexpr int kForwardMaxItems = 8;
// The smallest forward tile: rows of one or two chunks (16-bit N <= 16, fp32 N <= 8) take the 4-chunk tile, part
// empty. 1- and 2-chunk tiles would run them faster but cost 21 kernels for rows no model normalises.
// (docs/perf/norm.md#forward-design)
inline constexpr int kForwardMinItems = 4;
// The fused residual's tiles of up to this many chunks load a row's every x and residual chunk
// before its first residual_out store (norm_fwd.cu: load_fused_grouped on the typed build,
// load_fused_f32 on the generic build's fp32 tile, which fp32-storage rows take while the row
// fits it: norm_plan.cpp). Larger tiles have no registers for it.
inline constexpr int kFusedAheadItems = 4;
// The register tiles built for a forward build: 4 and 8 chunks (kForwardMinItems,
// kForwardMaxItems); the generic build's resident tiles keep fp32 rows only (forward_storage).
// tests/cpu/norm_plan_test.cpp checks every plan against this.
constexpr bool forward_tile_built(int elem_bytes, NormFwdMode mode, int items) {
  return (items == kForwardMinItems || items == kForwardMaxItems) && (mode != NormFwdMode::generic || elem_bytes == 4);
}
// The row's element bytes as the forward's layout sees them: the generic build keeps fp32 rows
// whatever its operands' dtypes (each read in its own: one build for all mixed-dtype rows, its
// layout an fp32 row's of the same length); the others keep the storage dtype.
constexpr int forward_elem_bytes(NormFwdMode mode, int storage_bytes) {
  return mode == NormFwdMode::generic ? 4 : storage_bytes;
}
// Registers of the resident forward kernel's 8-chunk tile (RowProblem::regs_per_thread), cached.
// wide_whole: the builds for an fp32 weight and bias beside 16-bit rows (forward_wide_whole).
int norm_forward_regs(const char* op, bool layer_norm, NormFwdMode mode, DType storage, bool wide_whole);

// A forward call as its plan sees it: known before any CUDA call, but for the registers.
struct NormFwdProblem {
  const char* op = "";
  RowProblem rows;  // n, the storage element size (residual_out when fused, else x), frames, clusters
  DType storage = DType::f32;
  bool layer_norm = false, fused = false;
  bool typed = false;        // every row operand in x's dtype; weight and bias in it or fp32
  bool whole_rows = false;   // typed, no residual, weight (and bias) present, all in whole aligned chunks
  bool whole_fused = false;  // typed fused rows whose every operand is whole aligned chunks
  bool framed_rows = false;  // not whole_rows, else as them: x and y share each row's frame, weight and bias of one dtype
  bool wide_weight = false;  // an fp32 weight beside 16-bit rows
};
// LayerNorm's whole builds and the framed builds with an fp32 weight and bias beside 16-bit rows
// run a kernel of their own (norm_fwd.cu's kWideVec); RMSNorm's whole build carries the branch.
constexpr bool forward_wide_whole(const NormFwdProblem& q, NormFwdMode mode) {
  return q.wide_weight && (mode == NormFwdMode::framed ||
                           (q.layer_norm && (mode == NormFwdMode::whole || mode == NormFwdMode::whole_cluster)));
}
struct NormFwdPlan {
  NormFwdMode mode = NormFwdMode::generic;
  RowConfig cfg;
  bool full_tile = false;  // forward_full_tile's answer (the launch may still keep the usual form)
};
// The dtype the launched kernel keeps rows in: fp32 for the generic build's resident tiles
// (forward_elem_bytes); streaming rows keep the storage dtype, as every other build.
inline DType forward_storage(const NormFwdPlan& plan, DType storage) {
  return plan.mode == NormFwdMode::generic && !plan.cfg.streaming() ? DType::f32 : storage;
}
// Registers of the 8-chunk tile of a build for the problem's dtype (norm_forward_regs on a GPU;
// a table in the CPU tests).
using NormFwdRegs = int (*)(const NormFwdProblem&, NormFwdMode);
// The build and layout of a forward call: the build its operands allow, laid by
// choose_row_config for that kernel's registers, then the rules above.
NormFwdPlan plan_norm_forward(const NormFwdProblem& q, NormFwdRegs regs);

// The backward's register tile of x and dy: 4 chunks a thread (2 while one CTA holds the row), which keeps the
// next row's loads in flight; 8 have no registers for that, so only fp32 rows past 131072 take 8, rather than the
// streaming kernel, which reads x and dy twice. LayerNorm's 16-bit cluster rows off the packed 4-chunk layout (an
// fp32 weight) take 2 chunks on twice the cluster, on at most 4 CTAs; past that, the 4-chunk tile on fewer CTAs.
// At 131072 the 4-chunk tile needs 512-thread CTAs, on at most 8 CTAs. (docs/perf/norm.md#backward-design)
inline constexpr int kBackwardItems = 4;
inline constexpr int kBackwardTileRegs = 128;  // the pipelined and fp32 long-row tiles' register bound
// A pipelined tile's register bound: 128, but 96 for the 16-bit 2-chunk tile. An SM's four register partitions
// hold five 96-register warps each, not four: 3072 (6 warps a CTA) runs three CTAs an SM, not two. RMSNorm's
// kernels all take it (no spill); LayerNorm's typed kernels only where it adds CTAs an SM (`tight`,
// backward_tight_layer_norm; 4-8 bytes of spill), as their 128-register code is faster at equal CTAs; not framed
// (136 bytes of spill). (docs/perf/norm.md#register-partitions)
inline constexpr int kBackwardTightRegs = 96;
constexpr int backward_tile_regs(int items, bool layer_norm, int elem_bytes, bool tight = false) {
  return items == 2 && elem_bytes == 2 && (!layer_norm || tight) ? kBackwardTightRegs : kBackwardTileRegs;
}
// Whether LayerNorm's 16-bit 2-chunk rows on `cfg` take the 96-register kernel: rows on the 16-byte
// grid whose CTAs the SM holds more of at that bound (1536-3072 and 4104-5120 on one CTA, the pair
// cluster's 192-thread CTAs, short rows' 128-thread CTAs). One rule for the plan and the launch.
constexpr bool backward_tight_layer_norm(const RowConfig& cfg, int elem_bytes, bool framed) {
  return elem_bytes == 2 && !framed && cfg.items == 2 &&
         ctas_an_sm_by_registers(kBackwardTightRegs, cfg.cta_threads) >
             ctas_an_sm_by_registers(kBackwardTileRegs, cfg.cta_threads);
}
// Warps an SM holds of a backward layout's CTAs at its kernel's register bound (LayerNorm's
// 96-register kernel where backward_tight_layer_norm takes it). One count for the layouts and the
// prefetch rule.
constexpr int backward_warps_an_sm(const RowConfig& cfg, bool layer_norm, int elem_bytes, bool framed) {
  const bool tight = layer_norm && backward_tight_layer_norm(cfg, elem_bytes, framed);
  const int regs = backward_tile_regs(cfg.items, layer_norm, elem_bytes, tight);
  return ctas_an_sm_by_registers(regs, cfg.cta_threads) * cfg.cta_threads / 32;
}
inline constexpr int kBackwardLongRowItems = 8;  // fp32 storage only (kMaxBackwardItems)
inline constexpr int kLayerNormClusterItems = 2;  // 16-bit storage
inline constexpr int kLayerNormTwoChunkCluster = 4;  // the most CTAs of that layout (fp32 weight slots)
inline constexpr int kLayerNormMaxCluster = 8;    // 16-bit rows the 2-chunk tile would put on 512-thread CTAs
// A backward resident kernel's weight slots: fp32 factors, or 16-bit quads (half the shared
// memory, so more L1: docs/perf/norm.md#backward-and-l1; norm_bwd.cu, PackedWeightSlots).
enum class BwdWeightSlots { fp32, packed };
// Packed for 16-bit rows whose weight, if any, has their dtype (used by LayerNorm's 4-chunk tile
// only): the one rule for the layout (plan_on_device) and the kernel (resident_launch).
inline BwdWeightSlots backward_weight_slots(DType storage, bool has_weight, DType weight_dtype) {
  if (storage == DType::f32 || (has_weight && weight_dtype != storage)) return BwdWeightSlots::fp32;
  return BwdWeightSlots::packed;
}
// Whether a launch keeps packed slots: LayerNorm's typed 16-bit 4-chunk tile, rows on the
// 16-byte grid, where the slots allow it (built only there: backward_build_built).
// One rule for the launch and the CPU test of its shared memory.
constexpr bool backward_packs_weight(BwdWeightSlots slots, bool layer_norm, bool typed, bool framed, int elem_bytes,
                                     int items) {
  return slots == BwdWeightSlots::packed && layer_norm && typed && !framed && elem_bytes == 2 && items == kBackwardItems;
}
// A resident backward kernel: its tile and builds (norm_bwd.cu's template flags). typed: the
// typed loop, else the run-time-dtype loop; packed: 16-bit weight slots (PackedWeightSlots);
// ahead: row + 2 asked of L2 (backward_l2_prefetch); dres: RMSNorm's dresidual; narrow_dy: bf16
// dy beside fp32 rows (the fused fp32 residual stream's); framed: rows in their frame; tight:
// LayerNorm's 96-register 2-chunk kernel.
struct BwdBuild {
  int items = 0;
  bool typed = false, packed = false, ahead = false, dres = false, narrow_dy = false, framed = false, tight = false;
  constexpr bool operator==(const BwdBuild& o) const {
    return items == o.items && typed == o.typed && packed == o.packed && ahead == o.ahead && dres == o.dres &&
           narrow_dy == o.narrow_dy && framed == o.framed && tight == o.tight;
  }
};
// The kernels built, for storage of elem_bytes: one rule for norm_bwd.cu, which instantiates
// exactly these, and the CPU tests. The pipelined 2- and 4-chunk tiles: the run-time-dtype loop on
// the 4-chunk tile only; typed, rows in their frame plain; RMSNorm's dresidual (fp32 rows: also
// with bf16 dy), prefetched on the 4-chunk tile; LayerNorm's packed 16-bit 4-chunk tile, prefetched
// or not; its 96-register 16-bit 2-chunk kernel (never prefetched: its rows hold 18-20 warps an
// SM); the prefetch on the 4-chunk tile and the 16-bit 2-chunk tile. fp32's 8-chunk long-row
// tile: typed, RMSNorm's dresidual and bf16 dy.
constexpr bool backward_build_built(const BwdBuild& b, int elem_bytes, bool layer_norm) {
  const bool sixteen = elem_bytes == 2, four = b.items == kBackwardItems;
  if (b.items == kBackwardLongRowItems)
    return !sixteen && b.typed && !b.packed && !b.ahead && !b.framed && !b.tight && (!b.dres || !layer_norm) &&
           (!b.narrow_dy || b.dres);
  if (b.items != 2 && !four) return false;
  if (!b.typed) return four && !(b.packed || b.ahead || b.dres || b.narrow_dy || b.framed || b.tight);
  if (b.framed) return !(b.packed || b.ahead || b.dres || b.narrow_dy || b.tight);
  if (b.dres || b.narrow_dy)
    return !layer_norm && b.dres && (!b.narrow_dy || !sixteen) && !b.packed && !b.tight && (!b.ahead || four);
  if (b.packed) return layer_norm && sixteen && four && !b.tight;
  if (b.tight) return layer_norm && sixteen && !four && !b.ahead;
  return !b.ahead || four || sixteen;
}
// Whether a backward layout's tile has the typed loop's plain build (backward_build_built's rule):
// not rows of one chunk (N <= 8 16-bit, <= 4 fp32; the 1-chunk layout), too short for the typed
// loop's saving to show; they take the run-time-dtype loop's 4-chunk tile.
constexpr bool backward_typed_tile(int items, int elem_bytes, bool layer_norm) {
  BwdBuild b;
  b.items = items;
  b.typed = true;
  return backward_build_built(b, elem_bytes, layer_norm);
}
// The flag sets norm_bwd.cu walks to instantiate backward_build_built's kernels (bits in
// BwdBuild's order).
inline constexpr int kBwdBuildFlagSets = 1 << 7;
constexpr BwdBuild backward_build_of_flags(int items, int flags) {
  BwdBuild b;
  b.items = items;
  b.typed = flags & 1, b.packed = flags & 2, b.ahead = flags & 4, b.dres = flags & 8;
  b.narrow_dy = flags & 16, b.framed = flags & 32, b.tight = flags & 64;
  return b;
}
// What a launch asks for (resident_launch: its operands and the layout's rules)...
struct BwdBuildAsk {
  bool typed = false, framed = false, packed = false, ahead = false, dres = false, narrow_dy = false, tight = false;
};
// ...and the build it takes: rows in their frame the plain typed build; a dresidual (and bf16 dy)
// its own, prefetched on the 4-chunk tile; else the packed slots, the prefetch on the 4-chunk tile,
// LayerNorm's 96-register kernel, the prefetch on the 16-bit 2-chunk tile, in that order. A build
// that is not built (backward_build_built) is the launcher's internal error.
BwdBuild backward_build(int items, bool layer_norm, int elem_bytes, const BwdBuildAsk& ask);
// Whether a backward tile keeps its column sums in shared memory (slot sets) rather than in
// registers: past 2 chunks (norm_bwd.cu, SmemSums / RegisterSums).
constexpr bool backward_sums_in_smem(int items) { return items > 2; }
// Dynamic shared memory of a resident backward launch: the weight factors (a slot set of
// items chunks a thread, fp32, or 16-bit quads when `packed`), the column sums where the tile
// keeps them there (dw, and db for LayerNorm); with several rows a CTA and `sums` wanted, at least
// the rows' stage of the partial row (rows_per_cta x n floats, over the weight slots and, packed,
// the dw slots: emit_partial). One rule for the launch and the CPU tests.
std::size_t backward_smem_bytes(const RowConfig& cfg, bool layer_norm, int elem_bytes, bool packed, bool sums,
                                std::int64_t n);
// Static shared memory of the resident backward kernels at most (their reduction scratch;
// norm_bwd.cu asserts it).
inline constexpr std::size_t kBackwardStaticSmem = 8 * 1024 + 64;

// The typed loop's layout. Rows off the 16-byte grid whose operands share each row's frame (odd N, sliced views:
// prob.frames_vary) run in their frame, one chunk more. More warps an SM hide the row's load latency: a one-CTA
// 2-chunk row takes the 4-chunk tile where that holds 1.5x the warps an SM (fp32 rows: only in their frame, and
// where it holds any more), else a 16-bit one under 16 warps an SM a 2-CTA cluster where that holds 1.5x the
// warps. Warps are counted at each kernel's register bound (backward_warps_an_sm).
// (docs/perf/norm.md#backward-design)
RowConfig backward_row_config(RowProblem prob, bool layer_norm, BwdWeightSlots slots = BwdWeightSlots::fp32);
// The typed loop's grid on rows in their frame: a team keeps its first row's frame (its columns
// stay with its threads, and its column sums with them), so every row it takes must share it. A
// row's frame repeats every kFramePeriodRows rows (16 / elem_bytes divides 8), so the grid's rows
// a sweep (groups x rows_per_cta) are made a multiple of 8, unless one sweep takes every row.
inline constexpr int kFramePeriodRows = 8;
long long backward_frame_groups(long long groups, long long total_groups, int rows_per_cta);
// The run-time-dtype loop's layout (rows of mixed dtypes, rows whose operands' frames differ):
// choose_row_config's on the 4-chunk tile only (shorter rows too, part empty), streaming past 4
// chunks on 16 CTAs, none of the typed layouts' special cases (2-chunk tiles, the L2-prefetch
// build, the fp32 8-chunk tile). (docs/perf/norm.md#backward-design)
RowConfig backward_runtime_row_config(RowProblem prob);

// Whether RMSNorm's typed backward takes a dresidual on this layout: the 2-, 4- and fp32 8-chunk tiles have a kDres
// build (norm_bwd.cu); rows of one chunk take the run-time-dtype loop, slower where both exist.
// (docs/perf/norm.md#rmsnorm-backward-with-dresidual)
bool backward_typed_dresidual(const RowConfig& cfg);

// Whether a pipelined tile runs its kAhead build (L2 prefetch of row + 2; norm_bwd.cu, prefetch_row_l2), one row a
// CTA: where a CTA's one row of loads in flight does not cover HBM latency under load. On any Hopper, the 4-chunk
// tile's rows of >= 64 KiB an operand (the prefetch code alone slows shorter rows: hence a separate build). Where
// HBM feeds an SM more (`fast_hbm`: at least kAheadHbmPerSm, the H200, not the H100), also the 4-chunk and 16-bit
// 2-chunk tiles' shorter rows whose SM holds at most kAheadMaxWarps of the tile's warps (backward_warps_an_sm).
// Rows in their frame have no kAhead build. (docs/perf/norm.md#backward-design)
inline constexpr double kAheadHbmPerSm = 28e9;  // bytes/s: H100 SXM 25e9 (3.35 TB/s, 132 SMs), H200 36e9 (4.8)
inline constexpr int kAheadMaxWarps = 16;
bool backward_l2_prefetch(const RowConfig& cfg, bool layer_norm = false, int elem_bytes = 4, bool fast_hbm = false);

// Host launchers (the .cu files). `storage`: the dtype kept in registers. full_tile: forward_full_tile's
// answer (the launch keeps the usual form where the full one's registers would cost CTAs an SM).
void launch_norm_forward(const char* op, bool layer_norm, NormFwdMode mode, DType storage, const NormFwdParams& p,
                         const RowConfig& cfg, bool full_tile, bool wide_whole, cudaStream_t stream);
// The persistent backward over `groups` row groups, then the fixed-order column sums into dw / db.
// typed: x, dy, dx (and a kDres dresidual) of the storage dtype in whole aligned 16-byte chunks.
void launch_norm_backward(const char* op, bool layer_norm, bool typed, DType storage, const NormBwdParams& p,
                          const RowConfig& cfg, long long groups, void* dw, DType dw_dtype, void* db,
                          DType db_dtype, cudaStream_t stream);

// Row groups of the persistent backward grid: all resident at once (cluster-aware), at most
// `total`. `p` tells which column sums are kept (dw_partial / db_partial non-null) and n.
long long norm_backward_groups(const char* op, bool layer_norm, bool typed, DType storage, const RowConfig& cfg,
                               const NormBwdParams& p, long long total, int sm_count);

}  // namespace tachyon::detail

#pragma once
// Kernel parameters of the norm family, shared by the host entry points (norm.cpp) and the
// kernels (norm_fwd.cu, norm_bwd.cu). Plain data: passed by value as __grid_constant__.
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
};

// The forward kernel's build for a call (norm_fwd.cu has the details):
//  whole   - every operand of the storage dtype, rows and vectors of whole aligned 16-byte
//            chunks, weight (and LayerNorm's bias) present, no residual;
//  typed   - every operand of the storage dtype, anything else;
//  generic - any mix of dtypes;
//  whole_cluster - the whole build bounded to 64 registers (two 512-thread CTAs per SM), for
//            rows that take a cluster: there CTAs must overlap one another's exchanges;
//  fused_grouped - the typed fused residual with its loads grouped ahead of its residual_out
//            stores (norm_fwd.cu, load_fused_grouped: x for every chunk, then the residual two
//            chunks at a time), bounded to 64 registers, for the rows where it measured ahead
//            (fused_forward_build);
//  fused_grouped_single - the same with the residual one chunk at a time, for fp16 one-CTA
//            rows (fused_forward_build; built for fp16 only).
enum class NormFwdMode { generic, typed, whole, whole_cluster, fused_grouped, fused_grouped_single };

// The grouped fused builds and the residual chunks each keeps in flight.
constexpr bool is_fused_grouped(NormFwdMode m) {
  return m == NormFwdMode::fused_grouped || m == NormFwdMode::fused_grouped_single;
}
constexpr int fused_load_group(NormFwdMode m) { return m == NormFwdMode::fused_grouped_single ? 1 : 2; }

// The build for a whole-chunk row once its config is known: whole_cluster (bounded to 64
// registers) for cluster rows where the unbounded build leaves too few CTAs per SM to overlap
// one another's exchanges: LayerNorm (more registers and work a row), the widest cluster,
// 512-thread CTAs. Not for RMSNorm fp16, whose bounded tile spills 52 bytes (bf16 12):
// 8192 x 262144 0.791 -> 0.918 x copy unbounded, its other cluster rows within 0.003
// (build-snap/runG3.sh). Any other mode or config: unchanged. A pure function (CPU tests);
// measurements in norm.cpp and docs/perf.md.
NormFwdMode forward_mode_for_config(NormFwdMode mode, const RowConfig& cfg, bool layer_norm, DType storage,
                                    int max_cluster);

// The fused residual RMSNorm's build and layout (`fused`; typed, 8-chunk tile) once its config
// is known, where each measured ahead of the typed build on the default layout (H100, x copy,
// A/B in one run, build-snap/runG1.sh .. runG3.sh):
//  - fp16: fused_grouped on every row (its typed tile is bounded too, and spills): 4096 /
//    32768 / 131072 / 262144 0.861 / 0.869 / 0.829 / 0.803 -> 0.929 / 0.956 / 0.937 / 0.892;
//    on one-CTA rows fused_grouped_single (spill 76 -> 0 bytes), build-snap/runN4.sh and
//    runN5.sh: 2048 / 4096 / 8192 / 16384 / 32768 0.919 / 0.955 / 0.958 / 0.957 / 0.956 ->
//    0.950 / 0.991 / 0.992 / 0.992 / 0.975, 1024 ties; on clusters it loses (65536 / 131072 /
//    262144 0.961 / 0.938 / 0.917 -> 0.936 / 0.915 / 0.891), and so it does for bf16 and fp32
//    one-CTA rows (bf16 2048 0.977 -> 0.930, 4096 0.981 -> 0.974; fp32 4096 0.962 -> 0.943);
//  - bf16 rows on 2-4 CTAs of 512 threads: 256-thread CTAs on twice the cluster (four CTAs an
//    SM instead of two), typed: 65536 / 131072 0.940 / 0.912 -> 0.978 / 0.955 (grouped on
//    the default layout: 0.958 / 0.937); one-CTA rows and 262144 lose or tie either way;
//  - fp32 rows on 8 CTAs (131072): fused_grouped, 0.935 -> 0.945; 4 and 16 CTAs lose or tie;
//  - rows that fill the tile with every operand whole (`full_tile`: forward_full_tile for the
//    grouped build), whose grouped build then runs its full-tile form (spilling less: fp16 76
//    -> 0 bytes, bf16 12 -> 4, fp32 8 -> 0): fp32 on 16 CTAs and bf16 on clusters (after the
//    doubling below) take it too. Measured (x copy, build-snap/runO1.sh, runO2.sh, two runs):
//    fp32 131072 / 262144 0.951 / 0.923-0.925 -> 0.988-0.991 / 0.985-0.987; bf16 65536 /
//    131072 / 262144 0.976-0.983 / 0.968-0.970 / 0.933-0.940 -> 0.987-0.988 / 0.979-0.982 /
//    0.978-0.980 (on the grouped build without the doubling: 0.976-0.978 / 0.973-0.975 /
//    0.975-0.978); fp16 4096 / 65536 / 131072 / 262144 0.957 / 0.961 / 0.936-0.938 / 0.918-0.919
//    -> 0.974 / 0.985-0.999 / 0.982-0.985 / 0.989-0.990. Not bf16 or fp32 one-CTA rows (the
//    typed build's full form lost there; has_full_form);
//  - rows on 8+ CTAs: a shared-memory carveout preference for the launch (the driver's choice
//    otherwise), 100 % for the typed build and 75 % for the grouped one (runG6.sh, two runs
//    where repeated): typed bf16 / fp32 262144 0.900 / 0.888 -> 0.940 / 0.925 (75 %: 0.911 /
//    0.902), bf16 131072 0.963 -> 0.971; grouped fp32 131072 0.944 -> 0.954, fp16 262144
//    0.884 -> 0.918 (100 %: 0.914 / 0.876, under the default). Not understood: the grouped
//    build spills (8-76 bytes), and spills live in L1, which 100 % leaves at 28 KiB; the same
//    preference cost the other row kernels up to 10 % (runG5.sh), so it is set here only.
// Any other call: unchanged. A pure function (CPU tests).
struct FwdBuild {
  NormFwdMode mode;
  RowConfig cfg;
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

// The builds with a full-tile form (norm_fwd.cu, norm_fwd_row's kFull): the whole builds and
// the fused residual's grouped builds (RMSNorm's). Not the typed build: its full form (bounded
// to 64 registers, or 69-76 unbounded, costing CTAs an SM) measured -1.5 % on bf16 one-CTA rows
// and tied on fp32 ones (x copy, build-snap/runO1.sh, runO2.sh); its cluster rows do better on
// the grouped build's full form (fused_forward_build).
constexpr bool has_full_form(NormFwdMode m, bool layer_norm) {
  return m == NormFwdMode::whole || m == NormFwdMode::whole_cluster || (!layer_norm && is_fused_grouped(m));
}
// The tiles built in the full form: the 8-chunk tile of those builds, and the whole builds'
// 4-chunk tile (one-CTA rows: 16-bit 1024 and 4096, fp32 2048).
inline constexpr int kFullSmallItems = 4;
constexpr bool full_form_built(NormFwdMode m, bool layer_norm, int items) {
  const bool whole = m == NormFwdMode::whole || m == NormFwdMode::whole_cluster;
  return (items == kBoundedForwardItems && has_full_form(m, layer_norm)) || (items == kFullSmallItems && whole);
}

// Whether the forward's launch asks for the load-balancing cluster scheduling policy
// (RowConfig::cluster_load_balancing): rows on 16-CTA clusters. The default (spread) policy puts
// a 16-CTA cluster on 16 SMs of one GPC, so such rows run on 112 of the H100's 132 SMs at any
// occupancy (thirteenth session); with load balancing the hardware may put two of its CTAs on
// one SM (these launches hold two CTAs an SM), and the forward's clusters, one a row group,
// reach more of the GPU. Measured (x copy, two passes, default / load balancing,
// build-snap/runP10.sh): LayerNorm fp32 262144 0.927 / 0.944-0.945, RMSNorm fp32 262144 0.996-0.997
// / 0.998, fused residual fp32 262144 0.985-0.986 / 0.985-0.986. On 8-CTA clusters it was mixed
// (LayerNorm 131072 bf16 0.980 / 0.988, fp32 0.995 / 0.989): not taken there. The backward's
// persistent grid (one CTA an SM on the 16-bit tiles) placed the same 7 clusters either way and
// measured the same. Pure (CPU tests).
bool forward_cluster_load_balancing(const RowConfig& cfg);

// The RMSNorm forward's whole build (bf16, fp32; no residual) on rows of 1024, 2048 or 4096
// chunks (bf16 8192 / 16384 / 32768, fp32 4096 / 8192 / 16384) that choose_row_config lays on one
// CTA of 128 or 256 threads or a 2-CTA cluster: one CTA of 512 threads, 2 / 4 / 8 chunks a
// thread. Measured (µs, x copy; XCFG override, build-snap/runW15.sh, two passes, M = 16384 /
// 32768): fp32 4096 183.3 / 360.1-360.4 -> 181.7-181.9 / 357.2-358.7, fp32 8192 equal, fp32
// 16384 720.7 / 1437 -> 716.4 / 1427 (one CTA an SM at 68 registers, still ahead), bf16 8192
// 182.7 / 360.4 -> 181.7-181.8 / 356.9-357.0, bf16 16384 360.0 / 714.4-714.8 -> 356.8-357.0 /
// 707.9-708.1, bf16 32768 1436 -> 1430; torch.compile at M = 16384 in the same session: 181.6-181.9
// (fp32 4096), 712.8 (fp32 16384), 181.4-182.1 (bf16 8192), 356.2-357.0 (bf16 16384). Other
// rows and ops keep choose_row_config's layout (unmeasured here). Pure (CPU tests).
RowConfig forward_wide_cta(const RowConfig& cfg, NormFwdMode mode, bool layer_norm, bool fused, DType storage);

// Whether a row fills its tile exactly (n == items x threads_per_row x cluster x vec: every
// chunk of every thread inside the row), for a tile built in the full form (full_form_built)
// whose operands are all whole aligned 16-byte chunks (`whole_operands`: implied by the whole
// builds; for the grouped ones every row operand and the weight, present): then the kernel's
// full-tile form runs, whose chunk loops carry no row-end or alignment tests (norm_fwd.cu).
// Rows of a power of two do; 5120 or 7168 bf16 do not (their tiles have empty chunks) and take
// the usual form.
// The launch also keeps the usual form where the full one's registers would cost CTAs an SM
// (norm_fwd.cu). Measured as landed (x copy, build-snap/runN11.sh, runN12.sh): LayerNorm fp32
// 4096 / 131072 / 262144 0.987 / 0.964-0.966 / 0.897-0.900 -> 1.000 / 0.995 / 0.926-0.930, bf16
// 262144 0.944-0.946 -> 0.955-0.956, fp16 16384 0.983 -> 0.998-1.000, RMSNorm fp32 / bf16 262144
// 0.987 / 0.990 -> 0.993-0.996 / 1.001, other RMSNorm rows within 0.3 %. Pure (CPU tests).
bool forward_full_tile(const RowConfig& cfg, NormFwdMode mode, bool layer_norm, bool whole_operands, std::int64_t n);

// Chunk slots of shared memory a resident forward kernel stages per operand (weight, bias)
// and thread: the whole tile, except in LayerNorm's bounded build (two 512-thread CTAs per
// SM), whose weight and bias tiles (2 x 64 KiB a CTA at 8 chunks) would not fit beside the
// other CTA's: half of them, reused along the row (norm_fwd.cu, write_row_whole).
__host__ __device__ constexpr int forward_stage_window(int items, bool layer_norm, NormFwdMode build) {
  return layer_norm && build == NormFwdMode::whole_cluster && items > 1 ? items / 2 : items;
}

// Dynamic shared memory of a resident forward launch for its staged weight and bias, or 0
// (the kernel reads them from global memory). `build` as forward_kernel_build gives it;
// weight_bytes / bias_bytes: element bytes of the operands as staged (0: absent). Staged for
// cluster rows, and for the windowed build at any cluster size, up to 64 KiB. Pure (CPU
// tests); the measurements that set it are in norm.cpp.
std::size_t forward_stage_bytes(const RowConfig& cfg, NormFwdMode build, bool layer_norm, int weight_bytes,
                                int bias_bytes);

// Largest register tile (chunks per thread) the kernels are built for, by storage dtype size.
int norm_forward_max_items(int elem_bytes, bool layer_norm, NormFwdMode mode);
// Registers per thread of the resident forward kernel at the 8-chunk target tile (for
// RowProblem::regs_per_thread), from cudaFuncGetAttributes, cached.
int norm_forward_regs(const char* op, bool layer_norm, NormFwdMode mode, DType storage);

// The backward keeps x and dy in registers, 4 chunks a thread (2 while one CTA holds the row).
// fp32 rows that 4 chunks on a 16-CTA cluster cannot hold (past 131072) take 8 before the
// streaming kernel, which reads x and dy twice (fp32 262144: 0.41 -> 0.88 x copy). Below that
// the 4-chunk tile wins since its kernel keeps the next row's loads in flight (the 8-chunk one
// has no registers for that): RMSNorm fp32 32k / 65k / 131k 0.910 / 0.896 / 0.876 at 8 chunks
// -> 0.934 / 0.909 / 0.915, LayerNorm 0.868 / 0.834 / 0.787 -> 0.907 / 0.886 / 0.877 (16384:
// 0.928 / 0.905 both ways). Pure (CPU tests); `prob` as row_problem gives it.
// LayerNorm's 16-bit cluster rows take the 2-chunk tile on twice the cluster where that holds
// the row (16384..131072): under 80 registers three 256-thread CTAs share an SM instead of
// two, which hides more of the latency of its three shared-memory slot sets (weight factors,
// dw, db; ncu's top stall). Measured (x copy, bf16, one build, build-snap/runF6.sh): 16k / 32k /
// 65k / 131k 0.872 / 0.851 / 0.839 / 0.783 -> 0.908 / 0.887 / 0.874 / 0.815. RMSNorm (one
// sum set) loses that way (bf16 65k / 131k 0.924 / 0.923 -> 0.904 / 0.883), and so do fp32 rows.
// Where the 2-chunk tile would need 512-thread CTAs (131072: 16 of them, one an SM at 80
// registers), the 4-chunk tile on clusters of at most 8 CTAs instead (4 x 512 x 8; the default
// 4-chunk layout is 4 x 256 x 16): 0.755 / 0.758 -> 0.818 / 0.813 (two A/B pairs in one run,
// build-snap/runG9.sh). Capping the other lengths at 8 (or 4) CTAs lost 3-5 %, RMSNorm ties.
inline constexpr int kBackwardItems = 4;
inline constexpr int kBackwardLongRowItems = 8;  // fp32 storage only (kMaxBackwardItems)
inline constexpr int kLayerNormClusterItems = 2;  // 16-bit storage
inline constexpr int kLayerNormMaxCluster = 8;    // 16-bit rows the 2-chunk tile would put on 512-thread CTAs
// The weight slots a backward call's resident kernel keeps: fp32 factors, or the packed build
// (norm_bwd.cu, kPackableWeight: typed 16-bit LayerNorm rows whose weight, if any, has the rows'
// dtype), which some layouts need (backward_row_config).
enum class BwdWeightSlots { fp32, packed };
// The slots of the typed loop for rows of `storage` and a weight (if has_weight) of
// weight_dtype: packed for 16-bit rows whose weight, if any, has their dtype. The one rule
// for both the layout (plan_backward) and the kernel (norm_bwd.cu, resident_launch), which
// must agree. (Only LayerNorm's 4-chunk tile has a packed build; other tiles ignore it.)
inline BwdWeightSlots backward_weight_slots(DType storage, bool has_weight, DType weight_dtype) {
  if (storage == DType::f32 || (has_weight && weight_dtype != storage)) return BwdWeightSlots::fp32;
  return BwdWeightSlots::packed;
}
RowConfig backward_row_config(RowProblem prob, bool layer_norm, BwdWeightSlots slots = BwdWeightSlots::fp32);

// At most this many CTAs an SM in the backward's persistent grid (0: as many as fit). One-CTA
// rows on the 2-chunk tile of 256 threads (16-bit 4096) fit three CTAs an SM at 80 registers;
// two run faster. Measured (x copy, 32768 x 4096, build-snap/runJ7.sh, runJ10.sh): LayerNorm
// bf16 / fp16 0.888 / 0.884 -> 0.911 / 0.913, RMSNorm bf16 0.918 -> 0.942. Why is not
// established: a smaller carveout with the cap (more L1) measured the same, and so did two
// CTAs an SM reached by adding shared memory instead (runJ6.sh). Cluster rows lose with the
// cap (LayerNorm bf16 16384 0.903 -> 0.796: fewer clusters than fit). Pure (CPU tests).
int backward_ctas_per_sm(const RowConfig& cfg);

// Whether RMSNorm's typed backward loop takes a dresidual on this layout: the pipelined tiles (2
// and 4 chunks a thread) and the fp32 8-chunk long-row tile have its build (norm_bwd.cu, kDres),
// loading the row's dresidual chunks before the row's exchange (the long-row tile two of its
// eight, kLongRowEarlyDres). The 1-chunk tile does not: with a dresidual those rows take the
// run-time-dtype loop. Measured (x copy, H100, build-snap/runW1.sh, two passes; N = 4096 / 16384
// / 65536 / 262144): bf16 0.71 / 0.81 / 0.78 / 0.73 -> 0.91 / 0.96 / 0.96 / 0.98, fp16 0.71 / 0.81 /
// 0.75 / 0.68 -> 0.93 / 0.95-0.96 / 0.96 / 0.98, fp32 4096 ... 131072 0.76-0.85 -> 0.95-0.99, fp32
// 262144 0.806 -> 0.876 (runW4.sh). Pure (CPU tests).
bool backward_typed_dresidual(const RowConfig& cfg);

// Whether the backward runs the 4-chunk tile's kAhead build, which asks L2 for row + 2 while
// row + 1 is loading (norm_bwd.cu, prefetch_row_l2): rows of at least 64 KiB an operand (16-bit
// 32768, fp32 16384 and up), one row a CTA. There a CTA's one row of loads in flight does not
// cover the latency of HBM under load (the 16-CTA rows of 262144 run on 112 SMs). Measured (x copy,
// HEAD against kAhead in one run, build-snap/runP6.sh, two passes; 32768 / 65536 / 131072 /
// 262144): LayerNorm bf16 0.92 / 0.90 / 0.90 / 0.84-0.86 -> 0.96-0.97 / 0.98 / 1.01 / 0.94,
// fp16 0.91 / 0.88-0.91 / 0.91-0.92 / 0.87-0.90 -> 0.96 / 0.98 / 1.01 / 0.94, RMSNorm bf16
// 0.92 / 0.92 / 0.92 / 0.92 -> 0.94-0.95 / 0.94 / 0.94 / 0.98, LayerNorm fp32 16384 / 65536 /
// 131072 0.93 / 0.93 / 0.94 -> 0.95 / 0.96 / 0.98, bf16 with an fp32 weight 131072 / 262144
// 0.79-0.82 / 0.78 -> 0.96 / 0.91. Shorter rows lost or tied with it (RMSNorm bf16 16384
// 0.95 -> 0.93-0.945, fp32 8192 0.963 -> 0.954; with the prefetch's code in the kernel, rows
// of 256..1024 on the same tile lost 1-3 %: hence a build, not a run-time switch). In the
// 2-chunk tile (80 registers) the address math spilled (LayerNorm fp16 4096 0.91 -> 0.78).
// Pure (CPU tests).
bool backward_l2_prefetch(const RowConfig& cfg);

// Host launchers (defined in the .cu files). `storage` is the dtype kept in registers.
// full_tile: forward_full_tile's answer (the launch keeps the usual form where the full one's
// registers would cost CTAs an SM).
void launch_norm_forward(const char* op, bool layer_norm, NormFwdMode mode, DType storage, const NormFwdParams& p,
                         const RowConfig& cfg, bool full_tile, cudaStream_t stream);
// Runs the backward over `groups` row groups (persistent), then, when dw/db partials are
// requested, the fixed-order column sum into dw / db.
// typed: x, dy and dx rows of whole aligned 16-byte chunks of the storage dtype (the weight of
// any dtype), no dresidual.
void launch_norm_backward(const char* op, bool layer_norm, bool typed, DType storage, const NormBwdParams& p,
                          const RowConfig& cfg, long long groups, void* dw, DType dw_dtype, void* db,
                          DType db_dtype, cudaStream_t stream);

// CTAs of the backward kernel that fit on one SM (occupancy), for sizing its persistent grid.
// Row groups of the persistent backward grid: all resident at once (cluster-aware), at most
// `total`. `p` tells which column sums are kept (dw_partial / db_partial non-null) and n.
long long norm_backward_groups(const char* op, bool layer_norm, bool typed, DType storage, const RowConfig& cfg,
                               const NormBwdParams& p, long long total, int sm_count);

}  // namespace tachyon::detail

#pragma once
// Shape-aware GEMM configuration: a pure host function of the problem and the device
// limits, with its thresholds in one place and unit tests in tests/cpu/gemm_config_test.cpp.
#include <cstddef>
#include <cstdint>
#include <string>

namespace tachyon::detail::gemm {

// The kernel's fixed geometry: 2 consumer warpgroups x 64 rows, K sliced by 64 elements
// (128 bytes of bf16/f16: one 128-byte swizzle row).
inline constexpr int kBlockM = 128;
inline constexpr int kBlockK = 64;
inline constexpr int kThreads = 384;  // producer warpgroup + 2 consumer warpgroups
inline constexpr int kMaxStages = 8;
// Epilogue staging: per consumer warpgroup two 64-row x 128-byte chunks (8 KiB each), so
// one chunk is being filled while the TMA store of the previous one drains.
inline constexpr std::size_t kEpilogueBytes = 2 * 2 * 8192;
// Rows of the output's TMA box: one warp's 16 rows of a chunk, so each warp stores its own.
inline constexpr int kStoreRows = 16;
inline constexpr std::size_t kBarrierBytes = 256;   // full[] + empty[] mbarriers, kMaxStages each
inline constexpr std::size_t kAlignSlack = 1024;    // dynamic smem is re-aligned to 1024 B

enum class GemmPath : std::uint8_t {
  tma_wgmma,  // persistent warp-specialised TMA + wgmma kernel
  fallback,   // plain loads + fp32 FMA tiles: any stride, any alignment, K = 0
};

struct GemmProblem {
  std::int64_t m = 0, n = 0, k = 0;
  bool b_k_major = true;  // B stored (N, K) (a Linear weight); false: (K, N)
  // What TMA can describe: base 16-byte aligned, row stride a multiple of 16 bytes.
  bool a_tma = true, b_tma = true, d_tma = true;
  int out_bytes = 2;  // 2 (bf16/f16) or 4 (f32)
  int sm_count = 132;
  std::size_t smem_per_block = 232448;  // opt-in maximum (227 KiB on H100)
};

struct GemmConfig {
  GemmPath path = GemmPath::tma_wgmma;
  int block_m = kBlockM, block_n = 256, block_k = kBlockK;
  int stages = 4;
  int cluster_m = 1;      // CTAs per cluster along M; B is multicast across them
  bool swap_ab = false;   // compute D^T = B A^T (the kernel's M is the problem's N)
  bool tma_store = true;  // epilogue through smem + TMA store; else direct stores
  int raster_group = 8;   // unit rows per raster group (see scheduler.h)
  bool snake = false;     // serpentine order within and across raster groups
  int ctas = 0;           // persistent grid (a multiple of cluster_m)
  std::size_t smem_bytes = 0;
  // The kernel's view after a swap.
  std::int64_t kernel_m = 0, kernel_n = 0;
  int tiles_m = 0, tiles_n = 0, units = 0;

  std::string str() const;  // "tma 128x256x64 s4 c2 g8 ctas128" / "fallback"
};

// Bytes of dynamic shared memory for a tile width and stage count.
std::size_t gemm_smem_bytes(int block_n, int stages);
// The most stages that fit (capped at kMaxStages), 0 if not even 2 fit.
int gemm_max_stages(int block_n, std::size_t smem_per_block);
// Persistent grid for `units` cluster units: as many clusters as fit at once, reduced so that
// every wave is equally full (1024 units on 66 cluster slots: 16 waves of 64 -> 128 CTAs,
// which measured faster than 132 at 8192^3).
int gemm_persistent_ctas(std::int64_t units, int cluster_m, int max_clusters);

// Optional overrides for tuning (set from TACHYON_GEMM_* environment variables by gemm.cpp).
struct GemmOverrides {
  int ctas = 0;          // fixed persistent grid
  int raster_group = 0;  // raster group
  int block_n = 0;       // 64, 128 or 256
  int cluster_m = 0;     // 1 or 2
  int stages = 0;        // fewer ring stages than fit (>= 2)
  int order = 0;         // 1: serpentine raster (snake), 2: the plain raster
};

GemmConfig choose_gemm_config(const GemmProblem& p, const GemmOverrides& o = {});

}  // namespace tachyon::detail::gemm

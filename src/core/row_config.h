#pragma once
// How a row-wise kernel (norms, softmax, cross-entropy) lays a row of N elements over
// threads: a pure function of the problem and a few device limits, covered by CPU tests.
//
// A row is cut into chunks of 16 bytes of its storage dtype (vec elements). Each thread keeps
// `items` chunks in registers, so the whole row is read from HBM once. Short rows share a
// warp (threads_per_row < 32, several rows per CTA); long rows take several warps, then
// several CTAs of a thread-block cluster, which combine their partial results through
// distributed shared memory. Rows too long even for a 16-CTA cluster take the streaming
// path (items == 0): the row is read twice (three times for LayerNorm), documented.
#include <cstdint>
#include <string>

namespace tachyon::detail {

// The register tiles the kernels are instantiated for (chunks per thread).
inline constexpr int kRowItems[] = {1, 2, 4, 8, 12, 16};
inline constexpr int kMaxRowItems = 16;
inline constexpr int kMaxRowThreads = 512;  // per CTA; kernels are built with this bound
inline constexpr int kRegistersPerSm = 65536;  // sm_90's register file, 32-bit registers
// CTAs of `threads` threads at `regs` registers a thread that an SM's register file holds (the
// limit the row layouts meet first). A warp's registers (32 x regs, in units of 256) come from one
// of the SM's four 16 K partitions, so the SM holds 4 x (16 K / a warp's) warps: at 96 registers 20,
// at 108 16 (docs/perf.md#register-partitions).
inline constexpr int kRegisterPartitions = 4;
constexpr int ctas_an_sm_by_registers(int regs, int threads) {
  const int per_warp = (regs * 32 + 255) / 256 * 256;
  const int warps = kRegistersPerSm / kRegisterPartitions / per_warp * kRegisterPartitions;
  return warps / ((threads + 31) / 32);
}

struct RowProblem {
  std::int64_t n = 0;          // row length in elements
  int elem_bytes = 2;          // storage dtype of the row kept in registers
  bool frames_vary = false;    // some row starts are not 16-byte aligned
  int max_cluster = 16;        // 1 where clusters are unavailable
  int max_items = kMaxRowItems;  // lower for kernels that keep more per chunk (backward)
  // Registers per thread of the kernel at the target tile (0: unknown). When two 512-thread
  // CTAs fit on an SM (<= 64), rows past one 256-thread CTA take 512-thread CTAs and the
  // smallest cluster that holds them: the same threads per SM, half the CTAs in the exchange
  // (~2 % faster at 128-256K columns; a kernel at 78 registers would drop to one CTA per SM
  // that way and lose a quarter). Past 64 registers, rows of 257..512 chunks take the 4-item
  // tile (see choose_row_config). narrow_ctas / four_item_rows ask for both whatever the count.
  int regs_per_thread = 0;
  // Chunks per thread the kernel prefers while one CTA holds the row (0: the default 8). The
  // backward, which keeps x, dy and column sums per chunk, takes 2.
  int single_cta_items = 0;
  // The smallest tile the kernels are built for: shorter rows take it, part empty (the norm
  // forward's and the norm backward's run-time-dtype loop's, 4 chunks: rows of one or two
  // chunks are not worth kernels of their own).
  int min_items = 1;
  // Layouts of a kernel past 64 registers whatever its count (the norm forward, whose CTAs all
  // wait at each row's reduction, gains from more and smaller CTAs an SM: up to 8-14 % at
  // 16-128K columns on the H200; docs/perf/norm.md#row-layouts): 256-thread CTAs and clusters
  // before 512-thread CTAs, and rows of 257..512 chunks on the 4-item tile.
  bool narrow_ctas = false;
  bool four_item_rows = false;
  // With four_item_rows: rows a 4-chunk team of whole warps fills exactly (384 chunks) take that
  // team, one row a CTA (the norm forward's full-tile form needs the tile filled).
  bool four_item_exact = false;
};

struct RowConfig {
  int vec = 0;              // elements per chunk
  std::int64_t chunks = 0;  // chunks a row's frame can span
  int items = 0;            // chunks per thread (0: streaming)
  int threads_per_row = 0;  // per CTA
  int rows_per_cta = 0;
  int cta_threads = 0;
  int cluster_size = 1;
  // Shared-memory carveout preference of the launch, in percent of the SM's unified L1 /
  // shared memory (cudaLaunchAttributePreferredSharedMemoryCarveout); -1: the driver's choice.
  int smem_carveout = -1;
  // Cluster scheduling policy of the launch: load balancing (the hardware may place several
  // CTAs of one cluster on one SM) instead of the default spread (cudaLaunchAttribute-
  // ClusterSchedulingPolicyPreference).
  bool cluster_load_balancing = false;
  // Launched programmatically (core/launch.h): the kernel waits for the previous one where it
  // reads that one's output (cross-entropy's mean, after the target count).
  bool programmatic = false;
  bool streaming() const { return items == 0; }
  std::string str() const;
};

// 16-byte chunks a row spans (one more where its frame may shift).
std::int64_t row_chunks(const RowProblem& p);
RowConfig choose_row_config(const RowProblem& p);

// A streaming layout (items = 0) for kernels that need only a long row's statistics, not
// the row itself (cross-entropy's loss without the gradient): a CTA of up to 256 threads per
// row walks it with several loads in flight, no register tile. Clusters only to give `rows`
// rows enough CTAs to fill `sm_count` SMs, never below 8 chunks per thread.
RowConfig choose_stream_config(const RowProblem& p, std::int64_t rows, int sm_count);

// Smallest instantiated item count >= want (want <= kMaxRowItems).
int snap_items(int want);

}  // namespace tachyon::detail

#include "core/row_config.h"

#include <algorithm>
#include <iterator>

#include "core/host_device.h"
#include "core/variants.h"

namespace tachyon::detail {

namespace {
int next_pow2(std::int64_t v) {
  int p = 1;
  while (p < v) p <<= 1;
  return p;
}
int round_up32(std::int64_t v) { return static_cast<int>(ceil_div(v, 32) * 32); }
}  // namespace

int snap_items(int want) {
  for (int i : kRowItems)
    if (i >= want) return i;
  return kMaxRowItems;
}

std::string RowConfig::str() const {
  return "vec=" + std::to_string(vec) + " chunks=" + std::to_string(chunks) + " items=" + std::to_string(items) +
         " threads_per_row=" + std::to_string(threads_per_row) + " rows_per_cta=" + std::to_string(rows_per_cta) +
         " cluster=" + std::to_string(cluster_size) +
         (smem_carveout >= 0 ? " carveout=" + std::to_string(smem_carveout) : std::string()) +
         (cluster_load_balancing ? " load_balancing" : "");
}

std::int64_t row_chunks(const RowProblem& p) {
  const int vec = 16 / p.elem_bytes;
  // A shifted frame can need one chunk more than the aligned one.
  return std::max<std::int64_t>(1, ceil_div(p.n + (p.frames_vary ? vec - 1 : 0), vec));
}

RowConfig choose_row_config(const RowProblem& p) {
  RowConfig c;
  c.vec = 16 / p.elem_bytes;
  c.chunks = row_chunks(p);
  const int max_items = std::min(p.max_items, kMaxRowItems);
  // Chunks per thread we aim for: 8 keeps 128 bytes of loads in flight per thread at about
  // 32 registers of row data, leaving room for 2+ CTAs per SM to overlap load and reduce.
  const int target = std::min(8, max_items);

  const int short_items = std::min(4, max_items);
  if (c.chunks <= 32 * short_items) {
    // Short rows: a power-of-two slice of a warp per row, ~4 chunks per thread; CTAs of 128
    // threads hold many rows, whose reductions stay inside the warp.
    c.threads_per_row = std::min(32, next_pow2(ceil_div(c.chunks, short_items)));
    c.items = snap_items(static_cast<int>(ceil_div(c.chunks, c.threads_per_row)));
    c.items = std::max(c.items, snap_items(std::min(p.min_items, max_items)));
    c.rows_per_cta = 128 / c.threads_per_row;
    c.cta_threads = 128;
    return c;
  }

  // Kernels past 64 registers at the 8-item tile fit only 6 CTAs of 128 threads per SM. Rows
  // of 257..512 chunks (bf16 N 2k..4k) then take 4 items on 128 threads, two rows per CTA: the
  // 4-item kernel is back under 64 registers and the SM holds 1024 threads: ~7 % faster for
  // LayerNorm bf16 at 4096 columns (78 registers then) than 8 items on 64 threads (and than 4
  // rows a CTA); at 16384 columns the same trade lost, hence the upper bound. The norm forward
  // asks for it at any register count (four_item_rows: at 64, H100 LayerNorm 4096 -2.3 % without).
  if ((p.regs_per_thread > 64 || p.four_item_rows) && target == 8 && c.chunks > 32 * 8 && c.chunks <= 128 * 4 &&
      variant_enabled(Variant::four_item_rows)) {
    c.items = 4;
    c.threads_per_row = 128;
    c.rows_per_cta = 2;
    // four_item_exact (RowProblem): LayerNorm bf16 3072 +22 % on the H200 (docs/perf/norm.md#row-layouts).
    if (p.four_item_exact && c.chunks % (4 * 32) == 0 && c.chunks < 512 && variant_enabled(Variant::four_item_exact)) {
      c.threads_per_row = static_cast<int>(c.chunks / 4);
      c.rows_per_cta = 1;
    }
    c.cta_threads = c.threads_per_row * c.rows_per_cta;
    return c;
  }

  // Kernels with a smaller preferred tile while one CTA holds the row (the backward): more
  // threads, fewer chunks each: 2-4 % faster for the RMSNorm and LayerNorm backward (bf16,
  // 4-8K columns). Longer rows keep the options below.
  if (p.single_cta_items > 0 &&
      c.chunks <= static_cast<std::int64_t>(kMaxRowThreads) * std::min(p.single_cta_items, max_items)) {
    const int items = snap_items(std::min(p.single_cta_items, max_items));
    c.threads_per_row = round_up32(ceil_div(c.chunks, static_cast<std::int64_t>(items)));
    c.items = snap_items(static_cast<int>(ceil_div(c.chunks, static_cast<std::int64_t>(c.threads_per_row))));
    c.rows_per_cta = std::max(1, 128 / c.threads_per_row);
    c.cta_threads = c.threads_per_row * c.rows_per_cta;
    return c;
  }

  // Long rows: warps, then clusters. Options in order of preference; the first that holds
  // the row wins. (items per thread, threads per CTA at most)
  // When two 512-thread CTAs fit an SM, 512-thread CTAs come first: half the CTAs per row in
  // the cluster exchange at the same threads per SM: 1-2 % faster for softmax, RMSNorm and
  // the fused-gradient cross-entropy at 32-128K columns (bf16, H100), within noise elsewhere. The
  // cross-entropy forward narrows them where they leave two CTAs an SM (cross_entropy_row_config).
  struct Option { int items, max_threads, max_cluster; };
  const bool wide_ok = !p.narrow_ctas && p.regs_per_thread > 0 && ctas_an_sm_by_registers(p.regs_per_thread, 512) >= 2;
  const Option wide_first[] = {{target, 512, 16}, {max_items, 512, 16}};
  const Option narrow_first[] = {{target, 256, 16}, {target, 512, 16}, {max_items, 256, 16}, {max_items, 512, 16}};
  const Option* begin = wide_ok ? wide_first : narrow_first;
  const Option* end = wide_ok ? std::end(wide_first) : std::end(narrow_first);
  for (const Option* it = begin; it != end; ++it) {
    const Option& o = *it;
    for (int cluster = 1; cluster <= std::min(p.max_cluster, o.max_cluster); cluster *= 2) {
      std::int64_t threads = ceil_div(c.chunks, static_cast<std::int64_t>(cluster) * o.items);
      if (threads > o.max_threads) continue;
      c.cluster_size = cluster;
      c.threads_per_row = round_up32(threads);
      c.items = snap_items(static_cast<int>(ceil_div(c.chunks, static_cast<std::int64_t>(cluster) * c.threads_per_row)));
      // Several rows per CTA for one- to three-warp rows: keeps CTAs at >= 128 threads.
      c.rows_per_cta = cluster == 1 ? std::max(1, 128 / c.threads_per_row) : 1;
      c.cta_threads = c.threads_per_row * c.rows_per_cta;
      return c;
    }
  }
  // Streaming: the widest team, reading the row more than once.
  c.items = 0;
  c.cluster_size = p.max_cluster;
  c.threads_per_row = kMaxRowThreads;
  c.rows_per_cta = 1;
  c.cta_threads = kMaxRowThreads;
  return c;
}

RowConfig choose_stream_config(const RowProblem& p, std::int64_t rows, int sm_count) {
  RowConfig c;
  c.vec = 16 / p.elem_bytes;
  c.chunks = std::max<std::int64_t>(1, ceil_div(p.n + (p.frames_vary ? c.vec - 1 : 0), c.vec));
  constexpr int kMinChunks = 8;  // per thread: below this the per-row overhead dominates
  c.items = 0;
  c.threads_per_row = std::max(32, std::min(256, next_pow2(ceil_div(c.chunks, kMinChunks))));
  c.rows_per_cta = 1;
  c.cta_threads = c.threads_per_row;
  // About four CTAs per SM in flight, what a 256-thread CTA of this kind reaches (the
  // cross-entropy loss's groups of 8 chunks, at 75 registers, reach three). It only decides
  // clusters for too few rows to fill the GPU.
  const std::int64_t want_ctas = 4LL * std::max(1, sm_count);
  c.cluster_size = 1;
  while (c.cluster_size < p.max_cluster && rows * c.cluster_size < want_ctas &&
         c.chunks >= static_cast<std::int64_t>(2) * c.cluster_size * c.threads_per_row * kMinChunks)
    c.cluster_size *= 2;
  // Long rows: past seven groups of eight chunks a thread (the loss kernel's groups), the row
  // goes on more CTAs of a cluster, about 32 chunks a thread each: 1-3 % faster than one CTA
  // a row for the loss at 64K-1M columns. Fewer chunks a thread lost (32 on 2 CTAs ~2 %,
  // 18.5 on 4 ~5 %): hence 56, not 32 (docs/perf.md, "Softmax and cross-entropy").
  constexpr int kMaxChunks = 56;
  while (c.cluster_size < p.max_cluster &&
         c.chunks > static_cast<std::int64_t>(c.cluster_size) * c.threads_per_row * kMaxChunks)
    c.cluster_size *= 2;
  return c;
}

}  // namespace tachyon::detail

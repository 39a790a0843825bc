// choose_row_config: every choice covers the row and fits the hardware, for every N.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/row_config.h"

namespace tachyon::detail {
namespace {

bool in_item_set(int items) {
  for (int i : kRowItems)
    if (i == items) return true;
  return false;
}

TEST(RowConfig, CoversEveryRowAndFitsLimits) {
  for (int elem : {2, 4})
    for (bool vary : {false, true})
      for (int max_cluster : {1, 16})
        for (int max_items : {2, 4, 8, 12, 16})
          for (int regs : {0, 64, 78})
            for (int single : {0, 2})
              for (std::int64_t n = 1; n <= (1 << 21); n = n < 64 ? n + 1 : n * 3 / 2 + 1) {
                RowProblem p;
                p.regs_per_thread = regs;
                p.single_cta_items = single;
                p.n = n;
                p.elem_bytes = elem;
                p.frames_vary = vary;
                p.max_cluster = max_cluster;
                p.max_items = max_items;
                const RowConfig c = choose_row_config(p);
                SCOPED_TRACE("n=" + std::to_string(n) + " elem=" + std::to_string(elem) + " " + c.str());
                EXPECT_EQ(c.vec, 16 / elem);
                EXPECT_GE(c.chunks * c.vec, n + (vary ? c.vec - 1 : 0));
                EXPECT_LE(c.cta_threads, kMaxRowThreads);
                EXPECT_EQ(c.threads_per_row * c.rows_per_cta, c.cta_threads);
                EXPECT_TRUE(c.threads_per_row <= 32 ? (c.threads_per_row & (c.threads_per_row - 1)) == 0
                                                    : c.threads_per_row % 32 == 0);
                EXPECT_GE(c.cluster_size, 1);
                EXPECT_LE(c.cluster_size, max_cluster);
                EXPECT_TRUE(c.cluster_size == 1 || c.rows_per_cta == 1);
                if (!c.streaming()) {
                  EXPECT_TRUE(in_item_set(c.items));
                  EXPECT_LE(c.items, max_items);
                  EXPECT_GE(static_cast<std::int64_t>(c.items) * c.threads_per_row * c.cluster_size, c.chunks);
                }
              }
}

TEST(RowConfig, ShortRowsShareAWarp) {
  RowProblem p;
  p.n = 256;
  p.elem_bytes = 2;  // 32 chunks of 8 bf16
  const RowConfig c = choose_row_config(p);
  EXPECT_EQ(c.threads_per_row, 8);
  EXPECT_EQ(c.items, 4);
  EXPECT_EQ(c.cluster_size, 1);
  EXPECT_EQ(c.rows_per_cta, 16);
}

// Rows of one or two chunks a thread take the smallest tile built (min_items), part empty; other
// rows are laid as before.
TEST(RowConfig, ShortRowsTakeTheSmallestTileBuilt) {
  for (std::int64_t n : {1, 7, 8, 9, 16, 17, 32, 72, 128, 1000}) {
    RowProblem p;
    p.n = n;
    p.elem_bytes = 2;
    const RowConfig plain = choose_row_config(p);
    EXPECT_EQ(plain.items, n <= 8 ? 1 : n <= 16 ? 2 : 4) << n;
    p.min_items = 4;
    const RowConfig c = choose_row_config(p);
    EXPECT_EQ(c.items, std::max(plain.items, 4)) << n;
    EXPECT_EQ(c.threads_per_row, plain.threads_per_row) << n;
    EXPECT_EQ(c.rows_per_cta, plain.rows_per_cta) << n;
  }
}

TEST(RowConfig, LongRowsUseClusters) {
  RowProblem p;
  p.elem_bytes = 2;
  p.n = 262144;  // bf16: 32768 chunks = 16 CTAs x 256 threads x 8
  RowConfig c = choose_row_config(p);
  EXPECT_EQ(c.cluster_size, 16);
  EXPECT_EQ(c.threads_per_row, 256);
  EXPECT_EQ(c.items, 8);
  p.n = 16384;  // one CTA of 256 threads
  c = choose_row_config(p);
  EXPECT_EQ(c.cluster_size, 1);
  EXPECT_EQ(c.threads_per_row, 256);
}

TEST(RowConfig, StreamsRowsBeyondA16CtaCluster) {
  RowProblem p;
  p.elem_bytes = 4;
  p.n = 1048576;  // fp32: 262144 chunks > 16 x 512 x 16
  RowConfig c = choose_row_config(p);
  EXPECT_TRUE(c.streaming());
  EXPECT_EQ(c.cluster_size, 16);
  p.max_cluster = 1;  // no clusters (pre-Hopper): long rows stream through one CTA
  p.n = 65536;
  c = choose_row_config(p);
  EXPECT_EQ(c.cluster_size, 1);
}

TEST(RowConfig, SnapItems) {
  EXPECT_EQ(snap_items(1), 1);
  EXPECT_EQ(snap_items(3), 4);
  EXPECT_EQ(snap_items(9), 12);
  EXPECT_EQ(snap_items(16), 16);
}

TEST(RowConfig, WideCtasBeforeSixteenCtaClustersWhenRegistersAllow) {
  RowProblem p;
  p.n = 262144;  // bf16: 32768 chunks, 8 per thread
  p.regs_per_thread = 64;
  RowConfig c = choose_row_config(p);
  EXPECT_EQ(c.cluster_size, 8);
  EXPECT_EQ(c.cta_threads, 512);
  EXPECT_EQ(c.items, 8);
  p.regs_per_thread = 78;  // one 512-thread CTA per SM: keep 256-thread CTAs
  c = choose_row_config(p);
  EXPECT_EQ(c.cluster_size, 16);
  EXPECT_EQ(c.cta_threads, 256);
  p.regs_per_thread = 64;
  p.n = 65536;  // 512-thread CTAs first: 2 x 512 rather than 4 x 256
  c = choose_row_config(p);
  EXPECT_EQ(c.cluster_size, 2);
  EXPECT_EQ(c.cta_threads, 512);
  p.n = 16384;  // 2048 chunks: one CTA of 256 threads, as before (512 is a cap, not a goal)
  c = choose_row_config(p);
  EXPECT_EQ(c.cluster_size, 1);
  EXPECT_EQ(c.cta_threads, 256);
}

// narrow_ctas and four_item_rows: the layouts of a kernel past 64 registers at any register
// count (the norm forward): 256-thread CTAs before 512-thread ones, the 4-item tile for
// 257..512 chunks.
TEST(RowConfig, NarrowLayoutWhateverTheRegisters) {
  for (int regs : {0, 40, 64}) {
    RowProblem p;
    p.regs_per_thread = regs;
    p.narrow_ctas = true;
    p.four_item_rows = true;
    p.n = 32768;  // bf16: 4096 chunks, two CTAs of 256 threads rather than one of 512
    RowConfig c = choose_row_config(p);
    EXPECT_EQ(c.cluster_size, 2) << regs;
    EXPECT_EQ(c.cta_threads, 256) << regs;
    EXPECT_EQ(c.items, 8) << regs;
    p.n = 4096;  // 512 chunks: 4 items on 128 threads, two rows a CTA
    c = choose_row_config(p);
    EXPECT_EQ(c.items, 4) << regs;
    EXPECT_EQ(c.threads_per_row, 128) << regs;
    EXPECT_EQ(c.rows_per_cta, 2) << regs;
    p.four_item_rows = false;  // the same problem at <= 64 registers: 8 items on 64 threads
    c = choose_row_config(p);
    EXPECT_EQ(c.items, 8) << regs;
    EXPECT_EQ(c.threads_per_row, 64) << regs;
  }
}

// Rows that a team of whole warps at 4 chunks fills exactly (384 chunks: bf16 3072, fp32 1536)
// take that team, one row a CTA: the tile is the row, so the norm forward's full form runs.
TEST(RowConfig, FourItemRowsFillTheirTeamWhereWholeWarpsCan) {
  RowProblem p;
  p.four_item_rows = true;
  p.n = 3072;
  EXPECT_EQ(choose_row_config(p).threads_per_row, 128);  // only where asked (the norm forward, unfused)
  p.four_item_exact = true;
  for (int elem_bytes : {2, 4}) {
    p.elem_bytes = elem_bytes;
    p.n = 384 * 16 / elem_bytes;
    RowConfig c = choose_row_config(p);
    EXPECT_EQ(c.items, 4) << c.str();
    EXPECT_EQ(c.threads_per_row, 96) << c.str();
    EXPECT_EQ(c.rows_per_cta, 1) << c.str();
    EXPECT_EQ(c.cta_threads, 96) << c.str();
    EXPECT_EQ(static_cast<std::int64_t>(c.items) * c.threads_per_row, c.chunks) << c.str();
  }
  p.elem_bytes = 2;
  for (std::int64_t n : {2560, 3064, 4096}) {  // 320, 383, 512 chunks: no whole-warp team fills them
    p.n = n;
    RowConfig c = choose_row_config(p);
    EXPECT_EQ(c.threads_per_row, 128) << n;
    EXPECT_EQ(c.rows_per_cta, 2) << n;
  }
}

// The backward's preference while one CTA holds the row: 2 chunks per thread.
TEST(RowConfig, SingleCtaItemsWhileOneCtaHoldsTheRow) {
  RowProblem p;
  p.max_items = 4;
  p.single_cta_items = 2;
  p.n = 4096;  // bf16: 512 chunks -> 256 threads x 2
  RowConfig c = choose_row_config(p);
  EXPECT_EQ(c.items, 2) << c.str();
  EXPECT_EQ(c.threads_per_row, 256);
  EXPECT_EQ(c.cluster_size, 1);
  p.n = 8192;  // 1024 chunks -> 512 x 2
  c = choose_row_config(p);
  EXPECT_EQ(c.items, 2) << c.str();
  EXPECT_EQ(c.threads_per_row, 512);
  p.n = 16384;  // 2048 chunks: past one CTA at 2 items, the usual options (4 items)
  c = choose_row_config(p);
  EXPECT_EQ(c.items, 4) << c.str();
  p.n = 4097;  // 513 chunks -> 288 threads, every chunk covered
  c = choose_row_config(p);
  EXPECT_GE(static_cast<std::int64_t>(c.items) * c.threads_per_row, c.chunks);
}

// Past 64 registers at 8 items, rows of 257..512 chunks take the 4-item tile on 128 threads,
// two rows per CTA; nothing else changes.
TEST(RowConfig, HeavyKernelsTakeFourItemsOnMidRows) {
  RowProblem p;
  p.n = 4096;  // bf16: 512 chunks
  p.regs_per_thread = 78;
  RowConfig c = choose_row_config(p);
  EXPECT_EQ(c.items, 4) << c.str();
  EXPECT_EQ(c.threads_per_row, 128);
  EXPECT_EQ(c.rows_per_cta, 2);
  p.regs_per_thread = 64;  // the 8-item kernel fits: 64 threads of 8 items
  c = choose_row_config(p);
  EXPECT_EQ(c.items, 8) << c.str();
  EXPECT_EQ(c.threads_per_row, 64);
  p.regs_per_thread = 78;
  for (std::int64_t n : {2048, 8192, 16384}) {  // 256 chunks (one warp at 8 items), 1024, 2048: unchanged
    p.n = n;
    EXPECT_EQ(choose_row_config(p).items, 8) << n;
  }
  p.n = 4096;
  p.max_items = 4;  // the backward's tiles: its own path
  EXPECT_EQ(choose_row_config(p).threads_per_row, 128);
  EXPECT_EQ(choose_row_config(p).rows_per_cta, 1);
}

TEST(RowConfig, StreamConfigFitsAndFillsTheGpu) {
  for (int elem : {2, 4})
    for (int max_cluster : {1, 16})
      for (std::int64_t rows : {1LL, 7LL, 199LL, 8192LL})
        for (std::int64_t n = 1; n <= (1 << 21); n = n * 3 / 2 + 1) {
          RowProblem p;
          p.n = n;
          p.elem_bytes = elem;
          p.frames_vary = true;
          p.max_cluster = max_cluster;
          const RowConfig c = choose_stream_config(p, rows, 132);
          SCOPED_TRACE("n=" + std::to_string(n) + " rows=" + std::to_string(rows) + " " + c.str());
          EXPECT_TRUE(c.streaming());
          EXPECT_EQ(c.rows_per_cta, 1);
          EXPECT_EQ(c.cta_threads, c.threads_per_row);
          EXPECT_EQ(c.threads_per_row % 32, 0);
          EXPECT_LE(c.cta_threads, 256);
          EXPECT_GE(c.cluster_size, 1);
          EXPECT_LE(c.cluster_size, max_cluster);
          EXPECT_EQ(c.cluster_size & (c.cluster_size - 1), 0);
          if (c.cluster_size > 1) {
            // Clusters only where rows are few or long, and threads stay busy.
            const bool few = rows * c.cluster_size / 2 < 4 * 132;
            const bool longer = c.chunks > c.cluster_size / 2 * c.threads_per_row * 56;
            EXPECT_TRUE(few || longer);
            EXPECT_GE(c.chunks, c.cluster_size * c.threads_per_row * 8);
          }
        }
  RowProblem big;
  big.n = 262144;
  EXPECT_EQ(choose_stream_config(big, 8192, 132).cluster_size, 4);  // bf16: 32 chunks a thread on 4 CTAs
  EXPECT_EQ(choose_stream_config(big, 1, 132).cluster_size, 16);
  // The measured long-row layouts (M = 16384, loss): CTAs a row by length.
  struct Want { int elem; std::int64_t n; bool frames_vary; int cluster; };
  for (const Want& w : {Want{2, 50257, true, 1}, Want{2, 65536, false, 1}, Want{2, 128256, false, 2},
                        Want{2, 131072, false, 2}, Want{2, 151936, false, 2}, Want{4, 50257, true, 1},
                        Want{4, 65536, false, 2}, Want{4, 131072, false, 4}}) {
    RowProblem p;
    p.n = w.n;
    p.elem_bytes = w.elem;
    p.frames_vary = w.frames_vary;
    const RowConfig c = choose_stream_config(p, 16384, 132);
    EXPECT_EQ(c.threads_per_row, 256) << w.n;
    EXPECT_EQ(c.cluster_size, w.cluster) << w.elem << " x " << w.n;
  }
  RowProblem no_clusters = big;
  no_clusters.max_cluster = 1;
  EXPECT_EQ(choose_stream_config(no_clusters, 8192, 132).cluster_size, 1);
}

}  // namespace
}  // namespace tachyon::detail

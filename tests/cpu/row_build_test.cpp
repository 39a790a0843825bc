// The row kernels' build choices on the host: which rows are whole aligned chunks, which norm
// cluster rows take the 64-register build. Pure functions, so every case is checked here.
#include <gtest/gtest.h>

#include <cstdint>
#include <tuple>
#include <vector>

#include "core/row_arg.h"
#include "core/row_config.h"
#include "core/variants.h"
#include "norm/norm_params.h"
#include "softmax/softmax_params.h"
#include "tachyon/error.h"

namespace tachyon::detail {
namespace {

RowArg at(std::uintptr_t address, std::int64_t stride, DType dtype = DType::bf16) {
  return {reinterpret_cast<const void*>(address), stride, dtype};
}

TEST(WholeChunkRows, NeedsAlignedBaseRowBytesAndStride) {
  constexpr std::uintptr_t kBase = 0x10000;
  EXPECT_TRUE(whole_chunk_rows(at(kBase, 4096), 4096, 2));
  EXPECT_TRUE(whole_chunk_rows(at(kBase, 4104), 4096, 2));  // padded rows, still 16-byte multiples
  EXPECT_TRUE(whole_chunk_rows(at(kBase, 0), 8, 2));        // a vector (stride 0)
  EXPECT_TRUE(whole_chunk_rows(at(kBase, 1024), 1024, 4));
  EXPECT_FALSE(whole_chunk_rows(at(kBase + 2, 4096), 4096, 2));  // base off by one element
  EXPECT_FALSE(whole_chunk_rows(at(kBase, 4097), 4097, 2));      // N not a multiple of 8
  EXPECT_FALSE(whole_chunk_rows(at(kBase, 4100), 4096, 2));      // rows 8200 bytes apart
  EXPECT_FALSE(whole_chunk_rows(at(kBase, 50257), 50257, 2));
  EXPECT_FALSE(whole_chunk_rows(at(kBase, 1026), 1026, 4));      // f32: 4104 bytes a row
  EXPECT_FALSE(whole_chunk_rows(at(kBase + 8, 1024), 1024, 4));
}

// Operands share each row's frame when their bases and their row strides in bytes agree modulo
// 16 (the norm backward's framed build): odd N, sliced views of one buffer, padded rows.
TEST(SameChunkFrames, BaseAndRowStrideModulo16) {
  constexpr std::uintptr_t kBase = 0x10000;
  EXPECT_TRUE(same_chunk_frames(at(kBase + 2, 4095), at(kBase + 0x8002, 4095), 2));  // odd N, same phase
  EXPECT_TRUE(same_chunk_frames(at(kBase + 6, 4095), at(kBase + 0x106, 4103), 2));   // strides 8 elements apart
  EXPECT_TRUE(same_chunk_frames(at(kBase + 4, 1023, DType::f32), at(kBase + 0x24, 1027, DType::f32), 4));
  EXPECT_FALSE(same_chunk_frames(at(kBase + 2, 4095), at(kBase + 4, 4095), 2));      // bases differ
  EXPECT_FALSE(same_chunk_frames(at(kBase + 2, 4095), at(kBase + 2, 4096), 2));      // strides differ
  EXPECT_FALSE(same_chunk_frames(at(kBase, 1023, DType::f32), at(kBase, 1025, DType::f32), 4));
  // Row strides in bytes modulo 16: 3 and 11 two-byte elements (6 and 22 bytes) agree, 3 and 7 not.
  EXPECT_TRUE(same_chunk_frames(at(kBase, 3), at(kBase, 11), 2));
  EXPECT_FALSE(same_chunk_frames(at(kBase, 3), at(kBase, 7), 2));
}

RowConfig config(int cluster, int threads) {
  RowConfig c;
  c.vec = 8;
  c.items = 8;
  c.threads_per_row = threads;
  c.rows_per_cta = 1;
  c.cta_threads = threads;
  c.cluster_size = cluster;
  return c;
}

TEST(NormForwardMode, LayerNormClusterRowsTakeTheBoundedBuild) {
  const NormFwdMode whole = NormFwdMode::whole, bounded = NormFwdMode::whole_cluster;
  // One CTA per row: the unbounded build, RMSNorm and LayerNorm alike.
  EXPECT_EQ(forward_mode_for_config(whole, config(1, 256), false, false), whole);
  EXPECT_EQ(forward_mode_for_config(whole, config(1, 512), true, false), whole);
  for (int cluster : {2, 4, 16})
    for (int threads : {256, 512}) {
      // LayerNorm on any cluster; with an fp32 weight beside 16-bit rows its whole build (within
      // 64 registers). RMSNorm's whole build (within 64 registers) everywhere.
      EXPECT_EQ(forward_mode_for_config(whole, config(cluster, threads), true, false), bounded);
      EXPECT_EQ(forward_mode_for_config(whole, config(cluster, threads), true, true), whole);
      EXPECT_EQ(forward_mode_for_config(whole, config(cluster, threads), false, false), whole);
      EXPECT_EQ(forward_mode_for_config(whole, config(cluster, threads), false, true), whole);
    }
  // Other builds are never switched.
  for (NormFwdMode m : {NormFwdMode::typed, NormFwdMode::generic, NormFwdMode::whole_cluster})
    for (bool ln : {false, true}) EXPECT_EQ(forward_mode_for_config(m, config(16, 512), ln, false), m);
}

TEST(NormForwardMode, FullTileFormOnlyWhereBuiltAndTheRowFillsTheTile) {
  auto tile = [](int items, int threads, int cluster, int vec) {
    RowConfig c = config(cluster, threads);
    c.items = items;
    c.threads_per_row = threads;
    c.vec = vec;
    return c;
  };
  const NormFwdMode whole = NormFwdMode::whole, bounded = NormFwdMode::whole_cluster;
  // LayerNorm's bounded cluster build (8 x 512 x 16 x 4 = 262144 fp32); RMSNorm's whole build
  // on the same tile takes the path.
  EXPECT_TRUE(forward_full_tile(tile(8, 512, 16, 4), bounded, true, false, 262144));
  EXPECT_FALSE(forward_full_tile(tile(8, 512, 16, 4), bounded, true, false, 262144 - 4));
  EXPECT_FALSE(forward_full_tile(tile(8, 512, 16, 4), whole, false, false, 262144));
  // LayerNorm's whole builds (any weight dtype): the 8- and 4-chunk tiles (8 x 64 x 8 = 4096, 4 x
  // 128 x 8 = 4096 bf16; 4 x 128 x 4 = 2048 fp32); not a tile with empty chunks (5120 bf16 = 640
  // chunks on 8 x 128), a row one vector short, other tiles, nor RMSNorm's (the path).
  EXPECT_TRUE(forward_full_tile(tile(8, 64, 1, 8), whole, true, false, 4096));
  EXPECT_TRUE(forward_full_tile(tile(4, 128, 1, 8), whole, true, false, 4096));
  EXPECT_TRUE(forward_full_tile(tile(4, 128, 1, 4), whole, true, false, 2048));
  EXPECT_FALSE(forward_full_tile(tile(8, 128, 1, 8), whole, true, false, 5120));
  EXPECT_FALSE(forward_full_tile(tile(8, 64, 1, 8), whole, true, false, 4096 - 8));
  EXPECT_FALSE(forward_full_tile(tile(2, 256, 1, 8), whole, true, false, 4096));
  EXPECT_FALSE(forward_full_tile(tile(12, 64, 1, 8), whole, true, false, 6144));
  for (bool ln : {false, true}) {
    EXPECT_EQ(forward_full_tile(tile(8, 64, 1, 8), whole, ln, false, 4096), ln);
    EXPECT_FALSE(forward_full_tile(tile(8, 64, 1, 8), NormFwdMode::generic, ln, true, 4096));
  }
  // Where no full form is built (RMSNorm's whole builds), the 4- and 8-chunk tiles test inside the kernel.
  for (int items : {4, 8}) {
    EXPECT_TRUE(inside_path_built(whole, false, items));
    EXPECT_FALSE(inside_path_built(whole, true, items));
    for (bool ln : {false, true}) {
      EXPECT_FALSE(inside_path_built(whole, ln, 2));
      EXPECT_FALSE(inside_path_built(NormFwdMode::typed, ln, items));
    }
  }
  EXPECT_FALSE(inside_path_built(bounded, true, 8));
  // RMSNorm's grouped builds (the fused residual): only with whole operands, 8-chunk tile only.
  const NormFwdMode grouped = NormFwdMode::fused_grouped;
  EXPECT_FALSE(forward_full_tile(tile(4, 128, 1, 8), grouped, false, true, 4096));
  EXPECT_TRUE(forward_full_tile(tile(8, 512, 16, 4), grouped, false, true, 262144));
  EXPECT_FALSE(forward_full_tile(tile(8, 512, 16, 4), grouped, false, false, 262144));
  EXPECT_FALSE(forward_full_tile(tile(8, 128, 1, 8), grouped, false, true, 5120));
  EXPECT_FALSE(forward_full_tile(tile(8, 512, 16, 4), grouped, true, true, 262144));  // not LayerNorm's
  // The typed build has no full form (it measured behind on bf16 one-CTA rows).
  for (bool ln : {false, true})
    EXPECT_FALSE(forward_full_tile(tile(8, 512, 16, 4), NormFwdMode::typed, ln, true, 262144));
}

TEST(NormForwardMode, FusedResidualTakesTheBuildThatMeasuredAhead) {
  const NormFwdMode typed = NormFwdMode::typed, grouped = NormFwdMode::fused_grouped;
  auto mode = [&](DType dt, const RowConfig& c) { return fused_forward_build(typed, true, dt, c).mode; };
  // fp16: the grouped build on every cluster row. One-CTA rows of every dtype stay typed (the
  // plan gives them the 4-chunk tile where one CTA holds the row).
  for (int cluster : {2, 4, 8, 16}) EXPECT_EQ(mode(DType::f16, config(cluster, 512)), grouped);
  for (DType dt : {DType::f16, DType::bf16, DType::f32}) {
    EXPECT_EQ(mode(dt, config(1, 64)), typed);
    EXPECT_EQ(mode(dt, config(1, 512)), typed);
  }
  // fp32: the grouped build on 2-8 CTAs; 16 only where the row fills the tile (below).
  for (int cluster : {2, 4, 8}) EXPECT_EQ(mode(DType::f32, config(cluster, 512)), grouped);
  EXPECT_EQ(mode(DType::f32, config(16, 512)), typed);
  // bf16 rows not filling the tile: typed.
  for (const RowConfig& c : {config(1, 512), config(2, 512), config(8, 512), config(4, 256)})
    EXPECT_EQ(mode(DType::bf16, c), typed);
  // Rows that fill the tile with whole operands: fp32 on 16 CTAs and bf16 cluster rows (after
  // the doubling) on the grouped build too, for its full-tile form; one-CTA rows unchanged.
  auto full = [&](DType dt, const RowConfig& c) { return fused_forward_build(typed, true, dt, c, true); };
  EXPECT_EQ(full(DType::f32, config(16, 512)).mode, grouped);
  EXPECT_EQ(full(DType::f32, config(16, 512)).smem_carveout, 75);
  EXPECT_EQ(full(DType::f32, config(8, 512)).mode, grouped);
  EXPECT_EQ(full(DType::f32, config(4, 512)).mode, grouped);
  EXPECT_EQ(full(DType::f32, config(1, 512)).mode, typed);
  for (int cluster : {2, 4}) EXPECT_EQ(full(DType::bf16, config(cluster, 256)).mode, grouped);
  EXPECT_EQ(full(DType::bf16, config(8, 512)).mode, grouped);
  EXPECT_EQ(full(DType::bf16, config(8, 512)).smem_carveout, 75);
  EXPECT_EQ(full(DType::bf16, config(1, 512)).mode, typed);
  EXPECT_EQ(full(DType::f16, config(1, 512)).mode, typed);
  EXPECT_EQ(full(DType::f16, config(8, 512)).mode, grouped);
  // Rows on 8+ CTAs: a carveout preference, 100 % typed and 75 % grouped; the driver's otherwise.
  EXPECT_EQ(fused_forward_build(typed, true, DType::bf16, config(8, 512)).smem_carveout, 100);
  EXPECT_EQ(fused_forward_build(typed, true, DType::f32, config(16, 512)).smem_carveout, 100);
  EXPECT_EQ(fused_forward_build(typed, true, DType::bf16, config(8, 256)).smem_carveout, 100);
  EXPECT_EQ(fused_forward_build(typed, true, DType::f32, config(8, 512)).smem_carveout, 75);
  EXPECT_EQ(fused_forward_build(typed, true, DType::f16, config(8, 512)).smem_carveout, 75);
  for (int cluster : {1, 2, 4}) {
    EXPECT_EQ(fused_forward_build(typed, true, DType::f16, config(cluster, 512)).smem_carveout, -1);
    EXPECT_EQ(fused_forward_build(typed, true, DType::f32, config(cluster, 512)).smem_carveout, -1);
  }
  EXPECT_EQ(fused_forward_build(typed, true, DType::bf16, config(4, 256)).smem_carveout, -1);
  // Other tiles, no residual, other builds: unchanged.
  RowConfig four = config(2, 512);
  four.items = 4;
  EXPECT_EQ(mode(DType::f16, four), typed);
  EXPECT_EQ(fused_forward_build(typed, false, DType::f16, config(2, 512)).mode, typed);
  EXPECT_EQ(fused_forward_build(typed, false, DType::bf16, config(8, 512)).smem_carveout, -1);
  for (NormFwdMode m : {NormFwdMode::generic, NormFwdMode::whole, NormFwdMode::whole_cluster})
    EXPECT_EQ(fused_forward_build(m, true, DType::f16, config(2, 512)).mode, m);
  // The grouped build exists for the 8-chunk tile; others launch the typed one.
  EXPECT_EQ(forward_kernel_build(grouped, 8), grouped);
  EXPECT_EQ(forward_kernel_build(grouped, 4), typed);
}

TEST(NormForwardStaging, BoundedBuildExistsForTheEightChunkTile) {
  EXPECT_EQ(forward_kernel_build(NormFwdMode::whole_cluster, 8), NormFwdMode::whole_cluster);
  EXPECT_EQ(forward_kernel_build(NormFwdMode::whole_cluster, 4), NormFwdMode::whole);
  EXPECT_EQ(forward_kernel_build(NormFwdMode::whole_cluster, 16), NormFwdMode::whole);
  for (NormFwdMode m : {NormFwdMode::whole, NormFwdMode::typed, NormFwdMode::generic})
    for (int items : {0, 1, 8, 16}) EXPECT_EQ(forward_kernel_build(m, items), m);
}

TEST(NormForwardStaging, WindowIsHalfTheTileOnlyForTheBoundedLayerNorm) {
  EXPECT_EQ(forward_stage_window(8, true, NormFwdMode::whole_cluster), 4);
  for (NormFwdMode m : {NormFwdMode::whole, NormFwdMode::typed, NormFwdMode::generic})
    EXPECT_EQ(forward_stage_window(8, true, m), 8);
}

TEST(NormForwardStaging, SharedMemoryByLayout) {
  const NormFwdMode bounded = NormFwdMode::whole_cluster, whole = NormFwdMode::whole;
  // RMSNorm bf16, 8 chunks on 512 threads, cluster rows: the weight's whole tile, 64 KiB.
  EXPECT_EQ(forward_stage_bytes(config(8, 512), whole, false, 2, 0, 2), 64u * 1024);
  // One CTA a row: nothing staged (the SM's CTAs share the weight through L1).
  EXPECT_EQ(forward_stage_bytes(config(1, 512), whole, false, 2, 0, 2), 0u);
  EXPECT_EQ(forward_stage_bytes(config(1, 256), whole, true, 2, 2, 2), 0u);
  // LayerNorm bf16, bounded: weight and bias through a window of 4 slots (2 x 32 KiB), on
  // cluster rows and on one-CTA rows alike.
  EXPECT_EQ(forward_stage_bytes(config(8, 512), bounded, true, 2, 2, 2), 64u * 1024);
  EXPECT_EQ(forward_stage_bytes(config(1, 512), bounded, true, 2, 2, 2), 64u * 1024);
  // LayerNorm fp32 (vec 4): the same bytes.
  RowConfig f32 = config(16, 512);
  f32.vec = 4;
  EXPECT_EQ(forward_stage_bytes(f32, bounded, true, 4, 4, 2), 64u * 1024);
  // Unbounded LayerNorm on 256-thread CTAs: both whole tiles fit (2 x 32 KiB).
  EXPECT_EQ(forward_stage_bytes(config(2, 256), whole, true, 2, 2, 2), 64u * 1024);
  // Past 64 KiB nothing is staged: fp32 weight and bias beside bf16 rows, unbounded 512 x 8.
  EXPECT_EQ(forward_stage_bytes(config(4, 512), NormFwdMode::generic, true, 4, 4, 2), 0u);
  // LayerNorm without bias: the weight alone.
  EXPECT_EQ(forward_stage_bytes(config(8, 512), bounded, true, 2, 0, 2), 32u * 1024);
  // Streaming rows (items 0): nothing.
  RowConfig streaming = config(16, 512);
  streaming.items = 0;
  EXPECT_EQ(forward_stage_bytes(streaming, NormFwdMode::typed, true, 2, 2, 2), 0u);
  // Not past 128 KiB over the SM's CTAs: an fp32 weight beside bf16 rows on 256 x 8 (64 KiB a
  // CTA) at three CTAs an SM is read through L1; at two it is staged.
  EXPECT_EQ(forward_stage_bytes(config(4, 256), whole, false, 4, 0, 3), 0u);
  EXPECT_EQ(forward_stage_bytes(config(4, 256), whole, false, 4, 0, 2), 64u * 1024);
  // A bf16 weight on the same layout: 3 x 32 KiB, staged.
  EXPECT_EQ(forward_stage_bytes(config(4, 256), whole, false, 2, 0, 3), 32u * 1024);
  // LayerNorm's fp32 weight and bias beside bf16 rows on its whole build's cluster rows (8 chunks
  // on 256 threads): 128 KiB a CTA, not staged.
  for (int cluster : {2, 16}) EXPECT_EQ(forward_stage_bytes(config(cluster, 256), whole, true, 4, 4, 1), 0u);
  // One path compiled: LayerNorm's bounded build on 16-bit rows alone.
  EXPECT_EQ(forward_staging(true, bounded, 2), Staging::always);
  EXPECT_EQ(forward_staging(true, bounded, 4), Staging::per_launch);
  EXPECT_EQ(forward_staging(true, whole, 2), Staging::per_launch);
  EXPECT_EQ(forward_staging(false, bounded, 2), Staging::per_launch);
}

RowProblem backward_problem(std::int64_t n, int elem_bytes) {
  RowProblem p;
  p.n = n;
  p.elem_bytes = elem_bytes;
  return p;
}

TEST(BackwardRowConfig, Fp32RowsPast4ChunksOn16CtasTakeTheEightChunkTile) {
  const RowConfig f32_262k = backward_row_config(backward_problem(262144, 4), false);
  EXPECT_EQ(f32_262k.items, kBackwardLongRowItems);
  EXPECT_EQ(f32_262k.cluster_size, 16);
  EXPECT_EQ(static_cast<std::int64_t>(f32_262k.cta_threads) * f32_262k.cluster_size * f32_262k.items * 4, 262144);
  // Only fp32 rows that 4 chunks on 16 CTAs cannot hold take 8: 131072 keeps 4 on 16 CTAs,
  // 16384 4 on 4, 8192 4 on 2; one-CTA rows 2; beyond 8 chunks on 16 CTAs: streaming.
  const RowConfig f32_131k = backward_row_config(backward_problem(131072, 4), false);
  EXPECT_EQ(f32_131k.items, kBackwardItems);
  EXPECT_EQ(f32_131k.cluster_size, 16);
  EXPECT_EQ(backward_row_config(backward_problem(131072 + 4, 4), false).items, kBackwardLongRowItems);
  EXPECT_EQ(backward_row_config(backward_problem(16384, 4), false).items, kBackwardItems);
  EXPECT_EQ(backward_row_config(backward_problem(16384, 4), false).cluster_size, 4);
  EXPECT_EQ(backward_row_config(backward_problem(8192, 4), false).items, kBackwardItems);
  EXPECT_EQ(backward_row_config(backward_problem(8192, 4), false).cluster_size, 2);
  EXPECT_EQ(backward_row_config(backward_problem(4096, 4), false).items, 2);
  EXPECT_TRUE(backward_row_config(backward_problem(262144 + 4, 4), false).streaming());
  EXPECT_TRUE(backward_row_config(backward_problem(1048576, 4), false).streaming());
  // 16-bit rows never take it: 4 chunks on 16 CTAs at 131072, 262144; longer rows stream.
  EXPECT_EQ(backward_row_config(backward_problem(131072, 2), false).items, kBackwardItems);
  EXPECT_EQ(backward_row_config(backward_problem(262144, 2), false).items, kBackwardItems);
  EXPECT_TRUE(backward_row_config(backward_problem(524288, 2), false).streaming());
  // Without clusters, an fp32 row past 512 threads x 4 chunks x 4 takes 8 chunks, then streams.
  RowProblem one = backward_problem(16384, 4);
  one.max_cluster = 1;
  EXPECT_EQ(backward_row_config(one, false).items, kBackwardLongRowItems);
  one.n = 16388;
  EXPECT_TRUE(backward_row_config(one, false).streaming());
}

TEST(BackwardRowConfig, LayerNorm16BitRowsOf16kTo64kTakeThePackedFourChunkTile) {
  using S = BwdWeightSlots;
  // With the packed weight build: 4 chunks x 512 threads on 1 (16384), 2 (32768) or 4 (65536) CTAs.
  for (std::int64_t n : {16384, 32768, 65536}) {
    const RowConfig c = backward_row_config(backward_problem(n, 2), true, S::packed);
    EXPECT_EQ(c.items, kBackwardItems) << n;
    EXPECT_EQ(c.cta_threads, 512) << n;
    EXPECT_EQ(c.cluster_size, static_cast<int>(n / 16384)) << n;
    EXPECT_EQ(static_cast<std::int64_t>(c.cta_threads) * c.cluster_size * c.items * 8, n) << n;
    // Without it (an fp32 weight, untyped rows), and for RMSNorm: 256-thread CTAs.
    EXPECT_EQ(backward_row_config(backward_problem(n, 2), true).cta_threads, 256) << n;
    EXPECT_EQ(backward_row_config(backward_problem(n, 2), false, S::packed).cta_threads, 256) << n;
  }
  // Not at 8192 and below (one 512-thread CTA of 2 chunks holds the row), nor past 65536.
  EXPECT_EQ(backward_row_config(backward_problem(8192, 2), true, S::packed).items, 2);
  EXPECT_EQ(backward_row_config(backward_problem(131072, 2), true, S::packed).cluster_size, kLayerNormMaxCluster);
  // fp32 rows never pack.
  EXPECT_EQ(backward_row_config(backward_problem(16384, 4), true, S::packed).cluster_size, 4);
}

// Packed rows that do not fill 512-thread CTAs take the fewest CTAs with their threads balanced
// to fill them (a multiple of a warp); a one-CTA row only where that frees a quarter of its warps.
TEST(BackwardRowConfig, PackedRowsBetweenFilledSizesBalanceTheirCtas) {
  using S = BwdWeightSlots;
  struct Case { std::int64_t n; int ctas, threads; };
  for (const Case& k : {Case{9000, 1, 288}, Case{12288, 1, 384}, Case{20480, 2, 320}, Case{24576, 2, 384},
                        Case{28672, 2, 448}, Case{40960, 3, 448}, Case{16384, 1, 512}, Case{32768, 2, 512},
                        Case{65536, 4, 512}}) {
    const RowConfig c = backward_row_config(backward_problem(k.n, 2), true, S::packed);
    EXPECT_EQ(c.items, kBackwardItems) << k.n;
    EXPECT_EQ(c.cluster_size, k.ctas) << k.n;
    EXPECT_EQ(c.cta_threads, k.threads) << k.n;
    EXPECT_EQ(c.threads_per_row, c.cta_threads) << k.n;
    // The tile holds the row, with less than a warp's chunks to spare in each CTA.
    const std::int64_t slots = static_cast<std::int64_t>(c.cta_threads) * c.cluster_size * c.items;
    EXPECT_GE(slots * 8, k.n) << k.n;
    EXPECT_LT(slots * 8 - k.n, 32LL * c.items * 8 * c.cluster_size) << k.n;
  }
  // One-CTA rows of 12289..16383 keep 512 threads (416-480 balanced would keep most warps).
  for (std::int64_t n : {12296, 13312, 14336, 16376})
    EXPECT_EQ(backward_row_config(backward_problem(n, 2), true, S::packed).cta_threads, 512) << n;
}

TEST(BackwardRowConfig, WeightSlotsArePackedFor16BitRowsWithTheirOwnWeightDtype) {
  using S = BwdWeightSlots;
  EXPECT_EQ(backward_weight_slots(DType::bf16, true, DType::bf16), S::packed);
  EXPECT_EQ(backward_weight_slots(DType::f16, true, DType::f16), S::packed);
  EXPECT_EQ(backward_weight_slots(DType::bf16, false, DType::f32), S::packed);  // no weight: dtype unused
  EXPECT_EQ(backward_weight_slots(DType::f16, false, DType::bf16), S::packed);
  EXPECT_EQ(backward_weight_slots(DType::bf16, true, DType::f32), S::fp32);
  EXPECT_EQ(backward_weight_slots(DType::f16, true, DType::bf16), S::fp32);
  EXPECT_EQ(backward_weight_slots(DType::f32, true, DType::f32), S::fp32);
  EXPECT_EQ(backward_weight_slots(DType::f32, false, DType::f32), S::fp32);
}

TEST(ForwardRowConfig, SixteenCtaClusterRowsLaunchWithLoadBalancing) {
  for (int cluster : {1, 2, 4, 8}) EXPECT_FALSE(forward_cluster_load_balancing(config(cluster, 512))) << cluster;
  EXPECT_TRUE(forward_cluster_load_balancing(config(16, 512)));
  EXPECT_TRUE(forward_cluster_load_balancing(config(16, 256)));
}

TEST(BackwardRowConfig, TypedDresidualOnThePipelinedAndLongRowTiles) {
  // RMSNorm 16-bit 2048 ... 262144 and fp32 1024 ... 131072 run the 2- and 4-chunk tiles: their kDres builds.
  for (std::int64_t n = 2048; n <= 262144; n *= 2)
    EXPECT_TRUE(backward_typed_dresidual(backward_row_config(backward_problem(n, 2), false))) << n;
  for (std::int64_t n = 1024; n <= 131072; n *= 2)
    EXPECT_TRUE(backward_typed_dresidual(backward_row_config(backward_problem(n, 4), false))) << n;
  // Rows of several a CTA on the 4-chunk tile too, and the fp32 8-chunk tile; not the 1-chunk tile, streaming rows.
  EXPECT_TRUE(backward_typed_dresidual(backward_row_config(backward_problem(1024, 2), false)));
  EXPECT_EQ(backward_row_config(backward_problem(262144, 4), false).items, kBackwardLongRowItems);
  EXPECT_TRUE(backward_typed_dresidual(backward_row_config(backward_problem(262144, 4), false)));
  EXPECT_FALSE(backward_typed_dresidual(backward_row_config(backward_problem(1 << 22, 4), false)));
  RowConfig one = backward_row_config(backward_problem(1024, 2), false);
  one.items = 1;
  EXPECT_FALSE(backward_typed_dresidual(one));
}

TEST(BackwardRowConfig, RowsOf64KiBAndUpOnTheFourChunkTilePrefetchTwoRowsAhead) {
  // 16-bit rows of 32768 and up, fp32 rows of 16384 and up, on the 4-chunk tile: every layout
  // that takes them, with and without the packed weight.
  for (bool ln : {false, true}) {
    for (std::int64_t n : {32768, 65536, 131072, 262144}) {
      const RowConfig c = backward_row_config(backward_problem(n, 2), ln, BwdWeightSlots::packed);
      if (c.items == kBackwardItems) EXPECT_TRUE(backward_l2_prefetch(c)) << n << " " << ln;
    }
    for (std::int64_t n : {16384, 32768, 65536, 131072}) {
      const RowConfig c = backward_row_config(backward_problem(n, 4), ln);
      ASSERT_EQ(c.items, kBackwardItems) << n;
      EXPECT_TRUE(backward_l2_prefetch(c)) << n << " " << ln;
    }
  }
  EXPECT_TRUE(backward_l2_prefetch(backward_row_config(backward_problem(262144, 2), true, BwdWeightSlots::packed)));
  EXPECT_TRUE(backward_l2_prefetch(backward_row_config(backward_problem(32768, 2), false)));
  // Shorter rows (they tied or lost with it), rows shared by one CTA, the 2-chunk tile, the
  // long-row tile (which prefetches its next row anyway) and streaming rows: not.
  for (std::int64_t n : {256, 1024, 4096, 8192, 16384}) {
    EXPECT_FALSE(backward_l2_prefetch(backward_row_config(backward_problem(n, 2), false))) << n;
    EXPECT_FALSE(backward_l2_prefetch(backward_row_config(backward_problem(n, 2), true, BwdWeightSlots::packed))) << n;
  }
  EXPECT_FALSE(backward_l2_prefetch(backward_row_config(backward_problem(8192, 4), true)));
  EXPECT_FALSE(backward_l2_prefetch(backward_row_config(backward_problem(16384, 2), true)));  // 2-chunk tile
  EXPECT_FALSE(backward_l2_prefetch(backward_row_config(backward_problem(262144, 4), true)));  // 8-chunk tile
  EXPECT_FALSE(backward_l2_prefetch(backward_row_config(backward_problem(1 << 22, 4), true)));  // streaming
}

TEST(BackwardRowConfig, FastHbmPrefetchesWhereTheSmHoldsFewWarpsOfTheTile) {
  auto ahead = [](std::int64_t n, int eb, bool ln, bool fast, BwdWeightSlots slots = BwdWeightSlots::fp32) {
    return backward_l2_prefetch(backward_row_config(backward_problem(n, eb), ln, slots), ln, eb, fast);
  };
  for (bool ln : {false, true}) {
    // 16-bit one-CTA rows of 8 and 16 warps (two / one CTA an SM: 16 warps), cluster rows of the
    // 4-chunk tile and the fp32 weight's 2-chunk cluster rows: on fast HBM only.
    for (std::int64_t n : {4096, 8192, 16384}) {
      EXPECT_TRUE(ahead(n, 2, ln, true, BwdWeightSlots::packed)) << n << " " << ln;
      EXPECT_FALSE(ahead(n, 2, ln, false, BwdWeightSlots::packed)) << n << " " << ln;
    }
    EXPECT_TRUE(ahead(16384, 2, ln, true)) << ln;
    // Rows whose SM holds 18-20 of the tile's warps (128-, 192- and 320-thread CTAs at 96
    // registers; 6144's pair of 192), several rows a CTA, the fp32 2-chunk tile (no kAhead build).
    for (std::int64_t n : {256, 1024, 2048, 3072, 5120, 6144}) EXPECT_FALSE(ahead(n, 2, ln, true)) << n << " " << ln;
    EXPECT_FALSE(ahead(2048, 4, ln, true)) << ln;
  }
  // The rule's every pick on fast HBM: one row a CTA, a tile with a kAhead build, at most
  // kAheadMaxWarps of its warps an SM unless the row passes 64 KiB an operand on the 4-chunk tile.
  for (bool ln : {false, true})
    for (int eb : {2, 4})
      for (std::int64_t n = 64; n <= 300000; n += n < 20000 ? 8 : 1024) {
        const RowConfig c = backward_row_config(backward_problem(n, eb), ln);
        const bool tight = backward_tight_layer_norm(c, eb, false);
        const int regs = backward_tile_regs(c.items, ln, eb, tight);
        if (!backward_l2_prefetch(c, ln, eb, true)) continue;
        const std::string where = std::to_string(eb) + "-byte n=" + std::to_string(n) + ": " + c.str();
        ASSERT_EQ(c.rows_per_cta, 1) << where;
        ASSERT_TRUE(c.items == kBackwardItems || (c.items == 2 && eb == 2)) << where;
        ASSERT_FALSE(tight) << where;
        if (!backward_l2_prefetch(c)) ASSERT_LE(ctas_an_sm_by_registers(regs, c.cta_threads) * c.cta_threads / 32, kAheadMaxWarps) << where;
      }
}

TEST(BackwardRowConfig, OneCtaRowsAloneOnTheirSmTakeTheFourChunkTile) {
  // 16-bit rows whose 2-chunk CTA is past 256 threads: at 96 registers (RMSNorm's kernels,
  // LayerNorm's typed one) the SM holds two, so the 2-chunk tile stays (4608: 18 warps against the
  // 4-chunk tile's 15).
  for (std::int64_t n : {4104, 4608, 5120})
    for (bool ln : {false, true}) {
      const RowConfig c = backward_row_config(backward_problem(n, 2), ln);
      EXPECT_EQ(c.items, 2) << n;
      EXPECT_GT(c.cta_threads, 256) << n;
      EXPECT_EQ(ctas_an_sm_by_registers(backward_tile_regs(2, ln, 2, ln), c.cta_threads), 2) << n;
      EXPECT_TRUE(backward_tight_layer_norm(c, 2, false)) << n;  // LayerNorm's kernel apart
    }
  // Where the 4-chunk tile would hold about as many, the 2-chunk tile stays: 7168 (14 warps
  // against 14), 7680 (15 against 16).
  for (std::int64_t n : {7168, 7680}) EXPECT_EQ(backward_row_config(backward_problem(n, 2), true).items, 2) << n;
  // Framed 16-bit rows by the same measure: LayerNorm's 4095, on its 128-register kernel, takes it
  // (9 warps against 15), RMSNorm's does not (18 against 15), nor 3071.
  RowProblem framed = backward_problem(4095, 2);
  framed.frames_vary = true;
  EXPECT_EQ(backward_row_config(framed, true).items, kBackwardItems);
  EXPECT_EQ(backward_row_config(framed, false).items, 2);
  framed.n = 3071;
  EXPECT_EQ(backward_row_config(framed, true).items, 2);
  // fp32 rows keep the 2-chunk tile when aligned (their RMSNorm kernels sit far under the bound).
  EXPECT_EQ(backward_row_config(backward_problem(2560, 4), true).items, 2);
  // RMSNorm's 16-bit 6144 (one 384-thread CTA an SM, 12 warps) on two CTAs of 192 (three an SM).
  const RowConfig pair = backward_row_config(backward_problem(6144, 2), false);
  EXPECT_EQ(pair.items, 2);
  EXPECT_EQ(pair.cluster_size, 2);
  EXPECT_EQ(pair.cta_threads, 192);
  // 8192 keeps one CTA of 512 (16 warps); 7168's pair (2 x 224, two an SM) would hold 14 warps
  // against its one CTA's 14: it stays.
  EXPECT_EQ(backward_row_config(backward_problem(8192, 2), false).cluster_size, 1);
  EXPECT_EQ(backward_row_config(backward_problem(7168, 2), false).cluster_size, 1);
}

TEST(BackwardRowConfig, Short16BitRowsTakeTheTwoChunkTileSeveralACta) {
  // Up to a warp of 4-chunk threads (128 chunks: 1024 16-bit): the 2-chunk tile, a warp slice or
  // two warps a row, several rows a CTA of 128; aligned and in their frame.
  for (std::int64_t n : {64, 255, 256, 512, 760, 1015, 1024})
    for (bool ln : {false, true}) {
      RowProblem prob = backward_problem(n, 2);
      prob.frames_vary = n % 8 != 0;
      const RowConfig c = backward_row_config(prob, ln);
      EXPECT_EQ(c.items, 2) << n;
      EXPECT_EQ(c.cta_threads, 128) << n;
      EXPECT_GE(c.rows_per_cta, 2) << n;
      EXPECT_GE(static_cast<std::int64_t>(c.items) * c.threads_per_row, c.chunks) << n;
      // LayerNorm's aligned ones on the 96-register kernel: five 128-thread CTAs an SM, not four.
      if (ln) EXPECT_EQ(backward_tight_layer_norm(c, 2, prob.frames_vary), !prob.frames_vary) << n;
    }
  // fp32 rows keep the 4-chunk tile; longer 16-bit rows one CTA a row.
  EXPECT_EQ(backward_row_config(backward_problem(256, 4), true).items, kBackwardItems);
  EXPECT_EQ(backward_row_config(backward_problem(2048, 2), true).rows_per_cta, 1);
}

TEST(BackwardRowConfig, LayerNorm16BitTakesThe96RegisterKernelWhereItHoldsMoreCtas) {
  // 3072: 192 threads, three CTAs an SM at 96 registers, two at 128.
  const RowConfig c3072 = backward_row_config(backward_problem(3072, 2), true);
  EXPECT_EQ(c3072.items, 2);
  EXPECT_EQ(c3072.cta_threads, 192);
  EXPECT_TRUE(backward_tight_layer_norm(c3072, 2, false));
  EXPECT_EQ(ctas_an_sm_by_registers(backward_tile_regs(2, true, 2, true), c3072.cta_threads), 3);
  // Not fp32 rows, nor rows in their frame (136 bytes of spill).
  EXPECT_FALSE(backward_tight_layer_norm(c3072, 4, false));
  EXPECT_FALSE(backward_tight_layer_norm(c3072, 2, true));
  // 4096: two 256-thread CTAs an SM at either bound: the 128-register kernel.
  EXPECT_FALSE(backward_tight_layer_norm(backward_row_config(backward_problem(4096, 2), true), 2, false));
  // 6144: the pair cluster of 192-thread CTAs, on the 96-register kernel (18 warps against 12).
  const RowConfig pair = backward_row_config(backward_problem(6144, 2), true);
  EXPECT_EQ(pair.cluster_size, 2);
  EXPECT_EQ(pair.cta_threads, 192);
  EXPECT_TRUE(backward_tight_layer_norm(pair, 2, false));
  // fp32 rows keep one CTA (their LayerNorm kernel at 128 holds no more as a pair).
  EXPECT_EQ(backward_row_config(backward_problem(3072, 4), true).cluster_size, 1);
}

TEST(BackwardRowConfig, LayerNorm16BitClusterRowsTakeTwoChunksOnUpToFourCtas) {
  // 9000..16384: 2 chunks a thread, twice the CTAs of RMSNorm's 4-chunk layout, 4 at most.
  for (std::int64_t n : {9000, 12288, 16384}) {
    const RowConfig ln = backward_row_config(backward_problem(n, 2), true);
    const RowConfig rms = backward_row_config(backward_problem(n, 2), false);
    EXPECT_EQ(ln.items, kLayerNormClusterItems) << n;
    EXPECT_EQ(rms.items, kBackwardItems) << n;
    EXPECT_EQ(ln.cluster_size, 2 * rms.cluster_size) << n;
    EXPECT_LE(ln.cluster_size, kLayerNormTwoChunkCluster);
  }
  // Past that (it would take 6 to 16 CTAs): RMSNorm's 4-chunk layout. Rows in their frame keep
  // the 2-chunk tile on up to 16 CTAs.
  for (std::int64_t n : {16392, 24576, 32768, 65536}) {
    const RowConfig ln = backward_row_config(backward_problem(n, 2), true);
    const RowConfig rms = backward_row_config(backward_problem(n, 2), false);
    EXPECT_EQ(ln.items, kBackwardItems) << n;
    EXPECT_EQ(ln.cluster_size, rms.cluster_size) << n;
    EXPECT_EQ(ln.cta_threads, rms.cta_threads) << n;
  }
  for (std::int64_t n : {16383, 24575, 32767, 50257}) {
    RowProblem framed = backward_problem(n, 2);
    framed.frames_vary = true;
    EXPECT_EQ(backward_row_config(framed, true).items, kLayerNormClusterItems) << n;
    EXPECT_GT(backward_row_config(framed, true).cluster_size, kLayerNormTwoChunkCluster) << n;
  }
  // 131072 would take 2 chunks on 512-thread CTAs: the 4-chunk tile on 8 CTAs of 512 instead.
  const RowConfig ln131 = backward_row_config(backward_problem(131072, 2), true);
  EXPECT_EQ(ln131.items, kBackwardItems);
  EXPECT_EQ(ln131.cluster_size, kLayerNormMaxCluster);
  EXPECT_EQ(ln131.cta_threads, 512);
  EXPECT_EQ(backward_row_config(backward_problem(131072, 2), false).cluster_size, 16);  // RMSNorm: 4 x 256 x 16
  // 262144 does not fit 2 chunks on 16 CTAs, nor 4 on 8: the 4-chunk tile, as RMSNorm; one-CTA
  // rows and fp32 rows are unchanged.
  EXPECT_EQ(backward_row_config(backward_problem(262144, 2), true).items, kBackwardItems);
  EXPECT_EQ(backward_row_config(backward_problem(262144, 2), true).cluster_size, 16);
  for (std::int64_t n : {1024, 4096, 8192}) {
    const RowConfig ln = backward_row_config(backward_problem(n, 2), true);
    const RowConfig rms = backward_row_config(backward_problem(n, 2), false);
    EXPECT_EQ(ln.items, rms.items) << n;
    EXPECT_EQ(ln.cluster_size, rms.cluster_size) << n;
    EXPECT_EQ(ln.cta_threads, rms.cta_threads) << n;
  }
  for (std::int64_t n : {16384, 65536, 262144}) {
    EXPECT_EQ(backward_row_config(backward_problem(n, 4), true).items,
              backward_row_config(backward_problem(n, 4), false).items) << n;
  }
}

// The cross-entropy forward: rows a 512-thread team holds stay resident; layouts of two CTAs an
// SM or fewer (past 320 threads at 64 registers) go to 256-thread CTAs, up to 8 of them; the
// loss alone of a longer row streams.
TEST(CrossEntropyRowConfig, NarrowCtasUpToEightAndLongLossRowsStream) {
  auto prob = [](std::int64_t n, int eb) {
    RowProblem p;
    p.n = n;
    p.elem_bytes = eb;
    p.max_items = cross_entropy_max_items(eb);
    p.regs_per_thread = 64;  // the 8-chunk kernels' count (two 512-thread CTAs an SM)
    return p;
  };
  struct Case { std::int64_t n; int eb; bool gradient; int ctas, threads; };
  for (const Case& k : {Case{16384, 2, false, 1, 256}, Case{16384, 2, true, 1, 256}, Case{32768, 2, false, 2, 256},
                        Case{32768, 2, true, 2, 256}, Case{20000, 2, false, 1, 320}, Case{24576, 2, false, 2, 192}, Case{65536, 2, true, 4, 256},
                        Case{131072, 2, true, 8, 256}, Case{262144, 2, true, 8, 512}, Case{16384, 4, false, 2, 256},
                        Case{32768, 4, true, 4, 256}, Case{131072, 4, true, 8, 512}}) {
    const RowConfig c = cross_entropy_row_config(prob(k.n, k.eb), k.gradient, 32768, 132);
    EXPECT_FALSE(c.streaming()) << k.n;
    EXPECT_EQ(c.cluster_size, k.ctas) << k.n;
    EXPECT_EQ(c.threads_per_row, k.threads) << k.n;
    EXPECT_GE(static_cast<std::int64_t>(c.items) * c.threads_per_row * c.cluster_size * 16 / k.eb, k.n) << k.n;
  }
  // The loss alone past a 512-thread team: streamed, one CTA a row (a cluster past 56 chunks a
  // thread: 262144).
  for (std::int64_t n : {32776, 50257, 65536, 262144}) {
    const RowConfig c = cross_entropy_row_config(prob(n, 2), false, 32768, 132);
    EXPECT_TRUE(c.streaming()) << n;
    EXPECT_EQ(c.cluster_size, n == 262144 ? 4 : 1) << n;
  }
}

// The measurement switches (core/variants.h): names round-trip, lists parse to their bits, and
// a name that is not a variant is an error, not a silently unchanged run.
TEST(Variants, NamesParseToTheirBits) {
  std::string all;
  for (unsigned i = 0; i < static_cast<unsigned>(Variant::count); ++i) {
    const char* name = variant_name(static_cast<Variant>(i));
    EXPECT_EQ(parse_disabled_variants(name), 1u << i) << name;
    all += std::string(all.empty() ? "" : ",") + name;
  }
  EXPECT_EQ(parse_disabled_variants(all), (1u << static_cast<unsigned>(Variant::count)) - 1);
  EXPECT_EQ(parse_disabled_variants(""), 0u);
  EXPECT_EQ(parse_disabled_variants("whole,,full_tile,"),
            (1u << static_cast<unsigned>(Variant::whole)) | (1u << static_cast<unsigned>(Variant::full_tile)));
  EXPECT_THROW(parse_disabled_variants("whole,wholes"), Error);
  EXPECT_THROW(parse_disabled_variants(" whole"), Error);
}

}  // namespace
}  // namespace tachyon::detail

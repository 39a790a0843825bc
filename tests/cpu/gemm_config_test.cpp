// The GEMM plan on the CPU: tile, cluster, swap, stages, persistent grid and the raster
// schedule, as pure functions of the shape.
#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "gemm/gemm_config.h"
#include "gemm/scheduler.h"

namespace tachyon::detail::gemm {
namespace {

GemmProblem h100(std::int64_t m, std::int64_t n, std::int64_t k, bool b_k_major = true) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.b_k_major = b_k_major;
  p.sm_count = 132;
  p.smem_per_block = 232448;
  return p;
}

TEST(GemmConfig, LargeSquareUses128x256TwoCtaClustersAnd128Ctas) {
  GemmConfig c = choose_gemm_config(h100(8192, 8192, 8192));
  EXPECT_EQ(c.path, GemmPath::tma_wgmma);
  EXPECT_EQ(c.block_m, 128);
  EXPECT_EQ(c.block_n, 256);
  EXPECT_EQ(c.block_k, 64);
  EXPECT_EQ(c.cluster_m, 2);
  EXPECT_FALSE(c.swap_ab);
  EXPECT_TRUE(c.tma_store);
  EXPECT_EQ(c.stages, 4);  // 4 x 48 KiB + 32 KiB epilogue fills the 227 KiB
  EXPECT_EQ(c.units, 32 * 32);
  EXPECT_EQ(c.ctas, 128);  // 1024 units on 66 cluster slots: 16 full waves of 64
  EXPECT_LE(c.smem_bytes, 232448u);
}

TEST(GemmConfig, StagesFillSharedMemory) {
  for (int bn : {64, 128, 256}) {
    int s = gemm_max_stages(bn, 232448);
    ASSERT_GE(s, 2) << bn;
    EXPECT_LE(gemm_smem_bytes(bn, s), 232448u);
    if (s < kMaxStages) EXPECT_GT(gemm_smem_bytes(bn, s + 1), 232448u) << bn;
  }
  EXPECT_EQ(gemm_max_stages(256, 232448), 4);
  EXPECT_EQ(gemm_max_stages(128, 232448), 6);
  EXPECT_EQ(gemm_max_stages(64, 232448), 8);
  EXPECT_EQ(gemm_max_stages(256, 48 * 1024), 0);  // too small: the plan falls back
}

TEST(GemmConfig, PersistentGridBalancesWaves) {
  EXPECT_EQ(gemm_persistent_ctas(1024, 2, 66), 128);
  EXPECT_EQ(gemm_persistent_ctas(64, 2, 66), 128);
  EXPECT_EQ(gemm_persistent_ctas(66, 2, 66), 132);
  EXPECT_EQ(gemm_persistent_ctas(67, 2, 66), 68);  // 2 waves of 34 clusters
  EXPECT_EQ(gemm_persistent_ctas(5, 1, 132), 5);
  EXPECT_EQ(gemm_persistent_ctas(0, 2, 66), 0);
}

TEST(GemmConfig, EveryShapeOfTheSuiteGetsAValidPlan) {
  const std::vector<std::vector<std::int64_t>> shapes = {
      {8192, 8192, 8192}, {4096, 4096, 4096},  {16384, 16384, 16384}, {2048, 2048, 2048},
      {8192, 6144, 4096}, {8192, 4096, 4096},  {8192, 28672, 4096},   {8192, 4096, 14336},
      {128, 8192, 8192},  {512, 8192, 8192},   {1024, 28672, 4096}};
  for (const auto& s : shapes)
    for (bool kmaj : {true, false}) {
      GemmConfig c = choose_gemm_config(h100(s[0], s[1], s[2], kmaj));
      SCOPED_TRACE(c.str());
      EXPECT_EQ(c.path, GemmPath::tma_wgmma);
      EXPECT_TRUE(c.block_n == 256 || c.block_n == 128 || (c.block_n == 64 && kmaj));
      EXPECT_GE(c.stages, 2);
      EXPECT_LE(c.smem_bytes, 232448u);
      EXPECT_EQ(c.ctas % c.cluster_m, 0);
      EXPECT_LE(c.ctas, 132);
      EXPECT_GE(c.ctas, c.cluster_m);
      EXPECT_LE(c.ctas / c.cluster_m, c.units);
      EXPECT_EQ(c.tiles_m, (c.kernel_m + 127) / 128);
      EXPECT_EQ(c.tiles_n, (c.kernel_n + c.block_n - 1) / c.block_n);
      if (!kmaj) EXPECT_FALSE(c.swap_ab);
    }
}

TEST(GemmConfig, SmallMUsesNarrowTilesToFillTheMachine) {
  // M = 128: a 128 x 256 tile would leave 100 of 132 SMs idle.
  GemmConfig c = choose_gemm_config(h100(128, 8192, 8192));
  EXPECT_LT(c.block_n, 256) << c.str();
  EXPECT_GE(c.ctas, 64) << c.str();
  // M = 32, N = 28672: swapping puts the long dimension on the 128-row side.
  GemmConfig s = choose_gemm_config(h100(32, 28672, 4096));
  EXPECT_TRUE(s.swap_ab) << s.str();
  EXPECT_EQ(s.kernel_m, 28672);
  EXPECT_EQ(s.kernel_n, 32);
  EXPECT_FALSE(s.tma_store);  // the transposed output goes out through direct stores
  // Swapping needs B (N, K): with B (K, N) the kernel's A would be MN-major.
  EXPECT_FALSE(choose_gemm_config(h100(32, 28672, 4096, false)).swap_ab);
}

TEST(GemmConfig, WhatTmaCannotDescribeFallsBack) {
  GemmProblem p = h100(1000, 1000, 4099);
  p.a_tma = false;  // bf16 row stride 8198 bytes
  EXPECT_EQ(choose_gemm_config(p).path, GemmPath::fallback);
  p = h100(64, 64, 64);
  p.b_tma = false;
  EXPECT_EQ(choose_gemm_config(p).path, GemmPath::fallback);
  EXPECT_EQ(choose_gemm_config(h100(64, 64, 0)).path, GemmPath::fallback);
  // An output TMA cannot store keeps the fast mainloop with direct stores.
  p = h100(1000, 127, 4096);
  p.d_tma = false;
  GemmConfig c = choose_gemm_config(p);
  EXPECT_EQ(c.path, GemmPath::tma_wgmma);
  EXPECT_FALSE(c.tma_store);
}

TEST(GemmConfig, OverridesApply) {
  GemmOverrides o;
  o.ctas = 132;
  o.raster_group = 4;
  GemmConfig c = choose_gemm_config(h100(8192, 8192, 8192), o);
  EXPECT_EQ(c.ctas, 132);
  EXPECT_EQ(c.raster_group, 4);
  o = {};
  o.block_n = 128;
  o.cluster_m = 1;
  c = choose_gemm_config(h100(8192, 8192, 8192), o);
  EXPECT_EQ(c.block_n, 128);
  EXPECT_EQ(c.cluster_m, 1);
  o = {};
  o.ctas = 7;  // rounded down to the cluster size
  c = choose_gemm_config(h100(8192, 8192, 8192), o);
  EXPECT_EQ(c.ctas, 6);
  o = {};
  o.stages = 3;  // fewer stages than fit, and the shared memory follows
  c = choose_gemm_config(h100(8192, 8192, 8192), o);
  EXPECT_EQ(c.stages, 3);
  EXPECT_EQ(c.smem_bytes, gemm_smem_bytes(c.block_n, 3));
  o.order = 1;
  EXPECT_TRUE(choose_gemm_config(h100(8192, 8192, 8192), o).snake);
  o.order = 0;
  o.stages = 64;  // never more than fit
  EXPECT_EQ(choose_gemm_config(h100(8192, 8192, 8192), o).stages, choose_gemm_config(h100(8192, 8192, 8192)).stages);
}

TEST(GemmConfig, OddTileRowsAvoidHalfEmptyClusters) {
  GemmConfig c = choose_gemm_config(h100(384, 8192, 4096));  // 3 tile rows
  EXPECT_EQ(c.cluster_m, 1) << c.str();
  c = choose_gemm_config(h100(8192 + 128, 8192, 4096));  // 65 tile rows: one idle partner of 33
  EXPECT_EQ(c.cluster_m, 2) << c.str();
}

// Every tile is computed exactly once, by a CTA whose cluster partner shares its column.
TEST(TileScheduler, CoversEveryTileOnce) {
  for (int units_m : {1, 3, 8, 13})
    for (int units_n : {1, 5, 32})
      for (int group : {1, 4, 8})
        for (int cluster : {1, 2})
          for (int snake : {0, 1}) {
            TileScheduler s{units_m, units_n, group, cluster, snake};
            std::set<std::pair<int, int>> seen;
            for (int u = 0; u < s.num_units(); ++u) {
              int um, un;
              s.unit_coords(u, &um, &un);
              ASSERT_GE(um, 0);
              ASSERT_LT(um, units_m);
              ASSERT_GE(un, 0);
              ASSERT_LT(un, units_n);
              for (int r = 0; r < cluster; ++r) {
                int tm, tn;
                s.tile_coords(u, r, &tm, &tn);
                EXPECT_EQ(tn, un);
                EXPECT_TRUE(seen.insert({tm, tn}).second) << "tile visited twice";
              }
            }
            EXPECT_EQ(static_cast<int>(seen.size()), units_m * units_n * cluster);
          }
}

// The serpentine order: each step moves to a neighbouring unit (shares its A rows or its B
// columns), also across column and group seams.
TEST(TileScheduler, SnakeStepsToNeighbours) {
  for (int units_m : {3, 8, 13})
    for (int group : {1, 4, 8}) {
      TileScheduler s{units_m, 5, group, 1, 1};
      int pm = -1, pn = -1;
      for (int u = 0; u < s.num_units(); ++u) {
        int um, un;
        s.unit_coords(u, &um, &un);
        if (u > 0) EXPECT_TRUE(um == pm || un == pn) << "unit " << u << " jumps";
        pm = um;
        pn = un;
      }
    }
}

// Consecutive units (those resident at the same time) stay inside a group of rows.
TEST(TileScheduler, RasterGroupsKeepResidentTilesCompact) {
  TileScheduler s{32, 32, 8, 2};
  std::set<int> rows, cols;
  for (int u = 0; u < 64; ++u) {
    int um, un;
    s.unit_coords(u, &um, &un);
    rows.insert(um);
    cols.insert(un);
  }
  EXPECT_EQ(rows.size(), 8u);
  EXPECT_EQ(cols.size(), 8u);
}

}  // namespace
}  // namespace tachyon::detail::gemm

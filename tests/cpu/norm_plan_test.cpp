// What plan_norm_forward promises for every forward call, checked over row lengths from 1 to
// past a 16-CTA cluster's reach, every dtype, operand set (typed, whole, mixed, fused, fp32
// weight), misaligned frames, with and without clusters, and kernels of several register
// counts: the build is one the operands allow, the row fits its team's tiles, the CTA fits the
// SM's register file and shared memory, and long rows keep enough bytes in flight to cover
// HBM latency at the H200's bandwidth; and every tile built is one some plan picks. It does not
// pin which layout a shape gets today (row_build_test.cpp and row_config_test.cpp do that).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/row_config.h"
#include "norm/norm_params.h"

namespace tachyon::detail {
namespace {

// Hopper's per-SM limits (H100 and H200: the same SM; registers: ctas_an_sm_by_registers).
constexpr int kThreadsPerSm = 2048;
constexpr int kCtasPerSm = 32;
constexpr std::size_t kSharedPerSm = 228 * 1024;
constexpr std::size_t kSharedReservedPerCta = 1024;
constexpr std::size_t kSharedOptInPerCta = 227 * 1024;  // cudaDevAttrMaxSharedMemoryPerBlockOptin
// Little's law at the faster HBM: 4.8 TB/s over 132 SMs is ~36 bytes a ns an SM; at ~800 ns
// of loaded-memory latency that is ~29 KB an SM in flight. Resident rows issue all of a
// thread's chunks before the reduction, so a CTA has cta_threads x items x 16 bytes in flight.
constexpr double kBytesInFlightPerSm = 36.4 * 800;

// The registers the plan is told the 8-chunk tile of a build has: unbounded builds take
// `g_regs`, the builds bounded to two 512-thread CTAs an SM at most 64. The run-time-dtype
// (generic) build's fp32 tile, at 64-68 (cuobjdump), at most 80: a register-partition step above
// it (at 81-88 its 224-thread CTAs would run two an SM, 1.5 % short of Little's law for 16-bit x).
int g_regs = 72;
int regs_of(const NormFwdProblem&, NormFwdMode mode) {
  const bool bounded = mode == NormFwdMode::whole_cluster || is_fused_grouped(mode);
  if (mode == NormFwdMode::generic) return std::min(g_regs, 80);
  return bounded ? std::min(g_regs, 64) : g_regs;
}
// Other tiles, for the occupancy checks: a chunk held in registers is 16 bytes, 4 registers.
int tile_regs(int regs8, int items, bool bounded) {
  const int r = std::max(24, regs8 + 4 * (items - 8));
  return bounded ? std::min(r, 64) : std::min(r, 255);
}

std::vector<std::int64_t> row_lengths() {
  std::vector<std::int64_t> n;
  for (std::int64_t i = 1; i <= 1100; ++i) n.push_back(i);
  for (std::int64_t p = 2048; p <= (std::int64_t{1} << 21); p *= 2)
    for (std::int64_t d : {-9, -1, 0, 1, 7}) n.push_back(p + d);
  for (std::int64_t v : {3072, 5120, 7168, 9216, 32000, 50257, 128256, 151936, 600000, 786432, 1000003}) n.push_back(v);
  return n;
}

struct Operands {
  const char* name;
  bool typed, whole, fused, wide;
  bool framed = false;  // rows off the 16-byte grid that x and y frame alike (NormFwdProblem::framed_rows)
};

int ctas_per_sm(const RowConfig& c, int regs, std::size_t smem) {
  int ctas = std::min(kCtasPerSm, kThreadsPerSm / c.cta_threads);
  ctas = std::min(ctas, ctas_an_sm_by_registers(regs, c.cta_threads));
  ctas = std::min<int>(ctas, static_cast<int>(kSharedPerSm / (smem + kSharedReservedPerCta)));
  return ctas;
}

TEST(NormForwardPlan, KeepsItsPromisesForEveryRowLength) {
  const std::vector<Operands> operand_sets = {
      {"whole", true, true, false, false},   {"typed", true, false, false, false},
      {"mixed", false, false, false, false}, {"fp32 weight", true, true, false, true},
      {"fused", true, false, true, false},   {"fused whole", true, true, true, false},
      {"fused fp32 weight", true, true, true, true}, {"fused mixed", false, false, true, false},
      {"framed", true, false, false, false, true},
      {"framed fp32 weight", true, false, false, true, true}};
  std::set<std::string> builds_seen;
  std::set<std::tuple<int, bool, NormFwdMode, int>> tiles_seen;  // element bytes, LayerNorm, build, items
  long long plans = 0;
  // The 8-chunk tiles have 62-84 registers (ptxas -v, sm_90a).
  for (int regs : {40, 64, 72, 80, 88})
    for (DType dt : {DType::f32, DType::f16, DType::bf16})
      for (bool ln : {false, true})
        for (const Operands& o : operand_sets) {
          if (ln && o.fused) continue;                   // LayerNorm has no fused residual
          if (o.wide && dt == DType::f32) continue;      // fp32 rows: the weight is their dtype
          for (bool frames_vary : {false, true})
            for (int max_cluster : {16, 1})
              for (std::int64_t n : row_lengths()) {
                if (o.whole && (frames_vary || n % (16 / static_cast<int>(dtype_size(dt))) != 0)) continue;
                g_regs = regs;
                NormFwdProblem q;
                q.rows.n = n;
                q.rows.elem_bytes = static_cast<int>(dtype_size(dt));
                q.rows.frames_vary = frames_vary;
                q.rows.max_cluster = max_cluster;
                q.storage = dt;
                q.layer_norm = ln;
                q.fused = o.fused;
                q.typed = o.typed;
                q.whole_rows = o.whole && !o.fused;
                q.whole_fused = o.whole && o.fused;
                q.wide_weight = o.wide;
                q.framed_rows = o.framed;
                const NormFwdPlan plan = plan_norm_forward(q, regs_of);
                const RowConfig& c = plan.cfg;
                const std::string where = std::string(o.name) + " " + dtype_name(dt) + (ln ? " LayerNorm" : " RMSNorm") +
                                          " n=" + std::to_string(n) + " regs=" + std::to_string(regs) +
                                          (frames_vary ? " misaligned" : "") + " max_cluster=" +
                                          std::to_string(max_cluster) + ": " + c.str();
                ++plans;
                builds_seen.insert(std::to_string(static_cast<int>(plan.mode)) + "/" + std::to_string(c.items));
                // The element bytes the kernel keeps the row in (the generic build: fp32).
                const int kept = forward_elem_bytes(plan.mode, q.rows.elem_bytes);
                tiles_seen.insert({kept, ln, plan.mode, c.items});

                // The build is one the operands allow.
                if (!o.typed) ASSERT_EQ(plan.mode, NormFwdMode::generic) << where;
                if (plan.mode == NormFwdMode::whole || plan.mode == NormFwdMode::whole_cluster)
                  ASSERT_TRUE(q.whole_rows) << where;
                if (is_fused_grouped(plan.mode)) ASSERT_TRUE(o.fused && !ln) << where;
                if (plan.mode == NormFwdMode::framed) ASSERT_TRUE(q.framed_rows && !q.whole_rows) << where;
                // Framed rows take the framed build, or typed's where its layout wants a tile the
                // framed build lacks.
                if (o.framed) ASSERT_TRUE(plan.mode == NormFwdMode::framed || plan.mode == NormFwdMode::typed) << where;
                if (plan.full_tile) ASSERT_TRUE(q.whole_rows || q.whole_fused) << where;
                // Framed rows past one warp of 8 chunks that one CTA can hold take one (the frame's
                // extra chunk would otherwise cost a cluster twice the size at 2^k - 1 columns): on
                // the 4-chunk tile to 512 x 4 chunks, then the 8-chunk tile.
                if (plan.mode == NormFwdMode::framed && c.chunks > 32 * 8 && c.chunks <= 512LL * 8) {
                  ASSERT_EQ(c.cluster_size, 1) << where;
                  ASSERT_EQ(c.items, c.chunks <= 512LL * 4 ? 4 : 8) << where;
                }

                // Whole rows that fill a CTA of 4-chunk threads exactly, and no CTA of 8-chunk ones,
                // take the 4-chunk full tile (5120 bf16: 4 x 160).
                if (plan.mode == NormFwdMode::whole && c.chunks > 128 * 4 && c.chunks <= 512LL * 4 &&
                    c.chunks % (32 * 4) == 0 && c.chunks % (32 * 8) != 0) {
                  ASSERT_EQ(c.cluster_size, 1) << where;
                  ASSERT_EQ(c.items, 4) << where;
                  ASSERT_EQ(c.threads_per_row * 4, c.chunks) << where;
                }

                // A team the hardware can launch.
                ASSERT_GE(c.cta_threads, 32) << where;
                ASSERT_LE(c.cta_threads, kMaxRowThreads) << where;
                ASSERT_EQ(c.cta_threads % 32, 0) << where;
                ASSERT_EQ(c.threads_per_row * c.rows_per_cta, c.cta_threads) << where;
                ASSERT_TRUE(c.cluster_size == 1 || c.cluster_size == 2 || c.cluster_size == 4 ||
                            c.cluster_size == 8 || c.cluster_size == 16) << where;
                ASSERT_LE(c.cluster_size, max_cluster) << where;
                ASSERT_TRUE(c.rows_per_cta == 1 || c.cluster_size == 1) << where;  // a cluster holds one row

                // Fused rows into fp32 storage from other dtypes load every chunk before a store:
                // on a tile of at most kFusedAheadItems, else streaming.
                const bool fused_f32 = o.fused && plan.mode == NormFwdMode::generic && dt == DType::f32;
                if (fused_f32) ASSERT_TRUE(c.streaming() || c.items <= kFusedAheadItems) << where;
                if (c.streaming()) {
                  // Streaming only past what the widest resident team holds (those fused rows: at
                  // kFusedAheadItems).
                  const int items = fused_f32 ? kFusedAheadItems : kForwardMaxItems;
                  const std::int64_t most = static_cast<std::int64_t>(max_cluster) * kMaxRowThreads * items;
                  ASSERT_GT(c.chunks, most) << where;
                  continue;
                }
                // Fused rows one CTA holds at 4 chunks load them all before a store, on that CTA.
                if (o.fused && plan.mode == NormFwdMode::typed && c.chunks <= 1LL * kMaxRowThreads * kFusedAheadItems) {
                  ASSERT_LE(c.items, kFusedAheadItems) << where;
                  ASSERT_EQ(c.cluster_size, 1) << where;
                }
                // The row fits its team's register tiles, with a tile that is built.
                ASSERT_TRUE(std::count(std::begin(kRowItems), std::end(kRowItems), c.items) == 1) << where;
                ASSERT_TRUE(forward_tile_built(kept, plan.mode, c.items)) << where;
                ASSERT_GE(static_cast<std::int64_t>(c.items) * c.threads_per_row * c.cluster_size, c.chunks) << where;

                // The CTA fits an SM: registers, shared memory for the staged weight and bias.
                const NormFwdMode build = forward_kernel_build(plan.mode, c.items);
                const int wbytes = o.wide ? 4 : static_cast<int>(dtype_size(dt));
                const bool bounded = build == NormFwdMode::whole_cluster || is_fused_grouped(build);
                const int r = tile_regs(regs_of(q, build), c.items, bounded);
                const std::size_t smem =
                    forward_stage_bytes(c, build, ln, wbytes, ln ? wbytes : 0, ctas_per_sm(c, r, 0));
                ASSERT_LE(smem, 64u * 1024) << where;
                // The builds of fixed staging compile one path: the plan keeps to it. The cap an SM
                // holds but for the always-staged build modelled below its 64 registers.
                const Staging fixed = forward_staging(ln, build, static_cast<int>(dtype_size(dt)));
                if (fixed == Staging::always) ASSERT_GT(smem, 0u) << where;
                // The bounded build is LayerNorm's, not with an fp32 weight beside 16-bit rows
                // (forward_mode_for_config).
                if (!ln || o.wide) ASSERT_NE(build, NormFwdMode::whole_cluster) << where;
                if (fixed != Staging::always || r >= 64)
                  ASSERT_LE(smem * ctas_per_sm(c, r, smem), kForwardStagePerSm) << where;
                ASSERT_GE(ctas_per_sm(c, r, smem), 1) << where;

                // Long rows keep Little's law's bytes in flight an SM (short rows run many rows a
                // CTA and are bound by per-row work, not by bytes in flight).
                if (n * static_cast<std::int64_t>(dtype_size(dt)) >= 8192) {
                  const double in_flight = static_cast<double>(ctas_per_sm(c, r, smem)) * c.cta_threads * c.items * c.vec *
                                           static_cast<double>(dtype_size(dt));  // x's bytes
                  ASSERT_GE(in_flight, kBytesInFlightPerSm) << where;
                }
              }
        }
  // The sweep reached every kind of build (a plan that never left one build would pass the
  // checks above vacuously).
  for (const char* b : {"0/8", "1/8", "2/8", "3/8", "4/8", "2/4", "5/4", "5/8"})
    EXPECT_TRUE(builds_seen.count(b)) << "no plan took build/items " << b;
  // And the converse: every tile built for the generic, typed and whole builds is one some plan
  // picks (a tile no plan reaches is a kernel compiled for nothing).
  for (int eb : {2, 4})
    for (bool ln : {false, true})
      for (NormFwdMode m : {NormFwdMode::generic, NormFwdMode::typed, NormFwdMode::whole, NormFwdMode::framed})
        for (int items : kRowItems)
          if (forward_tile_built(eb, m, items))
            EXPECT_TRUE(tiles_seen.count({eb, ln, m, items}))
                << "built but never planned: " << eb << "-byte " << (ln ? "LayerNorm" : "RMSNorm") << " build "
                << static_cast<int>(m) << ", " << items << " chunks";
  EXPECT_GT(plans, 100000);
}

// The backward's row layout (backward_row_config), every row length, dtype, weight-slot kind,
// with and without clusters: a launchable team, a built tile (4 chunks, 2 or 1 while one CTA
// or a warp slice holds the row, 8 for fp32 long rows) whose tiles hold the row, streaming only
// past the widest team's reach.
TEST(NormBackwardPlan, KeepsItsPromisesForEveryRowLength) {
  long long plans = 0;
  std::set<int> tiles_seen;
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    for (bool ln : {false, true})
      for (BwdWeightSlots slots : {BwdWeightSlots::fp32, BwdWeightSlots::packed})
        for (bool frames_vary : {false, true})
          for (int max_cluster : {16, 1})
            for (std::int64_t n : row_lengths()) {
              RowProblem prob;
              prob.n = n;
              prob.elem_bytes = static_cast<int>(dtype_size(dt));
              prob.frames_vary = frames_vary;
              prob.max_cluster = max_cluster;
              const RowConfig c = backward_row_config(prob, ln, slots);
              const std::string where = std::string(dtype_name(dt)) + (ln ? " LayerNorm" : " RMSNorm") +
                                        " n=" + std::to_string(n) + (frames_vary ? " misaligned" : "") +
                                        " max_cluster=" + std::to_string(max_cluster) + ": " + c.str();
              ++plans;
              tiles_seen.insert(c.items);
              ASSERT_GE(c.cta_threads, 32) << where;
              ASSERT_LE(c.cta_threads, kMaxRowThreads) << where;
              ASSERT_EQ(c.cta_threads % 32, 0) << where;
              ASSERT_EQ(c.threads_per_row * c.rows_per_cta, c.cta_threads) << where;
              ASSERT_LE(c.cluster_size, max_cluster) << where;
              ASSERT_TRUE(c.rows_per_cta == 1 || c.cluster_size == 1) << where;
              const int most_items = dt == DType::f32 ? kBackwardLongRowItems : kBackwardItems;
              if (c.streaming()) {
                ASSERT_GT(c.chunks, static_cast<std::int64_t>(max_cluster) * kMaxRowThreads * most_items) << where;
                continue;
              }
              ASSERT_TRUE(c.items == 1 || c.items == 2 || c.items == kBackwardItems || c.items == most_items) << where;
              ASSERT_GE(static_cast<std::int64_t>(c.items) * c.threads_per_row * c.cluster_size, c.chunks) << where;
              // The CTA's slot sets and column region fit the shared memory a CTA may opt in to, with
              // the kernels' static scratch (launch_norm_backward would throw an internal error).
              const bool packed = backward_packs_weight(slots, ln, true, frames_vary,
                                                        static_cast<int>(dtype_size(dt)), c.items);
              for (bool sums : {false, true})
                ASSERT_LE(backward_smem_bytes(c, ln, static_cast<int>(dtype_size(dt)), packed, sums, n) +
                              kBackwardStaticSmem,
                          kSharedOptInPerCta)
                    << where << (sums ? " with column sums" : "");
              // Several rows a CTA stage their partial rows over the weight slots (and, packed, the
              // dw slots) in emit_partial: never into the db slots, which are read after dw's stage.
              if (c.rows_per_cta > 1) {
                const std::size_t set_floats = static_cast<std::size_t>(c.cta_threads) * c.items * c.vec;
                ASSERT_LE(static_cast<std::size_t>(c.rows_per_cta) * n, set_floats) << where;
              }
              // Rows of 8 KiB and up keep Little's law's bytes of x and dy in flight an SM, at the
              // tiles' 128-register bound (fewer registers only add CTAs): the pipelined 2- and
              // 4-chunk tiles hold the next row's tile beside the current one. Shorter rows run
              // several rows a CTA and are bound by per-row work.
              if (n * static_cast<std::int64_t>(dtype_size(dt)) >= 8192) {
                const std::size_t smem =
                    backward_smem_bytes(c, ln, static_cast<int>(dtype_size(dt)), packed, true, n) + kBackwardStaticSmem;
                const int ctas = ctas_per_sm(c, kBackwardTileRegs, smem);
                const int rows_held = c.items == 2 || c.items == kBackwardItems ? 2 : 1;
                const double in_flight = static_cast<double>(ctas) * c.cta_threads * c.items * 16 * 2 * rows_held;
                ASSERT_GE(in_flight, kBytesInFlightPerSm) << where << " ctas=" << ctas;
              }
            }
  for (int items : {0, 1, 2, kBackwardItems, kBackwardLongRowItems})
    EXPECT_TRUE(tiles_seen.count(items)) << "no plan took the " << items << "-chunk tile";
  EXPECT_GT(plans, 10000);
}

// The kernel of every backward launch (backward_build, as resident_launch asks it from the plan's
// layouts: the typed loop's, in the rows' frame, the run-time-dtype loop's; with a dresidual, bf16
// dy beside fp32 rows, either HBM rule for the prefetch) is one that is built, and every kernel
// built (backward_build_built) is one some launch takes: none compiled for nothing.
TEST(NormBackwardPlan, EveryLaunchTakesABuiltKernel) {
  std::set<std::tuple<int, bool, int, int>> seen;  // element bytes, LayerNorm, items, flags
  auto flags_of = [](const BwdBuild& b) {
    for (int f = 0; f < kBwdBuildFlagSets; ++f)
      if (backward_build_of_flags(b.items, f) == b) return f;
    return -1;
  };
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    for (bool ln : {false, true})
      for (BwdWeightSlots slots : {BwdWeightSlots::fp32, BwdWeightSlots::packed})
        for (int max_cluster : {16, 1})
          for (bool fast_hbm : {false, true})
            for (int extra = 0; extra < 3; ++extra) {  // none, a dresidual, a dresidual and bf16 dy
              const int eb = static_cast<int>(dtype_size(dt));
              const bool dres = extra >= 1, narrow = extra == 2;
              if (dres && ln) continue;                    // LayerNorm has no dresidual
              if (narrow && dt != DType::f32) continue;    // bf16 dy beside fp32 rows only
              for (std::int64_t n : row_lengths()) {
                RowProblem prob;
                prob.n = n;
                prob.elem_bytes = eb;
                prob.max_cluster = max_cluster;
                auto take = [&](const RowConfig& c, bool typed, bool framed) {
                  if (c.streaming()) return;
                  BwdBuildAsk ask;
                  ask.typed = typed;
                  ask.framed = framed;
                  ask.packed = backward_packs_weight(slots, ln, typed, framed, eb, c.items);
                  ask.ahead = typed && !framed && backward_l2_prefetch(c, ln, eb, fast_hbm);
                  ask.dres = typed && dres;
                  ask.narrow_dy = typed && narrow;
                  ask.tight = backward_tight_layer_norm(c, eb, framed);
                  const BwdBuild b = backward_build(c.items, ln, eb, ask);
                  ASSERT_TRUE(backward_build_built(b, eb, ln))
                      << dtype_name(dt) << (ln ? " LayerNorm" : " RMSNorm") << " n=" << n << (typed ? " typed" : "")
                      << (framed ? " framed" : "") << (dres ? " dresidual" : "") << (narrow ? " bf16 dy" : "") << ": "
                      << c.str();
                  seen.insert({eb, ln, b.items, flags_of(b)});
                };
                // The typed loop (norm.cpp plan_on_device): its layout where that tile has a typed
                // build and, with a dresidual, a kDres build; in their frame without a dresidual, on
                // the 2- and 4-chunk tiles; else the run-time-dtype loop (fp32 weight slots).
                const RowConfig typed_cfg = backward_row_config(prob, ln, slots);
                if (backward_typed_tile(typed_cfg.items, eb, ln) && (!dres || backward_typed_dresidual(typed_cfg)))
                  take(typed_cfg, true, false);
                else if (narrow)
                  continue;  // the plan reads bf16 dy in the typed loop only
                prob.frames_vary = true;
                const RowConfig framed_cfg = backward_row_config(prob, ln, BwdWeightSlots::fp32);
                if (!dres && !narrow && (framed_cfg.items == 2 || framed_cfg.items == kBackwardItems))
                  take(framed_cfg, true, true);
                if (!narrow) take(backward_runtime_row_config(prob), false, false);
              }
            }
  for (int eb : {2, 4})
    for (bool ln : {false, true})
      for (int items : {1, 2, kBackwardItems, kBackwardLongRowItems})
        for (int f = 0; f < kBwdBuildFlagSets; ++f)
          if (backward_build_built(backward_build_of_flags(items, f), eb, ln))
            EXPECT_TRUE(seen.count({eb, ln, items, f}))
                << "built but never launched: " << eb << "-byte " << (ln ? "LayerNorm" : "RMSNorm") << ", "
                << items << " chunks, flags " << f;
}

// The typed loop's grid on rows in their frame (backward_frame_groups): every row a team takes
// (rows (group + i x groups) x rows_per_cta + its row in the CTA) starts at its first row's offset
// in the 16-byte grid, for any start and any row stride; at most 8 groups past the grid asked for
// (the workspace's bound), fewer only by less than 8.
TEST(NormBackwardPlan, FrameGroupsKeepEachTeamOnOneFrame) {
  for (int rpc : {1, 2, 4})
    for (long long total : {1LL, 5LL, 8LL, 9LL, 66LL, 131LL, 264LL, 1000LL})
      for (long long asked = 1; asked <= 270; ++asked) {
        const long long g = backward_frame_groups(asked, total, rpc);
        const std::string where = "rpc=" + std::to_string(rpc) + " total=" + std::to_string(total) +
                                  " asked=" + std::to_string(asked) + ": " + std::to_string(g);
        ASSERT_GE(g, 1) << where;
        ASSERT_LE(g, std::max(asked, 8LL)) << where;
        if (asked >= 8) ASSERT_GT(g, asked - 8) << where;
        const long long rows = total * rpc;
        for (int eb : {2, 4})
          for (long long stride : {1LL, 3LL, 6LL, 4095LL, 4096LL})
            for (long long team = 0; team < std::min(g, total) * rpc; ++team) {
              const long long first = (team / rpc) * rpc + team % rpc;
              auto offset = [&](long long row) { return (3 + row * stride) * eb % 16; };
              for (long long row = first + g * rpc; row < rows; row += g * rpc)
                ASSERT_EQ(offset(row), offset(first)) << where << " eb=" << eb << " stride=" << stride;
            }
      }
}

// The run-time-dtype loop's layout (backward_runtime_row_config): the 4-chunk tile only (the
// kernel it has; rows of one chunk too), a launchable team that holds the row, streaming only
// past 4 chunks on the widest team.
TEST(NormBackwardPlan, RuntimeDtypeLoopTakesItsOneTile) {
  std::set<int> tiles_seen;
  for (int eb : {2, 4})
    for (bool frames_vary : {false, true})
      for (int max_cluster : {16, 1})
        for (std::int64_t n : row_lengths()) {
          RowProblem prob;
          prob.n = n;
          prob.elem_bytes = eb;
          prob.frames_vary = frames_vary;
          prob.max_cluster = max_cluster;
          const RowConfig c = backward_runtime_row_config(prob);
          const std::string where = std::to_string(eb) + "-byte n=" + std::to_string(n) + ": " + c.str();
          tiles_seen.insert(c.items);
          ASSERT_LE(c.cta_threads, kMaxRowThreads) << where;
          ASSERT_EQ(c.threads_per_row * c.rows_per_cta, c.cta_threads) << where;
          ASSERT_LE(c.cluster_size, max_cluster) << where;
          if (c.streaming()) {
            ASSERT_GT(c.chunks, static_cast<std::int64_t>(max_cluster) * kMaxRowThreads * kBackwardItems) << where;
            continue;
          }
          ASSERT_EQ(c.items, kBackwardItems) << where;
          ASSERT_GE(static_cast<std::int64_t>(c.items) * c.threads_per_row * c.cluster_size, c.chunks) << where;
          ASSERT_FALSE(backward_l2_prefetch(c) && c.items != kBackwardItems) << where;
        }
  EXPECT_EQ(tiles_seen, (std::set<int>{0, kBackwardItems}));
}

}  // namespace
}  // namespace tachyon::detail

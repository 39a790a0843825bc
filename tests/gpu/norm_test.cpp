// RMSNorm / LayerNorm forward and backward against fp64 references.
//
// Specification tables: row lengths and row counts from the issue (bounded so the fp64
// reference stays fast), every dtype, mixed dtypes, fused residual, strided and misaligned
// rows, NaN/Inf rows, poisoned outputs, deterministic dw/db.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/compare.h"
#include "common/gpu.h"
#include "common/host_tensor.h"
#include "common/row_cases.h"
#include "common/reference.h"
#include "tachyon/error.h"
#include "tachyon/norm.h"

namespace tachyon::test {
namespace {



// Floors for results of cancellation: a fraction of the row's largest |y|.
std::vector<double> row_floors(const std::vector<double>& ref, std::int64_t M, std::int64_t N, double frac) {
  std::vector<double> f(ref.size());
  for (std::int64_t i = 0; i < M; ++i) {
    double mx = 0;
    for (std::int64_t j = 0; j < N; ++j)
      if (std::isfinite(ref[i * N + j])) mx = std::fmax(mx, std::fabs(ref[i * N + j]));
    for (std::int64_t j = 0; j < N; ++j) f[i * N + j] = frac * mx;
  }
  return f;
}

// ---- forward ------------------------------------------------------------------------------

struct FwdCase {
  bool layer_norm;
  DType x, w, y;
  std::int64_t M, N;
  Layout in_layout{}, out_layout{};
  bool weight = true, bias = true;
  bool residual = false;
  DType r = DType::f32, r_out = DType::f32;
  bool special_rows = false;  // NaN / Inf planted in rows 1 and 2
  float weight_offset = 0.f;
  double x_shift = 0;  // added to every x: a mean large against the spread
  int w_offset = 0, b_offset = 0;  // weight's and bias's base pointer offsets in elements
};

std::string describe(const FwdCase& c) {
  return std::string(c.layer_norm ? "layer_norm" : "rms_norm") + " x=" + dtype_name(c.x) + " w=" + dtype_name(c.w) +
         " y=" + dtype_name(c.y) + " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) +
         " pad=" + std::to_string(c.in_layout.pad) + " off=" + std::to_string(c.in_layout.offset) +
         (c.residual ? std::string(" residual ") + dtype_name(c.r) + "->" + dtype_name(c.r_out) : "");
}

void check_forward(const FwdCase& c, std::uint64_t seed) {
  if (!in_case_slice()) return;
  SCOPED_TRACE(describe(c));
  const std::int64_t M = c.M, N = c.N;
  auto x = random_values(c.x, M * N, seed, 1.5);
  if (c.x_shift != 0)
    for (auto& v : x) v = round_to(c.x, v + c.x_shift);
  if (c.special_rows && M > 2 && N > 3) {
    x[1 * N + N / 2] = NAN;
    x[2 * N + 1] = INFINITY;
  }
  std::vector<double> w, b, r, h = x;
  if (c.weight) w = random_values(c.w, N, seed + 1, 1.0);
  if (c.bias && c.layer_norm) b = random_values(c.w, N, seed + 2, 1.0);
  if (c.residual) {
    r = random_values(c.r, M * N, seed + 3, 1.0);
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = round_to(c.r_out, round_to(DType::f32, x[i] + r[i]));
  }
  const double eps = 1e-5;
  auto want = ref::norm_forward(c.layer_norm, M, N, h, w, b, eps, c.weight_offset);

  auto dx = upload(c.x, M, N, x, c.in_layout);
  auto dy = output(c.y, M, N, c.out_layout);
  std::unique_ptr<DeviceMatrix> dw, db, dr, dro;
  DeviceMatrix rstd(DType::f32, 1, M), mean(DType::f32, 1, M);
  if (c.weight) dw = upload(c.w, 1, N, w, {0, c.w_offset});
  if (!b.empty()) db = upload(c.w, 1, N, b, {0, c.b_offset});
  if (c.residual) {
    dr = upload(c.r, M, N, r, c.in_layout);
    dro = output(c.r_out, M, N, c.out_layout);
  }
  if (c.layer_norm) {
    LayerNormForward a;
    a.x = dx->view();
    if (dw) a.weight = dw->vector();
    if (db) a.bias = db->vector();
    a.y = dy->view();
    a.mean = mean.vector();
    a.rstd = rstd.vector();
    a.eps = static_cast<float>(eps);
    layer_norm_forward(a);
  } else {
    RmsNormForward a;
    a.x = dx->view();
    if (dw) a.weight = dw->vector();
    if (dr) {
      a.residual = dr->view();
      a.residual_out = dro->view();
    }
    a.y = dy->view();
    a.rstd = rstd.vector();
    a.eps = static_cast<float>(eps);
    a.weight_offset = c.weight_offset;
    rms_norm_forward(a);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // fp32 arithmetic: x - mean cancels for x near the mean, ~1e-7 of the row's scale.
  const double frac = 2e-6;
  auto floors = row_floors(want.y, M, N, frac);
  // A shifted row: fp32 holds the mean to ~1e-7 of itself, which reaches y as |mean| * rstd
  // times that (|w| <= 1). 4e-6 allows ~50 ulp; E[x^2] - E[x]^2 is off by far more.
  if (c.x_shift != 0)
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) floors[i * N + j] += 4e-6 * std::fabs(want.mean[i]) * want.rstd[i];
  EXPECT_TRUE(all_close(dy->download(), want.y, c.y, tolerance_for(c.y), floors, "y"));
  EXPECT_TRUE(all_close(rstd.download(), want.rstd, DType::f32, "rstd"));
  if (c.layer_norm) EXPECT_TRUE(all_close(mean.download(), want.mean, DType::f32, "mean", 1e-6));
  if (c.residual) EXPECT_TRUE(all_close(dro->download(), h, c.r_out, "residual_out"));
}

class NormGpu : public ::testing::Test {
 protected:
  void SetUp() override { TACHYON_REQUIRE_GPU(); }
};

TEST_F(NormGpu, ForwardEveryShape) {
  std::uint64_t seed = 1;
  for (bool ln : {false, true})
    for (DType dt : {DType::f32, DType::bf16})
      for (std::int64_t N : kRowLengths)
        for (std::int64_t M : kRowCounts) {
          if (M * N > element_budget() && M > 1) continue;
          check_forward({ln, dt, dt, dt, M, N}, seed++);
        }
}

// Rows of 1..40 elements (1-5 chunks: rows of one or two chunks on the 4-chunk tile, part empty
// (kForwardMinItems), the 8-chunk tile at 5),
// one row and a last partial CTA of rows, on the whole build (aligned, one dtype or an fp32
// weight), the typed build (an fp32 weight beside 16-bit rows; misaligned rows with padded
// strides) and the generic loop (fp32 y from 16-bit x).
TEST_F(NormGpu, ForwardTinyRows) {
  std::uint64_t seed = 4000;
  for (bool ln : {false, true})
    for (DType dt : {DType::f32, DType::f16, DType::bf16})
      for (std::int64_t N = 1; N <= 40; ++N)
        for (std::int64_t M : {1, 199}) {
          check_forward({ln, dt, dt, dt, M, N}, seed++);
          FwdCase typed{ln, dt, DType::f32, dt, M, N};
          typed.in_layout = {3, 1};
          typed.out_layout = {5, 1};
          check_forward(typed, seed++);
          if (dt != DType::f32) check_forward({ln, dt, dt, DType::f32, M, N}, seed++);
          // An aligned fp32 weight (and bias): RMSNorm's whole builds, LayerNorm's wide whole ones.
          if (dt != DType::f32) check_forward({ln, dt, DType::f32, dt, M, N}, seed++);
        }
}

TEST_F(NormGpu, ForwardHalfAndMixedDtypes) {
  std::uint64_t seed = 1000;
  for (bool ln : {false, true})
    for (std::int64_t N : {256, 4097, 32768}) {
      check_forward({ln, DType::f16, DType::f16, DType::f16, 199, N}, seed++);
      check_forward({ln, DType::bf16, DType::f32, DType::bf16, 199, N}, seed++);  // fp32 weight
      check_forward({ln, DType::bf16, DType::bf16, DType::f32, 199, N}, seed++);  // fp32 output
      check_forward({ln, DType::f32, DType::bf16, DType::f16, 33, N}, seed++);
    }
}

// The whole builds' rows that fill the 8-chunk tile (powers of two, one CTA and clusters, the
// bounded cluster build included) or the 4-chunk one (16-bit 1024 and 4096, fp32 2048, two rows a
// CTA; 16-bit 3072 and fp32 1536, one CTA of 96 threads; 5120 and 7168, one CTA of 160 and 224
// threads for 16-bit rows) take the path without
// row-end tests in every thread (inside_path_built) or the full-tile form (forward_full_tile);
// 16-bit 4608 (a tile with empty chunks) takes it in the threads inside the row alone. Every
// dtype, RMSNorm's Gemma offset at 4096, and M = 199 for a last row group with missing rows.
// With an fp32 weight, 16-bit cluster rows (32768 bf16 up) read it through L1 where its stage
// would pass the SM's cap (forward_stage_bytes); at 262144 RMSNorm takes the bounded whole
// build, LayerNorm its whole build (forward_mode_for_config); 40960 takes clusters whose last
// CTA's tile is partly past the row.
TEST_F(NormGpu, ForwardWholeRowsFullAndPartialTiles) {
  std::uint64_t seed = 1500;
  for (bool ln : {false, true})
    for (DType dt : {DType::f16, DType::bf16, DType::f32})
      for (std::int64_t N : {1024, 1536, 2048, 3072, 4096, 4608, 5120, 7168, 8192, 16384, 40960, 65536, 262144}) {
        FwdCase t{ln, dt, dt, dt, N >= 40960 ? 9 : 199, N};
        t.weight_offset = !ln && N == 4096 ? 1.f : 0.f;  // RMSNorm's (LayerNorm has none)
        check_forward(t, seed++);
        if (dt == DType::f32) continue;
        t.w = DType::f32;  // an fp32 weight (and bias) beside 16-bit rows: the same builds
        check_forward(t, seed++);
      }
}

TEST_F(NormGpu, ForwardWithoutWeightAndGemmaOffset) {
  std::uint64_t seed = 2000;
  for (std::int64_t N : {7, 1024, 50257}) {
    FwdCase c{false, DType::bf16, DType::bf16, DType::bf16, 64, N};
    c.weight = false;
    check_forward(c, seed++);
    c.weight = true;
    c.weight_offset = 1.f;
    check_forward(c, seed++);
    FwdCase l{true, DType::f32, DType::f32, DType::f32, 64, N};
    l.bias = false;
    check_forward(l, seed++);
  }
}

TEST_F(NormGpu, ForwardFusedResidual) {
  std::uint64_t seed = 3000;
  for (std::int64_t N : {7, 256, 4096, 4097, 65536}) {
    FwdCase c{false, DType::bf16, DType::f32, DType::bf16, 77, N};
    c.residual = true;
    c.r = DType::bf16;
    c.r_out = DType::bf16;
    check_forward(c, seed++);
    c.r = DType::f32;  // fp32 residual stream, bf16 activations
    c.r_out = DType::f32;
    check_forward(c, seed++);
    for (DType dt : {DType::bf16, DType::f32}) {  // one dtype everywhere: the typed kernels
      FwdCase t{false, dt, dt, dt, 77, N};
      t.residual = true;
      t.r = t.r_out = dt;
      check_forward(t, seed++);
    }
  }
}

// Autocast's pre-norm block: 16-bit x and y beside an fp32 residual stream and weight (the
// generic build's fp32 tile, x loaded ahead of the residual: load_fused_f32). Every tile from
// 1 to 8 chunks and the streaming rows, M = 1, padded and misaligned rows, in place over the
// residual (its loads run ahead of residual_out's stores).
TEST_F(NormGpu, ForwardFusedResidualF32Stream) {
  std::uint64_t seed = 3300;
  for (DType xt : {DType::bf16, DType::f16})
    for (std::int64_t N : {1, 7, 256, 1000, 4096, 4097, 16384, 65536, 131072, 262144, 1048576})
      for (std::int64_t M : {1, 33}) {
        if (N == 1048576 && M > 1) continue;
        FwdCase c{false, xt, DType::f32, xt, M, N};
        c.residual = true;
        c.r = c.r_out = DType::f32;
        check_forward(c, seed++);
        if (M == 1 || N > 131072) continue;
        c.in_layout = {3, 1};
        c.out_layout = {5, 2};
        check_forward(c, seed++);
      }
  for (std::int64_t N : {4096, 65536}) {
    if (!in_case_slice()) continue;
    SCOPED_TRACE("in place over the residual, N=" + std::to_string(N));
    const std::int64_t M = 9;
    auto x = random_values(DType::bf16, M * N, seed, 1.5);
    auto r = random_values(DType::f32, M * N, seed + 1, 1.0);
    auto w = random_values(DType::f32, N, seed + 2, 1.0);
    seed += 3;
    std::vector<double> h(x.size());
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = round_to(DType::f32, x[i] + r[i]);
    auto want = ref::norm_forward(false, M, N, h, w, {}, 1e-5);
    auto dx = upload(DType::bf16, M, N, x);
    auto dr = upload(DType::f32, M, N, r);
    auto dw = upload(DType::f32, 1, N, w);
    auto dy = output(DType::bf16, M, N);
    RmsNormForward a;
    a.x = dx->view();
    a.residual = a.residual_out = dr->view();
    a.weight = dw->vector();
    a.y = dy->view();
    a.eps = 1e-5f;
    rms_norm_forward(a);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(all_close(dy->download(), want.y, DType::bf16, tolerance_for(DType::bf16),
                          row_floors(want.y, M, N, 2e-6), "y"));
    EXPECT_TRUE(all_close(dr->download(), h, DType::f32, "residual_out"));
  }
}

// Every operand of one dtype in whole aligned chunks: the typed fused build, its 4-chunk tile on
// one CTA of up to 512 threads (16-bit 16384, fp32 8192), its grouped build (NormFwdMode::
// fused_grouped: fp16 cluster rows, fp32 on 2-8 CTAs, 16384-131072) and its 256-thread layout
// (bf16 131072), a row group with a missing row (M = 9), and the Gemma offset. Rows that fill the
// 8-chunk tile (powers of two from 1024) take each build's full-tile form (forward_full_tile);
// 5120 and 7168 (16-bit tiles with empty chunks) and rows without a weight the usual one.
TEST_F(NormGpu, ForwardFusedResidualWholeRows) {
  std::uint64_t seed = 3500;
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (std::int64_t N : {64, 1024, 5120, 7168, 8192, 16384, 32768, 131072, 262144})
      for (std::int64_t M : {1, 9}) {
        FwdCase t{false, dt, dt, dt, M, N};
        t.residual = true;
        t.r = t.r_out = dt;
        t.weight_offset = N == 32768 ? 1.f : 0.f;
        check_forward(t, seed++);
        if (M == 9 && (N == 1024 || N == 131072)) {
          t.weight = false;
          check_forward(t, seed++);
        }
      }
}

// The fused residual in place, as a pre-norm block calls it: residual_out over residual (the
// residual stream updated in place) or over x. The grouped build loads every chunk before it
// stores, which relies on residual_out being exactly one of its inputs (or disjoint).
TEST_F(NormGpu, ForwardFusedResidualInPlace) {
  std::uint64_t seed = 3700;
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (std::int64_t N : {4096, 65536, 131072})
      for (bool over_x : {false, true}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " N=" + std::to_string(N) + (over_x ? " over x" : " over residual"));
        const std::int64_t M = 9;
        auto x = random_values(dt, M * N, seed, 1.5);
        auto r = random_values(dt, M * N, seed + 1, 1.0);
        auto w = random_values(dt, N, seed + 2, 1.0);
        seed += 3;
        std::vector<double> h(x.size());
        for (std::size_t i = 0; i < h.size(); ++i) h[i] = round_to(dt, round_to(DType::f32, x[i] + r[i]));
        auto want = ref::norm_forward(false, M, N, h, w, {}, 1e-5);
        auto dx = upload(dt, M, N, x);
        auto dr = upload(dt, M, N, r);
        auto dw = upload(dt, 1, N, w);
        auto dy = output(dt, M, N);
        RmsNormForward a;
        a.x = dx->view();
        a.residual = dr->view();
        a.residual_out = over_x ? dx->view() : dr->view();
        a.weight = dw->vector();
        a.y = dy->view();
        a.eps = 1e-5f;
        rms_norm_forward(a);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_TRUE(all_close(dy->download(), want.y, dt, tolerance_for(dt), row_floors(want.y, M, N, 2e-6), "y"));
        EXPECT_TRUE(all_close((over_x ? dx : dr)->download(), h, dt, "residual_out"));
      }
}

TEST_F(NormGpu, ForwardStridedAndMisaligned) {
  std::uint64_t seed = 4000;
  for (bool ln : {false, true})
    for (DType dt : {DType::f32, DType::bf16})
      for (std::int64_t N : {7, 760, 4096, 4097, 50257}) {
        FwdCase c{ln, dt, dt, dt, 37, N};
        c.in_layout = {3, 1};   // odd stride, base misaligned by one element
        c.out_layout = {5, 3};  // a different misalignment on the output
        check_forward(c, seed++);
        c.in_layout = {8, 0};  // padded, aligned rows
        c.out_layout = {8, 0};
        check_forward(c, seed++);
      }
}

// Rows off the 16-byte grid that x and y frame alike (odd N; or the same odd stride and base
// offset for both): the framed build on its 4- and 8-chunk tiles (one CTA and clusters), the
// typed build's where the layout wants another tile; RMSNorm's Gemma offset, LayerNorm's large mean.
TEST_F(NormGpu, ForwardFramedRows) {
  std::uint64_t seed = 7000;
  for (bool ln : {false, true})
    for (DType dt : {DType::f32, DType::f16, DType::bf16})
      for (std::int64_t N : {17, 1023, 2047, 2049, 4095, 8191, 16383, 50257}) {
        FwdCase c{ln, dt, dt, dt, 37, N};
        check_forward(c, seed++);
        c.in_layout = {3, 1};
        c.out_layout = {3, 1};
        check_forward(c, seed++);
        if (ln) c.x_shift = 100.0;
        else c.weight_offset = 1.f;  // LayerNorm has no Gemma offset
        check_forward(c, seed++);
        if (dt == DType::f32) continue;
        FwdCase wide{ln, dt, DType::f32, dt, 37, N};  // an fp32 weight and bias (autocast's)
        wide.in_layout = wide.out_layout = {3, 1};
        check_forward(wide, seed++);
        if (!ln) wide.weight_offset = 1.f;
        wide.in_layout = wide.out_layout = {};
        check_forward(wide, seed++);
      }
}

// The framed build reads weight and bias in the rows' frames, off the 16-byte grid
// (write_row_framed): here they lie off it themselves, alike (at every place, odd halfwords
// included, over the rows' frames) and apart, beside misaligned and aligned rows.
TEST_F(NormGpu, ForwardFramedOperandsOffTheGrid) {
  std::uint64_t seed = 7500;
  for (bool ln : {false, true})
    for (DType dt : {DType::f32, DType::f16, DType::bf16})
      for (bool wide : {false, true})
        for (std::int64_t N : {1023, 4095, 16383})
          for (auto [wo, bo] : {std::pair{1, 1}, std::pair{3, 0}}) {
            if ((wide && dt == DType::f32) || (!ln && bo == 0)) continue;  // RMSNorm: no bias
            FwdCase c{ln, dt, wide ? DType::f32 : dt, dt, 37, N};
            c.w_offset = wo;
            c.b_offset = bo;
            c.in_layout = c.out_layout = {3, 1};
            check_forward(c, seed++);
            c.in_layout = c.out_layout = {};
            check_forward(c, seed++);
          }
}

TEST_F(NormGpu, ForwardNanAndInfStayInTheirRows) {
  std::uint64_t seed = 5000;
  for (bool ln : {false, true})
    for (std::int64_t N : {256, 4096, 65536}) {
      FwdCase c{ln, DType::f32, DType::f32, DType::f32, 5, N};
      c.special_rows = true;
      check_forward(c, seed++);
    }
}

// LayerNorm's statistics merge per-thread (count, mean, M2) across warps and CTAs: rows whose
// mean dwarfs their spread, on single-warp, single-CTA, cluster and streaming rows.
TEST_F(NormGpu, ForwardLayerNormLargeMean) {
  std::uint64_t seed = 6000;
  for (DType dt : {DType::f32, DType::bf16})
    for (std::int64_t N : {7, 1024, 4096, 4097, 32768, 262144, 1048576}) {  // 1048576: streaming
      FwdCase c{true, dt, dt, dt, fits(33, N) ? 33 : 1, N};
      c.x_shift = dt == DType::f32 ? 1000.0 : 100.0;
      check_forward(c, seed++);
    }
}

TEST_F(NormGpu, ForwardInPlace) {
  const std::int64_t M = 33, N = 4096;
  auto x = random_values(DType::bf16, M * N, 77, 1.0);
  auto w = random_values(DType::bf16, N, 78, 1.0);
  auto want = ref::norm_forward(false, M, N, x, w, {}, 1e-6);
  auto dx = upload(DType::bf16, M, N, x);
  auto dw = upload(DType::bf16, 1, N, w);
  RmsNormForward a;
  a.x = dx->view();
  a.weight = dw->vector();
  a.y = dx->view();
  rms_norm_forward(a);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(all_close(dx->download(), want.y, DType::bf16, "y over x"));
}

// ---- backward ----------------------------------------------------------------------------

struct BwdCase {
  bool layer_norm;
  DType dt, w;
  std::int64_t M, N;
  Layout layout{};
  bool dresidual = false;
  bool want_dw = true, want_db = true;
  double x_shift = 0;  // added to every x: a mean large against the spread
  bool weight = true;         // without: a factor of 1 (and no dw)
  float weight_offset = 0.f;  // the factor is w + weight_offset
  bool dresidual_f32 = false;  // dresidual stored as f32 (another dtype than x's: the run-time-dtype loop)
  std::optional<DType> dy_dt;  // dy's dtype where it is not x's (16-bit dy beside fp32 x)
};

void check_backward(const BwdCase& c, std::uint64_t seed) {
  if (!in_case_slice()) return;
  SCOPED_TRACE(std::string(c.layer_norm ? "layer_norm" : "rms_norm") + "_backward " + dtype_name(c.dt) +
               " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) + " pad=" + std::to_string(c.layout.pad) +
               " off=" + std::to_string(c.layout.offset));
  const std::int64_t M = c.M, N = c.N;
  auto x = random_values(c.dt, M * N, seed, 1.5);
  if (c.x_shift != 0)
    for (auto& v : x) v = round_to(c.dt, v + c.x_shift);
  const DType dyt = c.dy_dt.value_or(c.dt);
  auto g = random_values(dyt, M * N, seed + 1, 1.0);
  auto w = random_values(c.w, N, seed + 2, 1.0);
  std::vector<double> factor(w);  // what multiplies dy: w + weight_offset, or 1
  for (auto& f : factor) f = c.weight ? f + (c.layer_norm ? 0.0 : c.weight_offset) : 1.0;
  std::vector<double> dres;
  if (c.dresidual) dres = random_values(c.dt, M * N, seed + 3, 1.0);
  auto fwd = ref::norm_forward(c.layer_norm, M, N, x, factor, {}, 1e-5);
  for (auto& v : fwd.mean) v = round_to(DType::f32, v);  // what the forward saved
  for (auto& v : fwd.rstd) v = round_to(DType::f32, v);
  auto want = ref::norm_backward(c.layer_norm, M, N, x, factor, fwd.mean, fwd.rstd, g, dres);
  const bool want_dw = c.want_dw && c.weight;

  auto dx_in = upload(c.dt, M, N, x, c.layout);
  auto dy = upload(dyt, M, N, g, c.layout);
  auto dw_in = upload(c.w, 1, N, w);
  auto mean = upload(DType::f32, 1, M, fwd.mean);
  auto rstd = upload(DType::f32, 1, M, fwd.rstd);
  std::unique_ptr<DeviceMatrix> ddres;
  if (c.dresidual) ddres = upload(c.dresidual_f32 ? DType::f32 : c.dt, M, N, dres, c.layout);

  auto run = [&](std::vector<double>* dx_out, std::vector<double>* dw_out, std::vector<double>* db_out) {
    auto dx = output(c.dt, M, N, c.layout);
    auto dw = output(c.w, 1, N);
    auto db = output(c.w, 1, N);
    void* ws = nullptr;
    std::size_t ws_bytes = 0;
    if (c.layer_norm) {
      LayerNormBackward a;
      a.x = dx_in->view();
      if (c.weight) a.weight = dw_in->vector();  // (no weight offset: RMSNorm's option)
      a.mean = mean->vector();
      a.rstd = rstd->vector();
      a.dy = dy->view();
      a.dx = dx->view();
      if (want_dw) a.dw = dw->vector();
      if (c.want_db) a.db = db->vector();
      ws_bytes = layer_norm_backward_workspace_bytes(a);
      if (ws_bytes) ASSERT_EQ(cudaMalloc(&ws, ws_bytes), cudaSuccess);
      a.workspace = ws;
      a.workspace_bytes = ws_bytes;
      layer_norm_backward(a);
    } else {
      RmsNormBackward a;
      a.x = dx_in->view();
      if (c.weight) a.weight = dw_in->vector();
      a.weight_offset = c.weight_offset;
      a.rstd = rstd->vector();
      a.dy = dy->view();
      if (ddres) a.dresidual = ddres->view();
      a.dx = dx->view();
      if (want_dw) a.dw = dw->vector();
      ws_bytes = rms_norm_backward_workspace_bytes(a);
      if (ws_bytes) ASSERT_EQ(cudaMalloc(&ws, ws_bytes), cudaSuccess);
      a.workspace = ws;
      a.workspace_bytes = ws_bytes;
      rms_norm_backward(a);
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    if (ws) cudaFree(ws);
    *dx_out = dx->download();
    *dw_out = dw->download();
    *db_out = db->download();
  };
  std::vector<double> dx1, dw1, db1, dx2, dw2, db2;
  run(&dx1, &dw1, &db1);
  std::vector<double> dx_floor(static_cast<std::size_t>(M * N));
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) dx_floor[i * N + j] = 2e-6 * want.dx_scale[i];
  EXPECT_TRUE(all_close(dx1, want.dx, c.dt, tolerance_for(c.dt), dx_floor, "dx"));
  std::vector<double> dw_floor(want.dw_abs), db_floor(want.db_abs);
  for (auto& f : dw_floor) f *= 1e-5;
  for (auto& f : db_floor) f *= 1e-5;
  if (want_dw) EXPECT_TRUE(all_close(dw1, want.dw, c.w, tolerance_for(c.w), dw_floor, "dw"));
  if (c.layer_norm && c.want_db) EXPECT_TRUE(all_close(db1, want.db, c.w, tolerance_for(c.w), db_floor, "db"));
  // Deterministic: a second run gives the same bits.
  run(&dx2, &dw2, &db2);
  EXPECT_EQ(dx1, dx2);
  EXPECT_EQ(dw1, dw2);
  EXPECT_EQ(db1, db2);
}

TEST_F(NormGpu, BackwardEveryShape) {
  std::uint64_t seed = 6000;
  for (bool ln : {false, true})
    for (DType dt : {DType::f32, DType::bf16})
      for (std::int64_t N : kRowLengths)
        for (std::int64_t M : kRowCounts) {
          if (M * N > element_budget() && M > 1) continue;
          check_backward({ln, dt, dt, M, N}, seed++);
        }
}

TEST_F(NormGpu, BackwardVariants) {
  std::uint64_t seed = 7000;
  for (std::int64_t N : {7, 1024, 4097}) {
    check_backward({false, DType::bf16, DType::f32, 199, N, {}, /*dresidual=*/true}, seed++);
    check_backward({false, DType::f16, DType::f16, 199, N, {3, 1}}, seed++);  // misaligned, strided
    check_backward({true, DType::bf16, DType::bf16, 199, N, {5, 1}}, seed++);
    check_backward({true, DType::f32, DType::f32, 199, N, {}, false, /*dw=*/false, /*db=*/true}, seed++);
    check_backward({false, DType::f32, DType::f32, 199, N, {}, false, /*dw=*/false}, seed++);  // dx only
  }
}

// Rows of one dtype off the 16-byte grid whose x, dy and dx share each row's frame: the typed
// loop's framed build (backward_row_config with frames_vary), on every layout it takes: warp
// slices of many rows a CTA (7: one thread a row on its frame's two chunks; 255), one CTA a row
// on 2 or 4 chunks (1023-4095; 4095 16-bit takes the 4-chunk tile), cluster rows (8191, 12285);
// a dresidual takes the run-time-dtype loop. Odd N (contiguous rows start mid-segment), padded
// and offset rows, more rows than the grid holds (a team's rows must share its frame:
// backward_frame_groups), without a weight, an fp32 weight beside 16-bit rows, a weight
// offset, dw or db alone.
TEST_F(NormGpu, BackwardFramedRows) {
  std::uint64_t seed = 7900;
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (std::int64_t N : {7, 255, 1023, 2047, 4095, 8191, 12285})
      for (bool ln : {false, true}) {
        if (dt == DType::f32 && N > 8191) continue;
        check_backward({ln, dt, dt, 1031, N}, seed++);
        check_backward({ln, dt, dt, 67, N, {5, 3}}, seed++);
      }
  BwdCase no_weight{true, DType::bf16, DType::bf16, 199, 4095};
  no_weight.weight = false;
  check_backward(no_weight, seed++);
  check_backward({true, DType::bf16, DType::f32, 199, 4095, {1, 1}}, seed++);  // fp32 weight
  BwdCase offset{false, DType::f16, DType::f16, 199, 2047};
  offset.weight_offset = 1.f;
  check_backward(offset, seed++);
  check_backward({true, DType::bf16, DType::bf16, 199, 8191, {}, false, /*dw=*/false, /*db=*/true}, seed++);
  check_backward({true, DType::f32, DType::f32, 199, 2047, {}, false, /*dw=*/true, /*db=*/false}, seed++);
  for (std::int64_t N : {2047, 4095, 12285})
    check_backward({false, DType::bf16, DType::bf16, 1031, N, {}, /*dresidual=*/true}, seed++);
}

// 16-bit one-CTA rows past 256 threads on the 2-chunk tile: where its CTAs are alone on their SM
// and the 4-chunk tile holds half as many warps again they take it (framed LayerNorm rows); where
// not, they stay (4104, 5120 at 96 registers; 3071, 5119 framed; 7168). backward_row_config.
TEST_F(NormGpu, BackwardOneCtaRowsOnTheFourChunkTile) {
  std::uint64_t seed = 8200;
  for (DType dt : {DType::bf16, DType::f16})
    for (std::int64_t N : {3071, 4104, 5119, 5120, 7168})
      for (bool ln : {false, true}) {
        check_backward({ln, dt, dt, 1031, N}, seed++);
        check_backward({ln, dt, dt, 67, N, {8, 8}}, seed++);
      }
  check_backward({true, DType::bf16, DType::f32, 199, 5120, {1, 1}}, seed++);  // fp32 weight, off the grid
  check_backward({false, DType::bf16, DType::bf16, 199, 4608, {}, /*dresidual=*/true}, seed++);
}

// 16-bit one-CTA rows on the 96-register kernels where that holds more CTAs an SM: LayerNorm's
// kernel apart (1536, 3072, 4608, 5120; not framed), and rows under 16 warps an SM
// on a pair cluster of 192-thread CTAs (5632, 6144; framed 5119 and 5631 for RMSNorm), with an
// fp32 weight, a dresidual, padded rows and more rows than the grid holds. backward_row_config.
TEST_F(NormGpu, BackwardOneCtaRowsOnTighterKernelsAndPairs) {
  std::uint64_t seed = 8300;
  for (DType dt : {DType::bf16, DType::f16})
    for (std::int64_t N : {1536, 3072, 4608, 5119, 5631, 5632, 6144})
      for (bool ln : {false, true}) {
        check_backward({ln, dt, dt, 1031, N}, seed++);
        check_backward({ln, dt, dt, 67, N, {8, 8}}, seed++);
      }
  for (std::int64_t N : {3072, 4608, 6144}) {
    check_backward({true, DType::bf16, DType::f32, 199, N, {1, 1}}, seed++);  // fp32 weight and bias
    check_backward({true, DType::bf16, DType::bf16, 199, N, {}, false, /*dw=*/false, /*db=*/true}, seed++);
    check_backward({false, DType::bf16, DType::bf16, 199, N, {}, /*dresidual=*/true}, seed++);
  }
}

// Long rows in the run-time-dtype loop (its 4-chunk tile, backward_runtime_row_config; fp32
// rows past 131072 stream): with a dresidual of another dtype, and on padded, misaligned rows.
TEST_F(NormGpu, BackwardRunTimeDtypeLongRows) {
  std::uint64_t seed = 7950;
  BwdCase f32_dres{false, DType::bf16, DType::f32, 9, 65536, {}, /*dresidual=*/true};
  f32_dres.dresidual_f32 = true;
  check_backward(f32_dres, seed++);
  check_backward({false, DType::f16, DType::f16, 9, 32768, {3, 1}, /*dresidual=*/true}, seed++);
  check_backward({true, DType::bf16, DType::bf16, 9, 131072, {3, 1}}, seed++);
  check_backward({false, DType::f32, DType::f32, 9, 16384 + 4, {4, 0}}, seed++);
}

// fp32 rows with 16-bit dy (an fp32 residual stream beside 16-bit y under autocast: its
// gradient arrives 16-bit): RMSNorm with a bf16 dy and dresidual on whole rows runs the typed
// loop's kNarrowDy build (2-, 4- with kAhead, 8-chunk tiles; padded rows too); everything else
// the run-time-dtype loop, which reads dy in its own dtype (1-chunk tile, misaligned rows, fp16).
TEST_F(NormGpu, BackwardFp32RowsWith16BitDy) {
  std::uint64_t seed = 7970;
  for (std::int64_t N : {7, 1024, 2048, 4097, 16384, 65536, 262144}) {
    const std::int64_t M = N >= 65536 ? 9 : 67;
    for (DType dy : {DType::bf16, DType::f16}) {
      for (Layout layout : {Layout{}, Layout{4, 0}, Layout{3, 1}}) {
        BwdCase rms{false, DType::f32, DType::f32, M, N, layout, /*dresidual=*/true};
        rms.dy_dt = dy;
        check_backward(rms, seed++);
      }
      BwdCase ln{true, DType::f32, DType::f32, M, N, {3, 1}};
      ln.dy_dt = dy;
      check_backward(ln, seed++);
    }
  }
}

// RMSNorm's typed loop with a dresidual of x's dtype (the pipelined tiles' kDres builds,
// backward_typed_dresidual): the 2-chunk tile (16-bit 4096 / 8192, fp32 2048), the 4-chunk tile
// with several rows a CTA (16-bit 1024), on clusters (bf16 16384, fp32 8192) and its kAhead
// build (fp16 32768, bf16 65536), the fp32 8-chunk long-row tile (262144); more rows than the grid
// holds at once where it is cheap.
TEST_F(NormGpu, BackwardTypedDresidual) {
  std::uint64_t seed = 7980;
  for (std::int64_t N : {1024, 4096, 8192, 16384}) check_backward({false, DType::bf16, DType::bf16, 199, N, {}, true}, seed++);
  check_backward({false, DType::f16, DType::f16, 9, 32768, {}, true}, seed++);
  check_backward({false, DType::bf16, DType::f32, 9, 65536, {}, true}, seed++);
  for (std::int64_t N : {2048, 8192}) check_backward({false, DType::f32, DType::f32, 199, N, {}, true}, seed++);
  // fp32 262144: the 8-chunk long-row tile's build (two chunks loaded early, six where used).
  check_backward({false, DType::f32, DType::f32, fits(9, 262144) ? 9 : 1, 262144, {}, true}, seed++);
  BwdCase offset{false, DType::bf16, DType::bf16, 199, 4096, {}, true};
  offset.weight_offset = 1.f;
  check_backward(offset, seed++);
}

// Rows whose mean dwarfs their spread: fp32 keeps x - mean exact, 16-bit rows fold the mean
// into one FMA (norm_bwd.cu, kFoldedMean), on the 1-, 2- and 4-chunk tiles and cluster rows.
TEST_F(NormGpu, BackwardLayerNormLargeMean) {
  std::uint64_t seed = 7600;
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
    for (std::int64_t N : {1024, 4096, 32768, 131072}) {
      BwdCase c{true, dt, dt, fits(33, N) ? 33 : 1, N};
      c.x_shift = dt == DType::f32 ? 1000.0 : 100.0;
      check_backward(c, seed++);
    }
}

// 16-bit x with an fp32 weight and dw (mixed precision) runs the typed row loop on whole
// aligned rows: cluster rows, pipelined, several rows per cluster.
TEST_F(NormGpu, BackwardFp32WeightOn16BitRows) {
  std::uint64_t seed = 7500;
  for (std::int64_t N : {4096, 32768}) {
    check_backward({true, DType::bf16, DType::f32, 199, N}, seed++);
    check_backward({false, DType::f16, DType::f32, 199, N}, seed++);
  }
}

// LayerNorm's 16-bit cluster rows on each of their layouts (backward_row_config): the packed
// 4-chunk tile on 4 CTAs of 512 (65536), 8 (131072) and 16 (262144); fp16 and bf16, 9 rows (a
// partial last row group). The packed tile keeps a weight of the row's dtype as stored
// (norm_bwd.cu, packed weight slots): also without a weight; an fp32 weight takes the fp32
// slots, and at 65536 the 4-chunk tile on 8 CTAs of 256.
TEST_F(NormGpu, BackwardLayerNorm16BitClusterLayouts) {
  std::uint64_t seed = 7700;
  for (DType dt : {DType::bf16, DType::f16})
    for (std::int64_t N : {65536, 131072, 262144}) check_backward({true, dt, dt, 9, N}, seed++);
  BwdCase none{true, DType::f16, DType::f16, 9, 262144};
  none.weight = false;
  check_backward(none, seed++);
  check_backward({true, DType::bf16, DType::f32, 9, 131072}, seed++);
  check_backward({true, DType::bf16, DType::f32, 9, 65536}, seed++);
}

// 16384 / 32768 / 65536 take the packed 4-chunk tile on 1 / 2 / 4 CTAs of 512
// (backward_row_config's packed layouts); an fp32 weight takes the 2-chunk tile on 4 CTAs at
// 16384, then the 4-chunk tile on 256-thread CTAs (24576 / 49152: clusters of 4 / 6). 199
// rows: more than the H100's grid holds at once (132 one-CTA groups, 66 two-CTA clusters, 30
// four-CTA clusters). Quick mode (the sanitizers): 140 rows, bf16 only.
TEST_F(NormGpu, BackwardLayerNorm16BitPackedLayouts) {
  std::uint64_t seed = 7750;
  const std::int64_t M = quick_mode() ? 140 : 199;
  for (DType dt : {DType::bf16, DType::f16}) {
    if (quick_mode() && dt == DType::f16) continue;
    for (std::int64_t N : {16384, 32768}) check_backward({true, dt, dt, M, N}, seed++);
    if (!quick_mode()) check_backward({true, dt, dt, M, 65536}, seed++);
  }
  check_backward({true, DType::bf16, DType::f32, M, 16384}, seed++);
  check_backward({true, DType::bf16, DType::f32, M, 24576}, seed++);
  // Packed rows that do not fill 512-thread CTAs (9000: 1 x 288 with 27 slots past the row,
  // 12288: 1 x 384, 20480: 2 x 320, 24576: 2 x 384, 40960: 3 x 448).
  check_backward({true, DType::bf16, DType::bf16, M, 24576}, seed++);
  check_backward({true, DType::bf16, DType::bf16, M, 9000}, seed++);
  BwdCase none{true, DType::bf16, DType::bf16, M, 9000};  // slots of ones, 27 of them past the row
  none.weight = false;
  check_backward(none, seed++);
  if (!quick_mode()) {
    check_backward({true, DType::f16, DType::f16, M, 12288}, seed++);
    check_backward({true, DType::bf16, DType::bf16, M, 20480}, seed++);
    check_backward({true, DType::bf16, DType::bf16, M, 40960}, seed++);
  }
  if (!quick_mode()) check_backward({true, DType::f16, DType::f32, M, 49152}, seed++);
}

// The tiles with the small exchange scratch (norm_bwd.cu, kCompactScratch: the packed 4-chunk
// tile and the fp32 8-chunk tile) post their warps' sums in pairs across a cluster; rows whose
// CTAs have an odd number of warps leave the last one to post alone (reduce.cuh,
// PairedReduceScratch). 65544: 9 warps x 8 CTAs; 131080: 9 warps x 16 CTAs (16-bit), and the
// fp32 8-chunk tile on 9 warps x 16 CTAs; 81928: 11 warps x 8 CTAs.
TEST_F(NormGpu, BackwardOddWarpCountsOnClusters) {
  std::uint64_t seed = 7760;
  check_backward({true, DType::bf16, DType::bf16, 9, 65544}, seed++);
  check_backward({true, DType::f16, DType::f16, 9, 81928}, seed++);
  check_backward({true, DType::bf16, DType::bf16, 9, 131080}, seed++);
  check_backward({true, DType::f32, DType::f32, 9, 131080}, seed++);
  check_backward({false, DType::f32, DType::f32, 9, 131080}, seed++);
}

// The one-CTA rows of the 2-chunk tile (its column sums in registers) on a persistent grid:
// more rows than the grid has CTAs, each CTA several.
TEST_F(NormGpu, BackwardOneCtaRowsOnThePersistentGrid) {
  std::uint64_t seed = 7800;
  for (bool ln : {true, false}) check_backward({ln, DType::bf16, DType::bf16, 1031, 4096}, seed++);
  BwdCase offset{false, DType::f16, DType::f16, 1031, 4096};
  offset.weight_offset = 1.f;
  check_backward(offset, seed++);
}

// Which row loop runs depends on the rows' alignment; the workspace size must not, so that a
// size queried with other tensors of the same shape still fits.
void check_workspace_alignment_free(DType dt, std::int64_t M, std::int64_t N) {
  auto query = [&](int offset) {
    auto x = output(dt, M, N, {0, offset});
    auto dy = output(dt, M, N, {0, offset});
    auto dx = output(dt, M, N, {0, offset});
    auto w = output(dt, 1, N);
    auto dw = output(dt, 1, N);
    auto db = output(dt, 1, N);
    auto rstd = output(DType::f32, 1, M);
    auto mean = output(DType::f32, 1, M);
    RmsNormBackward r;
    r.x = x->view(), r.dy = dy->view(), r.dx = dx->view(), r.weight = w->vector(), r.rstd = rstd->vector();
    r.dw = dw->vector();
    LayerNormBackward l;
    l.x = x->view(), l.dy = dy->view(), l.dx = dx->view(), l.weight = w->vector(), l.rstd = rstd->vector();
    l.mean = mean->vector(), l.dw = dw->vector(), l.db = db->vector();
    return std::pair{rms_norm_backward_workspace_bytes(r), layer_norm_backward_workspace_bytes(l)};
  };
  const auto aligned = query(0), misaligned = query(1);
  EXPECT_GT(aligned.first, 0u);
  EXPECT_EQ(aligned.first, misaligned.first);
  EXPECT_EQ(aligned.second, misaligned.second);
}

// 16384 .. 65536: the typed loop takes the packed layouts there (one CTA of 512 threads an SM),
// the other loop its own; 1024 rows: more than either grid holds.
TEST_F(NormGpu, BackwardWorkspaceDoesNotDependOnAlignment) {
  for (DType dt : {DType::bf16, DType::f16})
    for (std::int64_t N : {8192, 16384, 32768, 65536}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " N=" + std::to_string(N));
      check_workspace_alignment_free(dt, 1024, N);
    }
}

// fp32 rows of 262144: the typed loop's 8-chunk tile on 16-CTA clusters (backward_row_config),
// the run-time-dtype loop's streaming kernel (a dresidual of another dtype); several row groups
// per column sum.
TEST_F(NormGpu, BackwardLongFp32Rows) {
  std::uint64_t seed = 8000;
  const std::int64_t N = 262144, M = fits(33, N) ? 33 : 1;
  check_backward({true, DType::f32, DType::f32, M, N}, seed++);
  check_backward({false, DType::f32, DType::f32, M, N}, seed++);
  check_backward({false, DType::f32, DType::bf16, M, N, {}, /*dresidual=*/true}, seed++);
  check_backward({true, DType::f32, DType::f32, M, N, {}, false, /*dw=*/false, /*db=*/true}, seed++);
}

// Rows of one chunk (N <= 8 16-bit, <= 4 fp32): the 1-chunk tile, which has the run-time-dtype
// build only (backward_typed_tile), for rows the typed loop would otherwise take (whole aligned
// chunks) and for the rest: every dtype, both norms, a dresidual, bf16 dy beside fp32 rows, a last
// partial row group (M = 199) and one row.
// Short rows, several a CTA (a warp slice or a few warps a row): the teams' partial rows folded
// through the stage over the weight slots (emit_partial), packed 16-bit weight slots (whose stage
// also covers the dw slots) and fp32 ones, dw or db alone, rows in their frame, and more rows
// than the persistent grid holds.
TEST_F(NormGpu, BackwardShortRowsSeveralACta) {
  std::uint64_t seed = 8050;
  for (std::int64_t N : {64, 256, 760, 1024})
    for (bool ln : {true, false}) {
      check_backward({ln, DType::bf16, DType::bf16, 12007, N}, seed++);
      check_backward({ln, DType::bf16, DType::f32, 4099, N}, seed++);
      check_backward({ln, DType::f16, DType::f16, 4099, N, {3, 1}}, seed++);
      check_backward({ln, DType::f32, DType::f32, 4099, N}, seed++);
      check_backward({ln, DType::bf16, DType::bf16, 4099, N - 1}, seed++);  // in their frame
    }
  check_backward({true, DType::bf16, DType::bf16, 4099, 256, {}, false, /*dw=*/false, /*db=*/true}, seed++);
  check_backward({true, DType::bf16, DType::bf16, 4099, 256, {}, false, /*dw=*/true, /*db=*/false}, seed++);
}

// 16-bit one-CTA rows of 8 and 16 warps, the 4-chunk tile's cluster rows and the fp32 weight's
// 2-chunk cluster rows: on fast HBM (the H200) they prefetch row + 2 into L2 (backward_l2_prefetch),
// the 2-chunk ones on a kernel of their own. Several rows a team (more rows than the grid holds,
// the last ones' prefetch past the end), with and without a dresidual (whose build has none).
TEST_F(NormGpu, BackwardRowsPrefetchedTwoAhead) {
  std::uint64_t seed = 8150;
  for (DType dt : {DType::bf16, DType::f16})
    for (bool ln : {false, true})
      for (std::int64_t N : {4096, 8192, 16384}) {
        const std::int64_t M = element_budget() / (2 * N) - 3;
        check_backward({ln, dt, dt, M, N}, seed++);
        check_backward({ln, dt, DType::f32, M, N}, seed++);
        if (!ln) check_backward({false, dt, dt, M, N, {}, /*dresidual=*/true}, seed++);
      }
  check_backward({true, DType::bf16, DType::bf16, 1999, 8192, {}, false, /*dw=*/false, /*db=*/true}, seed++);
  check_backward({false, DType::bf16, DType::bf16, 1, 8192}, seed++);
}

TEST_F(NormGpu, BackwardRowsOfOneChunk) {
  std::uint64_t seed = 8100;
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    for (std::int64_t N = 1; N <= 16 / static_cast<std::int64_t>(dtype_size(dt)); ++N)
      for (std::int64_t M : {1, 199})
        for (bool ln : {false, true}) {
          check_backward({ln, dt, dt, M, N}, seed++);
          if (!ln) check_backward({false, dt, DType::f32, M, N, {}, /*dresidual=*/true}, seed++);
          if (dt == DType::f32 && !ln) {
            BwdCase narrow{false, dt, dt, M, N, {}, /*dresidual=*/true};
            narrow.dy_dt = DType::bf16;
            check_backward(narrow, seed++);
          }
        }
}

// Builds that the power-of-two shapes above do not reach: fp16 rows past the resident tiles
// (streaming, forward and backward), the backward's long fp16 rows (the typed 4-chunk tile's kAhead
// build), fp16 rows into an fp32 y (the generic 8-chunk tile), fp32 rows into a bf16 y of one
// and two chunks (the generic 4-chunk tile, part empty), cluster rows whose last CTA's tile is
// partly past the row (the bounded builds in their usual form), with the fused residual and an
// fp32 weight.
// Rows just past the widest resident team (8 chunks a thread on a 16-CTA cluster: 16-bit past
// 524288, fp32 past 262144) stream: without a weight, and off the 16-byte grid.
TEST_F(NormGpu, ForwardRowsJustPastTheResidentTiles) {
  std::uint64_t seed = 1650;
  for (DType dt : {DType::bf16, DType::f16}) {
    FwdCase plain{false, dt, dt, dt, 3, 600000};
    plain.weight = plain.bias = false;
    check_forward(plain, seed++);
    check_forward({false, dt, dt, dt, 3, 700001, {0, 3}, {0, 3}}, seed++);
  }
  for (bool ln : {false, true}) {
    FwdCase wide{ln, DType::f32, DType::f32, DType::f32, 3, 300000};
    wide.weight = wide.bias = false;
    check_forward(wide, seed++);
  }
}

TEST_F(NormGpu, BuildsOffThePowersOfTwo) {
  std::uint64_t seed = 1700;
  for (bool ln : {false, true}) {
    check_forward({ln, DType::f16, DType::f16, DType::f16, 1, 1048576}, seed++);
    check_backward({ln, DType::f16, DType::f16, 1, 1048576}, seed++);
    // fp16 rows of 256 KiB: the typed 4-chunk tile's kAhead build (fp32 weight); misaligned, the
    // run-time-dtype loop's plain 4-chunk tile.
    check_backward({ln, DType::f16, DType::f32, 9, 131072}, seed++);
    check_backward({ln, DType::f16, DType::f16, 9, 131072, {3, 1}}, seed++);
    for (std::int64_t N : {20000, 32768, 131072}) check_forward({ln, DType::f16, DType::f16, DType::f32, 9, N}, seed++);
    for (std::int64_t N = 1; N <= 8; ++N) check_forward({ln, DType::f32, DType::f32, DType::bf16, 199, N}, seed++);
    for (DType dt : {DType::f16, DType::bf16, DType::f32})
      for (std::int64_t N : {20000, 40000, 120000, 250000}) {
        check_forward({ln, dt, dt, dt, 9, N}, seed++);
        if (dt != DType::f32) check_forward({ln, dt, DType::f32, dt, 9, N}, seed++);  // fp32 weight
        if (ln) continue;
        FwdCase fused{false, dt, dt, dt, 9, N};
        fused.residual = true;
        fused.r = fused.r_out = dt;
        check_forward(fused, seed++);
      }
  }
}

}  // namespace
}  // namespace tachyon::test

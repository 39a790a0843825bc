// Softmax / log-softmax forward and backward against fp64 references.
//
// Row lengths and counts from the issue (M x N bounded so the fp64 reference stays fast; rows
// with M = 1 always run), real vocabularies, every dtype, mixed output dtypes, strided and
// misaligned rows, in place, -inf / NaN / +inf rows, rows summing to one, shift invariance.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "common/compare.h"
#include "common/gpu.h"
#include "common/host_tensor.h"
#include "common/row_cases.h"
#include "common/reference_softmax.h"
#include "tachyon/error.h"
#include "tachyon/softmax.h"

namespace tachyon::test {
namespace {



// Floors for log-softmax, where (x - max) - log(sum) cancels: a few fp32 ulps of the terms
// (log(sum) carries the sum's relative rounding as an absolute error, hence the 1).
std::vector<double> log_floors(const std::vector<double>& x, std::int64_t M, std::int64_t N) {
  std::vector<double> f(x.size());
  for (std::int64_t i = 0; i < M; ++i) {
    const ref::RowStats s = ref::row_stats(&x[i * N], N);
    const double ls = std::isfinite(s.sum) ? std::fabs(std::log(s.sum)) : 0.0;
    for (std::int64_t j = 0; j < N; ++j) {
      const double d = std::isfinite(x[i * N + j] - s.max) ? std::fabs(x[i * N + j] - s.max) : 0.0;
      f[i * N + j] = 4e-7 * (1.0 + d + ls);
    }
  }
  return f;
}

// ---- forward ------------------------------------------------------------------------------

struct FwdCase {
  DType x, y;
  std::int64_t M, N;
  bool log = false;
  Layout in{}, out{};
  bool in_place = false;
};

std::string describe(const FwdCase& c) {
  return std::string(c.log ? "log_softmax" : "softmax") + " x=" + dtype_name(c.x) + " y=" + dtype_name(c.y) +
         " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) + " pad=" + std::to_string(c.in.pad) +
         " off=" + std::to_string(c.in.offset) + (c.in_place ? " in-place" : "");
}

// Runs the forward on x (already rounded to c.x) and compares with the fp64 reference.
void check_forward_values(const FwdCase& c, const std::vector<double>& x) {
  if (!fits(c.M, c.N)) return;
  SCOPED_TRACE(describe(c));
  const std::int64_t M = c.M, N = c.N;
  auto want = ref::softmax(M, N, x, c.log);
  auto dx = upload(c.x, M, N, x, c.in);
  std::unique_ptr<DeviceMatrix> dy;
  SoftmaxForward a;
  a.x = dx->view();
  if (c.in_place) {
    a.y = dx->view();
  } else {
    dy = output(c.y, M, N, c.out);
    a.y = dy->view();
  }
  a.log = c.log;
  softmax_forward(a);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto got = (c.in_place ? dx : dy)->download();
  const DType out = c.in_place ? c.x : c.y;
  if (c.log) EXPECT_TRUE(all_close(got, want, out, tolerance_for(out), log_floors(x, M, N), "log_softmax"));
  // Probabilities below 2^-126 flush to zero (softmax.h): the absolute floor of the contract.
  else EXPECT_TRUE(all_close(got, want, out, "softmax", 0x1p-126));
}

void check_forward(const FwdCase& c, std::uint64_t seed) {
  if (fits(c.M, c.N) && in_case_slice()) check_forward_values(c, random_values(c.x, c.M * c.N, seed, 2.0));
}

class SoftmaxGpu : public ::testing::Test {
 protected:
  void SetUp() override { TACHYON_REQUIRE_GPU(); }
};

TEST_F(SoftmaxGpu, ForwardEveryShape) {
  std::uint64_t seed = 1;
  for (DType dt : {DType::f32, DType::bf16})
    for (std::int64_t N : kRowLengths)
      for (std::int64_t M : kRowCounts) {
        if (!fits(M, N)) continue;
        check_forward({dt, dt, M, N, /*log=*/(seed % 2) == 0}, seed);
        ++seed;
      }
}

TEST_F(SoftmaxGpu, ForwardLogEveryShape) {
  std::uint64_t seed = 100;
  for (DType dt : {DType::f32, DType::bf16})
    for (std::int64_t N : kRowLengths)
      for (std::int64_t M : {std::int64_t{1}, std::int64_t{199}}) {
        if (!fits(M, N)) continue;
        check_forward({dt, dt, M, N, /*log=*/true}, seed++);
      }
}

TEST_F(SoftmaxGpu, ForwardVocabularies) {
  std::uint64_t seed = 200;
  for (std::int64_t N : kVocabularies)
    for (std::int64_t M : kRowCounts) {
      if (!fits(M, N)) continue;
      check_forward({DType::bf16, DType::bf16, M, N}, seed++);
      check_forward({DType::f32, DType::f32, M, N, true}, seed++);
    }
}

TEST_F(SoftmaxGpu, ForwardHalfAndMixedDtypes) {
  std::uint64_t seed = 300;
  for (std::int64_t N : {7, 256, 4097, 32768}) {
    check_forward({DType::f16, DType::f16, 199, N}, seed++);
    check_forward({DType::f16, DType::f16, 199, N, true}, seed++);
    check_forward({DType::bf16, DType::f32, 199, N}, seed++);  // fp32 probabilities from bf16 logits
    check_forward({DType::f32, DType::bf16, 33, N, true}, seed++);
    check_forward({DType::f16, DType::bf16, 33, N}, seed++);
  }
}

TEST_F(SoftmaxGpu, ForwardStridedAndMisaligned) {
  std::uint64_t seed = 400;
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
    for (std::int64_t N : {7, 760, 4096, 4097, 50257}) {
      FwdCase c{dt, dt, 37, N};
      c.in = {3, 1};   // odd stride, base misaligned by one element
      c.out = {5, 3};  // a different misalignment on the output
      check_forward(c, seed++);
      c.log = true;
      c.in = {8, 0};
      c.out = {8, 0};
      check_forward(c, seed++);
    }
  // One long misaligned row in a cluster, and one past the resident limit.
  check_forward({DType::bf16, DType::bf16, 1, 262144, false, {0, 3}, {0, 5}}, seed++);
  check_forward({DType::f32, DType::f32, 1, 1048576, true, {0, 1}, {0, 1}}, seed++);
}

TEST_F(SoftmaxGpu, ForwardInPlace) {
  std::uint64_t seed = 500;
  for (std::int64_t N : {256, 4097, 65536, 1048576}) {
    FwdCase c{DType::bf16, DType::bf16, N > 65536 ? 1 : 33, N};
    c.in_place = true;
    check_forward(c, seed++);
    c.x = c.y = DType::f32;
    c.log = true;
    c.in = {1, 1};
    check_forward(c, seed++);
  }
}

// -inf entries (masked logits), a row of all -inf (NaN), a NaN (NaN row), +inf (NaN row).
TEST_F(SoftmaxGpu, ForwardInfAndNanRows) {
  std::uint64_t seed = 600;
  for (DType dt : {DType::f32, DType::bf16})
    for (std::int64_t N : {7, 256, 4096, 65536, 1048576})
      for (bool log : {false, true}) {
        const std::int64_t M = N > 65536 ? 5 : 9;
        if (!fits(M, N)) continue;
        auto x = random_values(dt, M * N, seed++, 2.0);
        for (std::int64_t j = 0; j < N; j += 3) x[0 * N + j] = -INFINITY;  // masked
        for (std::int64_t j = 0; j < N; ++j) x[1 * N + j] = -INFINITY;     // fully masked
        x[2 * N + N / 2] = NAN;
        x[3 * N + N - 1] = INFINITY;
        for (std::int64_t j = 1; j < N; ++j) x[4 * N + j] = -INFINITY;  // one live logit
        check_forward_values({dt, dt, M, N, log}, x);
      }
}

// Large-magnitude rows (issue #26), at the dtype's normal tolerance: fp16 near its maximum
// (65504, where its values are 32 apart), bf16 near 1e4, fp32 near 1e4 and 1e6, rows of either
// sign. Each exponent is (x - max) * log2(e); the prescaled x * log2(e) - max * log2(e) in one
// FFMA that the 16-bit kernels used lost 4e-3 relative on fp16 logits near 65000 (N = 32000); they
// take it again only for rows whose max is within kFastExpMax = 32 of 0: the 16-bit rows centred
// at +-24 sit at that bound, where its error is largest.
struct LargeRows {
  DType dt;
  double center, spread;  // values center +- spread * normal(0, 1), rounded to dt
};
const LargeRows kLargeRows[] = {
    {DType::f16, 65504.0 - 16 * 32, 4 * 32}, {DType::bf16, 1e4, 200}, {DType::f32, 1e4, 2}, {DType::f32, 1e6, 2},
    {DType::f16, 24, 2}, {DType::bf16, 24, 2}};

// Row i centred at +center (even i) or -center (odd i), within the dtype's finite range.
std::vector<double> large_values(const LargeRows& r, std::int64_t M, std::int64_t N, std::uint64_t seed) {
  auto x = random_values(DType::f32, M * N, seed, r.spread);
  const double top = r.dt == DType::f16 ? 65504.0 : 3e38;
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double& v = x[i * N + j];
      v = round_to(r.dt, (i % 2 ? -r.center : r.center) + v);
      v = std::fmax(-top, std::fmin(top, v));
    }
  return x;
}

TEST_F(SoftmaxGpu, ForwardLargeMagnitudes) {
  std::uint64_t seed = 650;
  for (const LargeRows& r : kLargeRows)
    for (std::int64_t N : {7, 4096, 32000, 262144, 1048576})
      for (bool log : {false, true}) {
        const std::int64_t M = N > 65536 ? 2 : 8;
        if (!fits(M, N)) continue;
        check_forward_values({r.dt, r.dt, M, N, log}, large_values(r, M, N, seed++));
      }
  // The streaming kernel's mixed dtypes: fp32 probabilities from fp16 logits near 65504.
  check_forward_values({DType::f16, DType::f32, 8, 32000}, large_values(kLargeRows[0], 8, 32000, seed++));
}

double row_sum(const std::vector<double>& y, std::int64_t i, std::int64_t N) {
  double s = 0;
  for (std::int64_t j = 0; j < N; ++j) s += y[i * N + j];
  return s;
}

TEST_F(SoftmaxGpu, RowsSumToOne) {
  std::uint64_t seed = 700;
  for (DType dt : {DType::f32, DType::bf16})
    for (std::int64_t N : {7, 1128, 50257, 262144}) {
      const std::int64_t M = N > 65536 ? 2 : 16;
      if (!fits(M, N)) continue;
      auto x = random_values(dt, M * N, seed++, 3.0);
      auto dx = upload(dt, M, N, x);
      auto dy = output(dt, M, N);
      softmax_forward({dx->view(), dy->view()});
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const auto y = dy->download();
      // fp32: each term within ~1e-6 relative; 16-bit: each rounded to half an ulp (2^-9 bf16).
      const double tol = dt == DType::f32 ? 1e-5 : 4e-3;
      for (std::int64_t i = 0; i < M; ++i) EXPECT_NEAR(row_sum(y, i, N), 1.0, tol) << "row " << i << " N=" << N;
    }
}

// softmax(x + c) = softmax(x): x on a grid where x + c is exact, both runs against one reference.
TEST_F(SoftmaxGpu, ShiftInvariance) {
  std::uint64_t seed = 800;
  for (DType dt : {DType::f32, DType::bf16})
    for (std::int64_t N : {256, 4097, 131072}) {
      const std::int64_t M = N > 65536 ? 2 : 19;
      if (!fits(M, N)) continue;
      const double grid = dt == DType::f32 ? 1.0 / 1024 : 1.0 / 8, c = dt == DType::f32 ? 64.0 : 16.0;
      auto x = random_values(DType::f32, M * N, seed++, 2.0);
      for (auto& v : x) v = std::fmax(-7.5, std::fmin(7.5, std::round(v / grid) * grid));
      auto shifted = x;
      for (auto& v : shifted) v += c;
      for (bool log : {false, true}) {
        const auto want = ref::softmax(M, N, x, log);
        for (const auto* in : {&x, &shifted}) {
          SCOPED_TRACE(std::string("shift ") + (in == &x ? "0" : "c") + " " + dtype_name(dt) + " N=" +
                       std::to_string(N) + (log ? " log" : ""));
          auto dx = upload(dt, M, N, *in);
          auto dy = output(dt, M, N);
          SoftmaxForward a{dx->view(), dy->view(), log};
          softmax_forward(a);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          if (log) EXPECT_TRUE(all_close(dy->download(), want, dt, tolerance_for(dt), log_floors(x, M, N), "y"));
          else EXPECT_TRUE(all_close(dy->download(), want, dt, "y"));
        }
      }
    }
}

// ---- backward ----------------------------------------------------------------------------

struct BwdCase {
  DType dt, dx;
  std::int64_t M, N;
  bool log = false;
  Layout layout{};
  int in_place = 0;  // 1: dx over dy, 2: dx over y
};

void check_backward(const BwdCase& c, std::uint64_t seed) {
  if (!fits(c.M, c.N) || !in_case_slice()) return;
  SCOPED_TRACE(std::string(c.log ? "log_softmax" : "softmax") + "_backward " + dtype_name(c.dt) + "->" +
               dtype_name(c.dx) + " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) +
               " pad=" + std::to_string(c.layout.pad) + " off=" + std::to_string(c.layout.offset) +
               " in_place=" + std::to_string(c.in_place));
  const std::int64_t M = c.M, N = c.N;
  // y: a real (log-)softmax output rounded to the dtype, as the backward receives it.
  auto x = random_values(DType::f32, M * N, seed, 2.0);
  auto y = ref::softmax(M, N, x, c.log);
  for (auto& v : y) v = round_to(c.dt, v);
  auto g = random_values(c.dt, M * N, seed + 1, 1.0);
  auto want = ref::softmax_backward(M, N, y, g, c.log);

  auto dy_in = upload(c.dt, M, N, y, c.layout);
  auto dg = upload(c.dt, M, N, g, c.layout);
  std::unique_ptr<DeviceMatrix> ddx;
  SoftmaxBackward a;
  a.y = dy_in->view();
  a.dy = dg->view();
  a.log = c.log;
  DeviceMatrix* out;
  if (c.in_place == 1) {
    a.dx = dg->view();
    out = dg.get();
  } else if (c.in_place == 2) {
    a.dx = dy_in->view();
    out = dy_in.get();
  } else {
    ddx = output(c.dx, M, N, c.layout);
    a.dx = ddx->view();
    out = ddx.get();
  }
  softmax_backward(a);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const DType odt = c.in_place ? c.dt : c.dx;
  std::vector<double> floor(static_cast<std::size_t>(M * N));
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) floor[i * N + j] = 2e-6 * want.scale[i];
  EXPECT_TRUE(all_close(out->download(), want.dx, odt, tolerance_for(odt), floor, "dx"));
}

TEST_F(SoftmaxGpu, BackwardEveryShape) {
  std::uint64_t seed = 1000;
  for (DType dt : {DType::f32, DType::bf16})
    for (std::int64_t N : kRowLengths)
      for (std::int64_t M : kRowCounts) {
        if (!fits(M, N)) continue;
        check_backward({dt, dt, M, N, (seed % 2) == 1}, seed);
        ++seed;
      }
}

TEST_F(SoftmaxGpu, BackwardVariants) {
  std::uint64_t seed = 1100;
  for (std::int64_t N : {7, 1024, 4097, 50257}) {
    for (bool log : {false, true}) {
      check_backward({DType::f16, DType::f16, 64, N, log}, seed++);
      check_backward({DType::bf16, DType::f32, 64, N, log}, seed++);           // fp32 dx
      check_backward({DType::bf16, DType::bf16, 37, N, log, {3, 1}}, seed++);  // misaligned, strided
      check_backward({DType::f32, DType::f32, 37, N, log, {5, 3}}, seed++);
      check_backward({DType::bf16, DType::bf16, 33, N, log, {}, 1}, seed++);   // dx over dy
      check_backward({DType::f32, DType::f32, 33, N, log, {}, 2}, seed++);     // dx over y
    }
  }
  check_backward({DType::bf16, DType::bf16, 1, 1048576, false, {0, 1}, 1}, seed++);
  check_backward({DType::f32, DType::f32, 1, 1048576, true}, seed++);
}

TEST_F(SoftmaxGpu, BackwardNanStaysInItsRow) {
  const std::int64_t M = 4, N = 4096;
  auto y = ref::softmax(M, N, random_values(DType::f32, M * N, 1200, 2.0), false);
  auto g = random_values(DType::f32, M * N, 1201, 1.0);
  g[1 * N + 17] = NAN;
  auto want = ref::softmax_backward(M, N, y, g, false);
  auto dy_in = upload(DType::f32, M, N, y);
  auto dg = upload(DType::f32, M, N, g);
  auto ddx = output(DType::f32, M, N);
  softmax_backward({dy_in->view(), dg->view(), ddx->view()});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<double> floor(static_cast<std::size_t>(M * N));
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) floor[i * N + j] = 2e-6 * want.scale[i];
  EXPECT_TRUE(all_close(ddx->download(), want.dx, DType::f32, tolerance_for(DType::f32), floor, "dx"));
}

// Tiles the power-of-two shapes above do not reach: fp16 rows of one chunk (N <= 8), fp32 rows
// past 16 CTAs of 8-chunk tiles (the 12-chunk tile: 262144 < N <= 393216) and fp16 rows past
// the resident tiles (the backward's streaming kernel).
TEST_F(SoftmaxGpu, TilesOffThePowersOfTwo) {
  std::uint64_t seed = 1300;
  for (bool log : {false, true}) {
    for (std::int64_t N = 1; N <= 8; ++N) {
      check_forward({DType::f16, DType::f16, 199, N, log}, seed++);
      check_backward({DType::f16, DType::f16, 199, N, log}, seed++);
    }
    check_forward({DType::f32, DType::f32, 9, 300000, log}, seed++);
    check_backward({DType::f32, DType::f32, 9, 300000, log}, seed++);
    check_backward({DType::f16, DType::f16, 1, 1048576, log}, seed++);
  }
}

}  // namespace
}  // namespace tachyon::test

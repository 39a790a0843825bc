// The reduction ladder (core/reduce.cuh) on its own, for every team shape the row kernels use:
// a power of two of threads up to a warp with many rows a CTA, whole warps (3, 5 and 13 of them
// too: slot counts off the powers of two) with one or two rows a CTA, and clusters of 2 to 16
// CTAs; both exchange scratches (ReduceScratch, PairedReduceScratch); every combine the kernels
// use; three reductions in a row (the two buffers and the cluster barriers' phases in turn).
// Every thread of every row must hold the row's result: exact for sums and maxima of small
// integers, to a few fp32 ulps for the exponential sums and the moments.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/gpu.h"
#include "core/reduce.cuh"
#include "core/row_launch.cuh"

namespace tachyon::test {
namespace {

using detail::Float2;
using detail::RowConfig;
using detail::RowTeam;

constexpr int kReps = 3;

struct LadderParams {
  int threads_per_row = 0, rows_per_cta = 0, cluster_size = 1;
  long long rows = 0;
  float* out = nullptr;  // [rows][team size][kReps][2]
};

enum class Combine { sum, sum2, max, max_sum_exp, max_sum_exp_split, moments };

// Thread t's value in row r, reduction rep: small integers in [-5, 5] (sums stay exact).
__host__ __device__ inline float ladder_value(long long r, int t, int rep) {
  return static_cast<float>((r * 7 + t * 3 + rep * 5) % 11) - 5.f;
}

template <class S, Combine kC>
__global__ void ladder_kernel(const __grid_constant__ LadderParams p) {
  __shared__ S scratch;
  detail::ReduceStateOf<S> reduce{&scratch};
  const RowTeam team = detail::start_team(p, reduce);
  const long long row = team.row();
  const bool valid = row < p.rows;
  detail::cluster_reduce_ready(team);
  for (int rep = 0; rep < kReps; ++rep) {
    // Rows past the end join every reduction, as in the row kernels.
    const float v = valid ? ladder_value(row, team.rank(), rep) : 0.f;
    Float2 r{0.f, 0.f};
    if constexpr (kC == Combine::sum) {
      r.a = detail::row_reduce(v, detail::Sum{}, team, reduce);
    } else if constexpr (kC == Combine::sum2) {
      r = detail::row_reduce(Float2{v, 2.f * v}, detail::Sum2{}, team, reduce);
    } else if constexpr (kC == Combine::max) {
      r.a = detail::row_reduce(v, detail::Max{}, team, reduce);
    } else if constexpr (kC == Combine::max_sum_exp) {
      r = detail::row_reduce(Float2{v, 1.f}, detail::MaxSumExp{}, team, reduce);
    } else if constexpr (kC == Combine::max_sum_exp_split) {
      r = detail::row_reduce(Float2{v, 1.f}, detail::MaxSumExpSplit{}, team, reduce);
    } else {
      const detail::RowMoments m = detail::row_moments(
          v, 1, team.size(), [&](float about) { return (v - about) * (v - about); }, team, reduce);
      r = {m.mean, m.m2};
    }
    if (valid) {
      float* o = p.out + ((row * team.size() + team.rank()) * kReps + rep) * 2;
      o[0] = r.a;
      o[1] = r.b;
    }
  }
}

struct Team {
  int threads_per_row, rows_per_cta, cluster_size;
};

std::string describe(const Team& t, const char* scratch, Combine c) {
  return std::string(scratch) + " combine " + std::to_string(static_cast<int>(c)) + " threads_per_row " +
         std::to_string(t.threads_per_row) + " rows_per_cta " + std::to_string(t.rows_per_cta) + " cluster " +
         std::to_string(t.cluster_size);
}

// The row's expected (a, b) for a rep, in double.
void expected(Combine c, long long row, int size, int rep, double& a, double& b) {
  double sum = 0, mx = -INFINITY;
  for (int t = 0; t < size; ++t) {
    const double v = ladder_value(row, t, rep);
    sum += v;
    mx = std::max(mx, v);
  }
  switch (c) {
    case Combine::sum: a = sum, b = 0; break;
    case Combine::sum2: a = sum, b = 2 * sum; break;
    case Combine::max: a = mx, b = 0; break;
    case Combine::max_sum_exp:
    case Combine::max_sum_exp_split: {
      double s = 0;
      for (int t = 0; t < size; ++t) s += std::exp(ladder_value(row, t, rep) - mx);
      a = mx, b = s;
      break;
    }
    case Combine::moments: {
      const double mean = sum / size;
      double m2 = 0;
      for (int t = 0; t < size; ++t) m2 += (ladder_value(row, t, rep) - mean) * (ladder_value(row, t, rep) - mean);
      a = mean, b = m2;
      break;
    }
  }
}

template <class S, Combine kC>
void check_ladder(const Team& t, const char* scratch) {
  SCOPED_TRACE(describe(t, scratch, kC));
  RowConfig cfg;
  cfg.threads_per_row = t.threads_per_row;
  cfg.rows_per_cta = t.rows_per_cta;
  cfg.cluster_size = t.cluster_size;
  cfg.cta_threads = t.threads_per_row * t.rows_per_cta;
  cfg.items = 1;
  LadderParams p;
  p.threads_per_row = t.threads_per_row;
  p.rows_per_cta = t.rows_per_cta;
  p.cluster_size = t.cluster_size;
  p.rows = 3LL * t.rows_per_cta + 1;  // the last group has rows past the end
  const long long groups = (p.rows + t.rows_per_cta - 1) / t.rows_per_cta;
  const int size = t.threads_per_row * t.cluster_size;
  const std::size_t count = static_cast<std::size_t>(p.rows) * size * kReps * 2;
  ASSERT_EQ(cudaMalloc(&p.out, count * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemset(p.out, 0xff, count * sizeof(float)), cudaSuccess);  // NaN: an unwritten result fails
  detail::launch_rows("ladder_test", ladder_kernel<S, kC>, cfg, groups, 0, nullptr, p);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> out(count);
  ASSERT_EQ(cudaMemcpy(out.data(), p.out, count * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(p.out);
  const bool exact = kC == Combine::sum || kC == Combine::sum2 || kC == Combine::max;
  int failures = 0;
  for (long long r = 0; r < p.rows && failures < 5; ++r)
    for (int rep = 0; rep < kReps; ++rep) {
      double a, b;
      expected(kC, r, size, rep, a, b);
      // __expf and the rescaled partial sums: a few ulps a term; the moments' centred terms alike.
      const double tol_b = exact ? 0.0 : 1e-5 * std::fabs(b) + 1e-6;
      const double tol_a = exact || kC != Combine::moments ? 0.0 : 1e-6 * (1 + std::fabs(a));
      for (int th = 0; th < size && failures < 5; ++th) {
        const float* o = &out[((r * size + th) * kReps + rep) * 2];
        const bool ok = std::fabs(o[0] - a) <= tol_a && std::fabs(o[1] - b) <= tol_b;
        if (!ok) {
          ++failures;
          ADD_FAILURE() << "row " << r << " rep " << rep << " thread " << th << ": (" << o[0] << ", " << o[1]
                        << ") expected (" << a << ", " << b << ")";
        }
      }
    }
}

template <class S>
void check_all(const Team& t, const char* scratch) {
  check_ladder<S, Combine::sum>(t, scratch);
  check_ladder<S, Combine::sum2>(t, scratch);
  check_ladder<S, Combine::max>(t, scratch);
  check_ladder<S, Combine::max_sum_exp>(t, scratch);
  check_ladder<S, Combine::max_sum_exp_split>(t, scratch);
}

std::vector<Team> teams() {
  std::vector<Team> v;
  for (int tpr : {1, 2, 4, 8, 16, 32}) v.push_back({tpr, 128 / tpr, 1});
  for (int tpr : {64, 96, 128, 160, 256, 416, 512}) {
    v.push_back({tpr, 1, 1});
    if (2 * tpr <= detail::kMaxRowThreads) v.push_back({tpr, 2, 1});
  }
  for (int cluster : {2, 4, 8, 16})
    for (int tpr : {32, 96, 256, 416, 512}) v.push_back({tpr, 1, cluster});
  return v;
}

TEST(ReduceLadder, EveryThreadHoldsTheRowsResult) {
  TACHYON_REQUIRE_GPU();
  for (const Team& t : teams()) {
    check_all<detail::ReduceScratch>(t, "ReduceScratch");
    check_all<detail::PairedReduceScratch>(t, "PairedReduceScratch");
    check_ladder<detail::ReduceScratch, Combine::moments>(t, "ReduceScratch");
  }
}

}  // namespace
}  // namespace tachyon::test

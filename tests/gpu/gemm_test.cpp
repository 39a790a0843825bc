// GEMM against an fp64 reference: shapes that cover the tile edges, both B layouts, every
// output dtype, every epilogue, the swapped small-M plan, the fallback for what TMA cannot
// describe, strided and offset views, C in place, and 8192^3 checked at sampled elements.
//
// Tolerance, per element, from K and the dtypes: the inputs are exact (rounded to bf16/f16
// when generated), products are exact in fp32, so the only errors are the fp32 accumulation
// (bounded by 2^-20 sqrt(K) sum_k |a_k b_k|, generous against the tensor cores' adder tree)
// and the final rounding to the output dtype (1 ulp + 1e-3 relative for 16-bit, 1e-5 for f32).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/gpu.h"
#include "common/host_tensor.h"
#include "common/reference.h"
#include "gemm/tma.h"
#include "tachyon/error.h"
#include "tachyon/gemm.h"

namespace tachyon::test {
namespace {

// ---- the specification, as tables -----------------------------------------------------
struct Shape {
  std::int64_t m, n, k;
};

// Tile edges (127/128/129 against 128-row and 64/128/256-column tiles, K against 64-wide
// k-blocks), single rows and columns, K = 1 / 127 / 129 / 4099 (bf16 row strides TMA cannot
// take: the fallback), N = 127 / 129 (outputs TMA cannot store: direct stores), small M with
// a long N (the swapped plan), K = 8192.
const Shape kShapes[] = {
    {1, 1, 1},      {8, 8, 8},         {64, 64, 64},     {127, 129, 128}, {128, 128, 128}, {129, 127, 64},
    {8, 1000, 129}, {1000, 127, 4099}, {129, 64, 8192},  {1, 28672, 64},  {32, 28672, 128}, {4099, 129, 64},
    {1000, 1000, 1000}, {256, 512, 8192},
};
// Under compute-sanitizer (quick mode): the edges only.
const Shape kQuickShapes[] = {{1, 1, 1}, {8, 8, 8}, {127, 129, 128}, {129, 127, 64}, {32, 28672, 128},
                              {8, 1000, 129}, {256, 256, 192}};

const DType kInputs[] = {DType::bf16, DType::f16};
const DType kOutputs[] = {DType::bf16, DType::f32, DType::f16};
const BLayout kLayouts[] = {BLayout::nk, BLayout::kn};

struct Epilogue {
  const char* name;
  float alpha, beta;
  Activation act;
  bool bias;
  DType bias_dtype;
};
const Epilogue kEpilogues[] = {
    {"plain", 1.f, 0.f, Activation::none, false, DType::f32},
    {"alpha_beta_bias_silu", 0.5f, 0.75f, Activation::silu, true, DType::f32},
    {"bias_bf16_relu", 1.f, 0.f, Activation::relu, true, DType::bf16},
    {"alpha_bias_f16_gelu", -1.25f, 0.f, Activation::gelu_tanh, true, DType::f16},
    {"beta_only", 1.f, -1.f, Activation::none, false, DType::f32},
    // Each branch of the beta == 0 epilogue: scale only, bias only, activation without bias.
    {"alpha_only", 2.f, 0.f, Activation::none, false, DType::f32},
    {"bias_f32_only", 1.f, 0.f, Activation::none, true, DType::f32},
    {"silu_no_bias", 1.f, 0.f, Activation::silu, false, DType::f32},
};

// ---- reference ---------------------------------------------------------------------------
double act_ref(Activation a, double x) {
  switch (a) {
    case Activation::relu: return ref::relu(x);
    case Activation::silu: return ref::silu(x);
    case Activation::gelu_tanh: return ref::gelu_tanh(x);
    default: return x;
  }
}

// The problem's data on the host (values exactly as the device sees them) and the fp64
// products P = A B^T with their magnitude sums, shared by every variant run on it.
struct Problem {
  Shape s;
  DType in;
  std::vector<double> a, b;     // A (m, k), B (n, k), row-major
  std::vector<double> p, mag;   // (m, n)
};

Problem make_problem(Shape s, DType in, std::uint64_t seed) {
  Problem pr;
  pr.s = s;
  pr.in = in;
  pr.a = random_values(in, s.m * s.k, seed * 2 + 1);
  pr.b = random_values(in, s.n * s.k, seed * 2 + 2);
  pr.p.assign(static_cast<std::size_t>(s.m * s.n), 0.0);
  pr.mag.assign(static_cast<std::size_t>(s.m * s.n), 0.0);
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t j = 0; j < s.n; ++j) {
      const double* ar = &pr.a[i * s.k];
      const double* br = &pr.b[j * s.k];
      double acc = 0, mag = 0;
      for (std::int64_t k = 0; k < s.k; ++k) {
        acc += ar[k] * br[k];
        mag += std::fabs(ar[k] * br[k]);
      }
      pr.p[i * s.n + j] = acc;
      pr.mag[i * s.n + j] = mag;
    }
  return pr;
}

double tolerance(DType out, double ref, double mag, std::int64_t k) {
  const double acc = std::ldexp(1.0, -20) * std::sqrt(static_cast<double>(k) + 1) * mag;
  const double round = out == DType::f32 ? 1e-5 * std::fabs(ref) : ulp(out, ref) + 1e-3 * std::fabs(ref);
  return acc + round + 1e-30;
}

::testing::AssertionResult compare(const std::vector<double>& got, const std::vector<double>& want,
                                   const std::vector<double>& tol, const std::string& what) {
  std::size_t bad = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool ok = std::isfinite(got[i]) && std::fabs(got[i] - want[i]) <= tol[i];
    if (!ok && bad++ < 5) first << "\n  [" << i << "] got " << got[i] << " expected " << want[i] << " tol " << tol[i];
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << got.size() << " differ" << first.str();
}

// B on the device in the requested layout: (n, k) as it is, or its transpose (k, n).
std::vector<double> b_storage(const Problem& pr, BLayout layout) {
  if (layout == BLayout::nk) return pr.b;
  std::vector<double> t(pr.b.size());
  for (std::int64_t j = 0; j < pr.s.n; ++j)
    for (std::int64_t k = 0; k < pr.s.k; ++k) t[k * pr.s.n + j] = pr.b[j * pr.s.k + k];
  return t;
}

// Runs one variant on the problem and compares every element.
void check_variant(const Problem& pr, BLayout layout, DType out, const Epilogue& ep, bool c_in_place = false) {
  const Shape s = pr.s;
  SCOPED_TRACE(std::string(dtype_name(pr.in)) + "->" + dtype_name(out) + " M=" + std::to_string(s.m) +
               " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k) +
               (layout == BLayout::nk ? " B(N,K) " : " B(K,N) ") + ep.name + (c_in_place ? " C=D" : ""));
  DeviceMatrix a(pr.in, s.m, s.k);
  a.upload(pr.a);
  DeviceMatrix b(pr.in, layout == BLayout::nk ? s.n : s.k, layout == BLayout::nk ? s.k : s.n);
  b.upload(b_storage(pr, layout));
  DeviceMatrix d(out, s.m, s.n);
  std::vector<double> c_vals, bias_vals;
  std::unique_ptr<DeviceMatrix> c, bias;
  if (ep.beta != 0.f) {
    c_vals = random_values(out, s.m * s.n, 99 + static_cast<std::uint64_t>(s.m * 7 + s.n));
    if (c_in_place) {
      d.upload(c_vals);
    } else {
      c = std::make_unique<DeviceMatrix>(out, s.m, s.n);
      c->upload(c_vals);
    }
  }
  if (ep.bias) {
    bias_vals = random_values(ep.bias_dtype, s.n, 77 + static_cast<std::uint64_t>(s.n));
    bias = std::make_unique<DeviceMatrix>(ep.bias_dtype, 1, s.n);
    bias->upload(bias_vals);
  }
  GemmArgs g;
  g.a = a.view();
  g.b = b.view();
  g.d = d.view();
  g.b_layout = layout;
  g.alpha = ep.alpha;
  g.beta = ep.beta;
  g.activation = ep.act;
  if (ep.beta != 0.f) g.c = c_in_place ? d.view() : c->view();
  if (ep.bias) g.bias = bias->vector();
  gemm(g);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  std::vector<double> want(pr.p.size()), tol(pr.p.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    double v = ep.alpha * pr.p[i];
    if (ep.beta != 0.f) v += ep.beta * c_vals[i];
    if (ep.bias) v += bias_vals[i % static_cast<std::size_t>(s.n)];
    want[i] = act_ref(ep.act, v);
    // The activations have slope <= 1.13: the input error bound carries over.
    tol[i] = 1.2 * tolerance(out, want[i], std::fabs(ep.alpha) * pr.mag[i], s.k) +
             (ep.beta != 0.f || ep.bias ? 1e-6 * std::fabs(v) : 0.0);
  }
  EXPECT_TRUE(compare(d.download(), want, tol, "gemm"));
}

class GemmGpu : public ::testing::Test {
 protected:
  void SetUp() override { TACHYON_REQUIRE_GPU(); }
};

// Every shape x input dtype x B layout x output dtype, plain epilogue.
TEST_F(GemmGpu, ShapesLayoutsAndOutputDtypes) {
  std::vector<Shape> shapes;
  if (quick_mode()) shapes.assign(std::begin(kQuickShapes), std::end(kQuickShapes));
  else shapes.assign(std::begin(kShapes), std::end(kShapes));
  std::uint64_t seed = 1;
  for (const Shape& s : shapes)
    for (DType in : kInputs) {
      Problem pr = make_problem(s, in, seed++);
      for (BLayout layout : kLayouts)
        for (DType out : kOutputs) {
          if (quick_mode() && out == DType::f16) continue;
          check_variant(pr, layout, out, kEpilogues[0]);
        }
    }
}

// Every epilogue on one shape of each path: TMA store, direct store, swapped, fallback.
TEST_F(GemmGpu, Epilogues) {
  const Shape shapes[] = {{1000, 1000, 1000}, {129, 127, 64}, {32, 28672, 128}, {1000, 127, 4099}};
  const Shape quick[] = {{256, 256, 192}, {129, 127, 64}, {32, 28672, 128}, {8, 8, 8}};
  std::uint64_t seed = 100;
  for (int i = 0; i < 4; ++i) {
    const Shape s = quick_mode() ? quick[i] : shapes[i];
    Problem pr = make_problem(s, DType::bf16, seed++);
    for (const Epilogue& ep : kEpilogues)
      for (DType out : kOutputs) {
        if (quick_mode() && out == DType::f16) continue;
        check_variant(pr, BLayout::nk, out, ep);
      }
    check_variant(pr, BLayout::kn, DType::bf16, kEpilogues[1]);
  }
}

// A thread whose first CUDA work is a GEMM, as torch's autograd thread running a linear
// backward: the tensor map's driver call must find the device's context there too.
TEST_F(GemmGpu, FirstCudaCallOfAThread) {
  const Problem pr = make_problem({128, 256, 64}, DType::bf16, 41);
  DeviceMatrix a(pr.in, pr.s.m, pr.s.k), b(pr.in, pr.s.n, pr.s.k), d(DType::f32, pr.s.m, pr.s.n);
  a.upload(pr.a);
  b.upload(pr.b);
  GemmArgs g;
  g.a = a.view();
  g.b = b.view();
  g.d = d.view();
  std::string error;
  std::thread worker([&] {
    try {
      gemm(g);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  worker.join();
  ASSERT_EQ(error, "");
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<double> tol(pr.p.size());
  for (std::size_t i = 0; i < tol.size(); ++i) tol[i] = tolerance(DType::f32, pr.p[i], pr.mag[i], pr.s.k);
  EXPECT_TRUE(compare(d.download(), pr.p, tol, "gemm on a fresh thread"));
}

TEST_F(GemmGpu, CInPlace) {
  Problem pr = make_problem({300, 520, 256}, DType::bf16, 7);
  for (DType out : {DType::bf16, DType::f32}) check_variant(pr, BLayout::nk, out, kEpilogues[1], /*c_in_place=*/true);
}

// Padded row strides (TMA path, 16-byte multiples), and base pointers one element off (the
// fallback), and a 3-D A whose leading dimensions collapse into M.
TEST_F(GemmGpu, StridedOffsetAndBatchedViews) {
  const std::int64_t m = 200, n = 136, k = 96;
  Problem pr = make_problem({m, n, k}, DType::bf16, 11);
  std::vector<double> want = pr.p;
  std::vector<double> tol(want.size());
  for (std::size_t i = 0; i < want.size(); ++i) tol[i] = tolerance(DType::f32, want[i], pr.mag[i], k);
  for (int offset : {0, 1}) {
    SCOPED_TRACE("offset " + std::to_string(offset));
    DeviceMatrix a(DType::bf16, m, k, k + 8 * 3, offset);
    DeviceMatrix b(DType::bf16, n, k, k + 8, offset);
    DeviceMatrix d(DType::f32, m, n, n + 4 * 5, offset);
    a.upload(pr.a);
    b.upload(pr.b);
    gemm(a.view(), b.view(), d.view());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(compare(d.download(), want, tol, "strided"));
  }
  DeviceMatrix a(DType::bf16, m, k), b(DType::bf16, n, k), d(DType::f32, m, n);
  a.upload(pr.a);
  b.upload(pr.b);
  gemm(view(a.data(), DType::bf16, {2, m / 2, k}), b.view(), view(d.data(), DType::f32, {2, m / 2, n}));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(compare(d.download(), want, tol, "batched A"));
}

// K = 0: D = act(beta C + bias).
TEST_F(GemmGpu, EmptyK) {
  const std::int64_t m = 70, n = 40;
  DeviceMatrix c(DType::f32, m, n), d(DType::f32, m, n), bias(DType::f32, 1, n);
  auto cv = random_values(DType::f32, m * n, 5), bv = random_values(DType::f32, n, 6);
  c.upload(cv);
  bias.upload(bv);
  GemmArgs g;
  g.a = view(nullptr, DType::bf16, {m, 0});
  g.b = view(nullptr, DType::bf16, {n, 0});
  g.d = d.view();
  g.c = c.view();
  g.bias = bias.vector();
  g.beta = 2.f;
  g.activation = Activation::relu;
  gemm(g);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<double> want(cv.size()), tol(cv.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    want[i] = ref::relu(2.0 * cv[i] + bv[i % n]);
    tol[i] = 1e-5 * std::fabs(want[i]) + 1e-6;
  }
  EXPECT_TRUE(compare(d.download(), want, tol, "K = 0"));
}

// Repeated calls on the same tensors reuse the encoded tensor maps.
TEST_F(GemmGpu, TensorMapsAreCached) {
  DeviceMatrix a(DType::bf16, 256, 128), b(DType::bf16, 256, 128), d(DType::bf16, 256, 256);
  a.upload(random_values(DType::bf16, 256 * 128, 1));
  b.upload(random_values(DType::bf16, 256 * 128, 2));
  gemm(a.view(), b.view(), d.view());
  const auto encodes = detail::gemm::tma_encode_count();
  for (int i = 0; i < 3; ++i) gemm(a.view(), b.view(), d.view());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(detail::gemm::tma_encode_count(), encodes);
}

// 8192^3 (and a 4099-row tail) at sampled elements: one per 128 x 64 block of the output,
// plus the four corners, each against an fp64 dot product.
void check_large(Shape s, DType out, BLayout layout, std::uint64_t seed) {
  SCOPED_TRACE(std::string("large ") + dtype_name(out) + " M=" + std::to_string(s.m) + " N=" + std::to_string(s.n) +
               " K=" + std::to_string(s.k));
  auto av = random_values(DType::bf16, s.m * s.k, seed);
  auto bv = random_values(DType::bf16, s.n * s.k, seed + 1);
  DeviceMatrix a(DType::bf16, s.m, s.k), d(out, s.m, s.n);
  a.upload(av);
  std::unique_ptr<DeviceMatrix> b;
  if (layout == BLayout::nk) {
    b = std::make_unique<DeviceMatrix>(DType::bf16, s.n, s.k);
    b->upload(bv);
  } else {
    std::vector<double> t(bv.size());
    for (std::int64_t j = 0; j < s.n; ++j)
      for (std::int64_t k = 0; k < s.k; ++k) t[k * s.n + j] = bv[j * s.k + k];
    b = std::make_unique<DeviceMatrix>(DType::bf16, s.k, s.n);
    b->upload(t);
  }
  GemmArgs g;
  g.a = a.view();
  g.b = b->view();
  g.d = d.view();
  g.b_layout = layout;
  gemm(g);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::size_t es = dtype_size(out);
  std::vector<unsigned char> raw(static_cast<std::size_t>(s.m * s.n) * es);
  ASSERT_EQ(cudaMemcpy(raw.data(), d.data(), raw.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  std::mt19937_64 gen(seed);
  std::vector<std::pair<std::int64_t, std::int64_t>> at = {{0, 0}, {0, s.n - 1}, {s.m - 1, 0}, {s.m - 1, s.n - 1}};
  for (std::int64_t i0 = 0; i0 < s.m; i0 += 128)
    for (std::int64_t j0 = 0; j0 < s.n; j0 += 64)
      at.push_back({i0 + static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(std::min<std::int64_t>(128, s.m - i0))),
                    j0 + static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(std::min<std::int64_t>(64, s.n - j0)))});
  std::vector<double> got, want, tol;
  for (auto [i, j] : at) {
    double acc = 0, mag = 0;
    for (std::int64_t k = 0; k < s.k; ++k) {
      acc += av[i * s.k + k] * bv[j * s.k + k];
      mag += std::fabs(av[i * s.k + k] * bv[j * s.k + k]);
    }
    std::vector<unsigned char> one(raw.begin() + (i * s.n + j) * es, raw.begin() + (i * s.n + j + 1) * es);
    got.push_back(decode(out, one)[0]);
    want.push_back(acc);
    tol.push_back(tolerance(out, acc, mag, s.k));
  }
  EXPECT_TRUE(compare(got, want, tol, "sampled"));
}

TEST_F(GemmGpu, LargeSampled) {
  if (quick_mode()) GTEST_SKIP() << "quick mode: large shapes skipped";
  check_large({8192, 8192, 8192}, DType::bf16, BLayout::nk, 21);
  check_large({8192, 8192, 8192}, DType::f32, BLayout::kn, 22);
  check_large({4099, 4099, 1000}, DType::bf16, BLayout::nk, 23);
}

}  // namespace
}  // namespace tachyon::test

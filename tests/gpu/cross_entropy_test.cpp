// Cross-entropy forward (loss, lse, fused gradient), backward from lse, and the lse combine,
// against fp64 references.
//
// Row lengths and counts from the issue (M x N bounded so the fp64 reference stays fast; rows
// with M = 1 always run), real vocabularies, int32 / int64 targets, ignore_index, out-of-range
// targets (NaN, no crash), every reduction, label smoothing, in-place gradients, strided and
// misaligned rows, -inf / NaN rows, deterministic sums.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/compare.h"
#include "common/gpu.h"
#include "common/host_tensor.h"
#include "common/row_cases.h"
#include "common/reference_softmax.h"
#include "tachyon/cross_entropy.h"
#include "tachyon/error.h"

namespace tachyon::test {
namespace {

// The loss alone (no gradient) has its own layouts: the register tile without a gradient
// pass for rows one CTA holds, a streaming CTA per row for longer ones (choose_stream_config,
// clusters only for few rows). Shapes on both sides of that line, misaligned rows (odd N),
// row counts that do not fill the last CTA, single rows.
struct LossOnlyShape {
  DType dt;
  std::int64_t M, N;
};
const LossOnlyShape kLossOnlyShapes[] = {
    {DType::bf16, 8192, 2048}, {DType::bf16, 4095, 4096}, {DType::f32, 5003, 1024}, {DType::f16, 3001, 4097},
    {DType::bf16, 1, 2048},    {DType::bf16, 199, 50257}, {DType::f32, 251, 32768}, {DType::bf16, 1, 4096},
    {DType::f16, 101, 20000},  {DType::f32, 129, 16384},  // resident on two 256-thread CTAs (ce_narrow)
};

struct Workspace {
  void* p = nullptr;
  ~Workspace() {
    if (p) cudaFree(p);
  }
  void* get(std::size_t bytes) {
    if (bytes && !p && cudaMalloc(&p, bytes) != cudaSuccess) p = nullptr;
    return p;
  }
};

const char* reduction_name(Reduction r) { return r == Reduction::none ? "none" : r == Reduction::sum ? "sum" : "mean"; }

struct Case {
  DType dt;
  std::int64_t M, N;
  DType tdt = DType::i64;
  Reduction red = Reduction::none;
  bool grad = false;
  bool in_place = false;
  float eps = 0.f;
  float grad_output = 1.f;
  std::int64_t ignore_index = -100;
  Layout layout{};
};

std::string describe(const Case& c) {
  return std::string("cross_entropy ") + dtype_name(c.dt) + " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) +
         " target=" + dtype_name(c.tdt) + " reduction=" + reduction_name(c.red) + (c.grad ? " +grad" : "") +
         (c.in_place ? " in-place" : "") + " eps=" + std::to_string(c.eps) + " pad=" + std::to_string(c.layout.pad) +
         " off=" + std::to_string(c.layout.offset);
}

struct Data {
  std::vector<double> x;
  std::vector<std::int64_t> t;
};

// Logits normal(0, 2) in the dtype; targets uniform in [0, N), ~1 in 8 rows ignored when M > 1.
Data make_data(const Case& c, std::uint64_t seed) {
  Data d;
  d.x = random_values(c.dt, c.M * c.N, seed, 2.0);
  std::mt19937_64 gen(seed + 17);
  d.t.resize(static_cast<std::size_t>(c.M));
  for (auto& t : d.t) {
    t = static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(c.N));
    if (c.M > 1 && gen() % 8 == 0) t = c.ignore_index;
  }
  return d;
}

std::vector<double> as_doubles(const std::vector<std::int64_t>& t) { return {t.begin(), t.end()}; }

struct Outputs {
  std::vector<double> loss, lse, dx;
};

// Where a case's gradient goes: over the logits (in place), or into a new matrix of the
// logits' layout, held by `owned`.
TensorView gradient_view(const Case& c, const DeviceMatrix& logits, std::unique_ptr<DeviceMatrix>& owned) {
  if (c.in_place) return logits.view();
  owned = std::make_unique<DeviceMatrix>(c.dt, c.M, c.N, c.N + c.layout.pad, c.layout.offset);
  return owned->view();
}

// The case's options on forward or backward arguments, then the workspace they ask for (from
// `ws`, which the caller keeps until it has synchronised).
template <class Args>
void set_options(const Case& c, Args& a, Workspace& ws, std::size_t (*workspace_bytes)(const Args&)) {
  a.reduction = c.red;
  a.ignore_index = c.ignore_index;
  a.label_smoothing = c.eps;
  a.workspace_bytes = workspace_bytes(a);
  a.workspace = ws.get(a.workspace_bytes);
}

Outputs run_forward(const Case& c, const Data& d) {
  const std::int64_t M = c.M, N = c.N;
  auto logits = upload(c.dt, M, N, d.x, c.layout);
  auto target = upload(c.tdt, 1, M, as_doubles(d.t));
  DeviceMatrix loss(DType::f32, 1, c.red == Reduction::none ? M : 1), lse(DType::f32, 1, M);
  std::unique_ptr<DeviceMatrix> dlogits;
  CrossEntropyForward a;
  a.logits = logits->view();
  a.target = target->vector();
  a.loss = loss.vector();
  a.lse = lse.vector();
  if (c.grad) a.dlogits = gradient_view(c, *logits, dlogits);
  a.grad_output = c.grad_output;
  Workspace ws;
  set_options(c, a, ws, cross_entropy_forward_workspace_bytes);
  cross_entropy_forward(a);
  Outputs o;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  o.loss = loss.download();
  o.lse = lse.download();
  if (c.grad) o.dx = (c.in_place ? logits : dlogits)->download();
  return o;
}

// Loss floors: a few fp32 ulps of lse (lse - x[t] cancels for a dominant target logit).
std::vector<double> loss_floors(const ref::CrossEntropyRef& want) {
  std::vector<double> f(want.lse.size());
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = 1e-6 * (1.0 + (std::isfinite(want.lse[i]) ? std::fabs(want.lse[i]) : 0.0));
  return f;
}

double mean_scale(const Case& c, const ref::CrossEntropyRef& r) {
  return c.red == Reduction::mean ? 1.0 / static_cast<double>(r.count) : 1.0;
}

// Callers keep M x N within the element budget (fits), or decide to go past it.
void check_values(const Case& c, const Data& d) {
  SCOPED_TRACE(describe(c));
  const std::int64_t M = c.M, N = c.N;
  const auto count_only = ref::cross_entropy(M, N, d.x, d.t, c.ignore_index, c.eps, false);
  const double g = c.grad_output * mean_scale(c, count_only);
  const auto want = ref::cross_entropy(M, N, d.x, d.t, c.ignore_index, c.eps, c.grad, g);
  const Outputs got = run_forward(c, d);
  EXPECT_TRUE(all_close(got.lse, want.lse, DType::f32, tolerance_for(DType::f32), std::vector<double>(M, 1e-6), "lse"));
  if (c.red == Reduction::none) {
    EXPECT_TRUE(all_close(got.loss, want.loss, DType::f32, tolerance_for(DType::f32), loss_floors(want), "loss"));
  } else {
    double mag = 0;
    for (double l : want.loss) mag += std::isfinite(l) ? std::fabs(l) : 0.0;
    const double total = c.red == Reduction::sum ? want.total : want.total / static_cast<double>(want.count);
    const double floor = 1e-6 * (mag + M) * (c.red == Reduction::mean ? mean_scale(c, want) : 1.0);
    EXPECT_TRUE(all_close(got.loss, {total}, DType::f32, tolerance_for(DType::f32, floor), "reduced loss"));
  }
  if (c.grad) {
    const double floor = 1e-6 * std::fabs(g);
    EXPECT_TRUE(all_close(got.dx, want.dx, c.dt, tolerance_for(c.dt, floor), "dlogits"));
  }
}

void check(const Case& c, std::uint64_t seed) {
  if (fits(c.M, c.N) && in_case_slice()) check_values(c, make_data(c, seed));
}

class CrossEntropyGpu : public ::testing::Test {
 protected:
  void SetUp() override { TACHYON_REQUIRE_GPU(); }
};

TEST_F(CrossEntropyGpu, ForwardEveryShape) {
  std::uint64_t seed = 1;
  for (DType dt : {DType::f32, DType::bf16})
    for (std::int64_t N : kRowLengths)
      for (std::int64_t M : kRowCounts) {
        if (!fits(M, N)) continue;
        Case c{dt, M, N};
        c.grad = seed % 2 == 0;  // every other shape with the fused gradient
        c.tdt = seed % 3 == 0 ? DType::i32 : DType::i64;
        check(c, seed++);
      }
}

TEST_F(CrossEntropyGpu, FusedGradientEveryShape) {
  std::uint64_t seed = 100;
  for (DType dt : {DType::bf16, DType::f32})
    for (std::int64_t N : kRowLengths)
      for (std::int64_t M : {std::int64_t{1}, std::int64_t{199}}) {
        if (!fits(M, N)) continue;
        Case c{dt, M, N};
        c.grad = true;
        c.red = Reduction::mean;
        check(c, seed++);
      }
}

TEST_F(CrossEntropyGpu, Vocabularies) {
  std::uint64_t seed = 200;
  for (std::int64_t N : kVocabularies)
    for (std::int64_t M : kRowCounts) {
      if (!fits(M, N)) continue;
      Case c{DType::bf16, M, N};
      c.grad = true;
      c.tdt = DType::i32;
      check(c, seed++);
      c.dt = DType::f16;
      c.grad = false;
      c.red = Reduction::sum;
      check(c, seed++);
    }
}

TEST_F(CrossEntropyGpu, EveryReductionAndGradOutput) {
  std::uint64_t seed = 300;
  for (Reduction red : {Reduction::none, Reduction::sum, Reduction::mean})
    for (std::int64_t N : {7, 4097, 50257})
      for (bool grad : {false, true}) {
        Case c{DType::bf16, 199, N};
        c.red = red;
        c.grad = grad;
        c.grad_output = 2.5f;
        check(c, seed++);
        c.dt = DType::f32;
        c.M = 1;
        check(c, seed++);
      }
}

TEST_F(CrossEntropyGpu, IgnoreIndexAndOutOfRangeTargets) {
  std::uint64_t seed = 400;
  for (DType tdt : {DType::i32, DType::i64})
    for (std::int64_t N : {7, 1024, 4097, 65536, 1048576}) {
      for (std::int64_t ignore : {std::int64_t{-100}, std::int64_t{3}}) {
        Case c{DType::bf16, N > 65536 ? 8 : 64, N};
        if (!fits(c.M, N)) continue;
        c.tdt = tdt;
        c.grad = true;
        c.red = Reduction::none;
        c.ignore_index = ignore;
        Data d = make_data(c, seed++);
        d.t[0] = ignore;
        d.t[1] = N;  // out of range: NaN loss and gradient row, no fault
        d.t[2] = -5;
        d.t[3] = tdt == DType::i64 ? (std::int64_t{1} << 40) : std::int64_t{2147483647};
        d.t[4] = -100 == ignore ? 3 : -100;  // the other one is an ordinary (in / out of range) target
        d.t[5] = N - 1;
        d.t[6] = 0;
        check_values(c, d);
        c.red = Reduction::mean;
        check_values(c, d);
      }
    }
}

TEST_F(CrossEntropyGpu, AllRowsIgnored) {
  Case c{DType::f32, 16, 1000};
  c.grad = true;
  c.red = Reduction::mean;
  Data d = make_data(c, 500);
  for (auto& t : d.t) t = -100;
  check_values(c, d);  // loss 0/0 = NaN, gradient all zero
  c.red = Reduction::sum;
  check_values(c, d);
}

TEST_F(CrossEntropyGpu, LabelSmoothing) {
  std::uint64_t seed = 600;
  for (DType dt : {DType::f32, DType::bf16})
    for (std::int64_t N : {1, 7, 1128, 32768, 262144, 1048576})
      for (float eps : {0.1f, 1.0f}) {
        Case c{dt, N > 65536 ? 2 : 77, N};
        c.eps = eps;
        c.grad = true;
        c.red = seed % 2 ? Reduction::mean : Reduction::none;
        check(c, seed++);
      }
}

TEST_F(CrossEntropyGpu, InPlaceGradient) {
  std::uint64_t seed = 700;
  for (DType dt : {DType::bf16, DType::f32})
    for (std::int64_t N : {7, 4096, 50257, 262144, 1048576}) {
      Case c{dt, N > 65536 ? 2 : 65, N};
      c.grad = true;
      c.in_place = true;
      c.red = Reduction::mean;
      check(c, seed++);
      c.eps = 0.05f;
      c.layout = {3, 1};
      check(c, seed++);
    }
}

TEST_F(CrossEntropyGpu, StridedAndMisaligned) {
  std::uint64_t seed = 800;
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
    for (std::int64_t N : {7, 760, 4097, 50257, 151936}) {
      Case c{dt, N > 65536 ? 3 : 37, N};
      c.grad = true;
      c.layout = {3, 1};
      check(c, seed++);
      c.layout = {8, 0};
      c.tdt = DType::i32;
      check(c, seed++);
    }
}

TEST_F(CrossEntropyGpu, InfAndNanRows) {
  std::uint64_t seed = 900;
  for (DType dt : {DType::f32, DType::bf16})
    for (std::int64_t N : {7, 4096, 65536, 1048576})
      for (float eps : {0.f, 0.1f}) {
        Case c{dt, 6, N};
        if (!fits(c.M, N)) continue;
        c.grad = true;
        c.eps = eps;
        Data d = make_data(c, seed++);
        for (std::int64_t j = 1; j < N; j += 2) d.x[0 * N + j] = -INFINITY;  // masked; target even
        d.t[0] = 0;
        for (std::int64_t j = 0; j < N; ++j) d.x[1 * N + j] = -INFINITY;  // all masked: NaN loss
        d.x[2 * N + N / 2] = NAN;
        d.x[3 * N] = INFINITY;
        d.t[4] = -100;
        d.x[4 * N + N - 1] = NAN;  // ignored row with NaN: loss 0
        check_values(c, d);
      }
}

TEST_F(CrossEntropyGpu, DeterministicReductions) {
  Case c{DType::bf16, quick_mode() ? 512 : 8192, 2048};
  c.red = Reduction::mean;
  c.grad = true;
  const Data d = make_data(c, 1000);
  const Outputs a = run_forward(c, d), b = run_forward(c, d);
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.dx, b.dx);
}

// The loss sum over more rows than its CTA reads in one round (4096 quads of row losses), and
// row counts that leave 1-3 rows past the last whole quad; with the count (mean) and the
// gradient: the chain of launches each scheduled under the kernel before it.
TEST_F(CrossEntropyGpu, ReductionsOverManyRows) {
  std::uint64_t seed = 1100;
  for (std::int64_t M : {std::int64_t{16383}, std::int64_t{16385}, std::int64_t{70001}, std::int64_t{262146}})
    for (Reduction red : {Reduction::sum, Reduction::mean}) {
      Case c{DType::bf16, M, 3};
      c.red = red;
      c.grad = seed % 2 == 0;
      check(c, seed++);
    }
}

// ---- the loss alone ----------------------------------------------

TEST_F(CrossEntropyGpu, LossOnlyShapes) {
  std::uint64_t seed = 1600;
  for (const LossOnlyShape& s : kLossOnlyShapes) {
    Case c{s.dt, s.M, s.N};
    check(c, seed++);
    c.tdt = DType::i32;
    c.red = Reduction::mean;
    c.eps = 0.1f;
    check(c, seed++);
    c.red = Reduction::sum;
    c.eps = 0.f;
    c.layout = {3, 1};  // strided, misaligned base: every row's frame differs
    check(c, seed++);
  }
}

// Targets ignored and out of range, masked, all -inf, NaN and +inf rows, with and without
// label smoothing, spread over the teams (first rows, middle, last).
TEST_F(CrossEntropyGpu, LossOnlySpecialRows) {
  std::uint64_t seed = 1700;
  for (const LossOnlyShape& s : {LossOnlyShape{DType::bf16, 4099, 2048}, LossOnlyShape{DType::f32, 1021, 1024},
                                 LossOnlyShape{DType::bf16, 199, 4097}, LossOnlyShape{DType::f16, 161, 50257}})
    for (float eps : {0.f, 0.1f}) {
      if (!fits(s.M, s.N)) continue;
      const std::int64_t M = s.M, N = s.N;
      Case c{s.dt, M, N};
      c.eps = eps;
      c.tdt = seed % 2 ? DType::i32 : DType::i64;
      c.ignore_index = eps != 0.f ? 3 : -100;
      c.red = eps != 0.f ? Reduction::mean : Reduction::none;
      Data d = make_data(c, seed++);
      d.t[0] = c.ignore_index;
      d.t[1] = N;  // out of range: NaN loss, no fault
      d.t[2] = -5;
      d.t[3] = c.tdt == DType::i64 ? (std::int64_t{1} << 40) : std::int64_t{2147483647};
      for (std::int64_t j = 1; j < N; j += 2) d.x[4 * N + j] = -INFINITY;  // masked; target even
      d.t[4] = 0;
      for (std::int64_t j = 0; j < N; ++j) d.x[(M / 2) * N + j] = -INFINITY;  // all masked: NaN loss
      d.x[5 * N + N / 2] = NAN;
      d.x[6 * N] = INFINITY;
      d.x[7 * N + N - 1] = NAN;  // the row's last element: the streaming kernel's edge when misaligned
      d.t[M - 1] = c.ignore_index;
      d.x[(M - 1) * N + N - 1] = NAN;  // ignored row with NaN: loss 0
      d.t[M - 2] = N - 1;
      check_values(c, d);
    }
}

// Long rows on more rows than the GPU has SMs (fewer stream through clusters instead): past
// the element budget on purpose, a few seconds of fp64 reference.
TEST_F(CrossEntropyGpu, LossOnlyLongRows) {
  if (quick_mode()) GTEST_SKIP() << "quick mode: large shapes skipped";
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  std::uint64_t seed = 1800;
  for (std::int64_t N : {65536, 262144}) {
    Case c{DType::bf16, sms + 1, N};
    c.layout = N == 65536 ? Layout{3, 1} : Layout{};
    c.eps = N == 65536 ? 0.1f : 0.f;
    check_values(c, make_data(c, seed++));
  }
  // Enough rows for one CTA a row: 50257 leaves each thread 24 or 25 (bf16) / 49 or 50 (fp32)
  // chunks, so the streaming groups end in a rest that rides with the first group, or in a
  // partial group.
  for (DType dt : {DType::bf16, DType::f32}) {
    Case c{dt, 4 * sms + 1, 50257};
    c.layout = dt == DType::bf16 ? Layout{3, 1} : Layout{};
    c.eps = dt == DType::bf16 ? 0.1f : 0.f;
    check_values(c, make_data(c, seed++));
  }
}

// ---- backward from lse ------------------------------------------------------------------

void check_backward_values(const Case& c, const Data& d, std::uint64_t seed, bool with_dloss) {
  SCOPED_TRACE("backward " + describe(c) + (with_dloss ? " dloss" : ""));
  const std::int64_t M = c.M, N = c.N;
  const auto fwd = ref::cross_entropy(M, N, d.x, d.t, c.ignore_index, c.eps, false);
  std::vector<double> lse(fwd.lse);
  for (auto& v : lse) v = round_to(DType::f32, v);  // what the forward saved
  // Incoming gradient: per row (none) or one value (sum, mean).
  std::vector<double> dloss = with_dloss ? random_values(DType::f32, c.red == Reduction::none ? M : 1, seed + 5, 1.0)
                                         : std::vector<double>{};
  std::vector<double> g_row(static_cast<std::size_t>(M), 1.0);
  for (std::int64_t i = 0; i < M; ++i) {
    const double gi = dloss.empty() ? 1.0 : dloss[c.red == Reduction::none ? i : 0];
    g_row[i] = gi * mean_scale(c, fwd);
  }
  // The reference gradient from the saved lse: exp(x - lse) is what the kernel computes.
  std::vector<double> want(static_cast<std::size_t>(M * N));
  double gmax = 0;
  for (std::int64_t i = 0; i < M; ++i) {
    const std::int64_t t = d.t[i];
    const bool ignored = t == c.ignore_index, bad = !ignored && (t < 0 || t >= N);
    const double g = ignored ? 0.0 : bad ? ref::kNaN : g_row[i];
    if (std::isfinite(g)) gmax = std::fmax(gmax, std::fabs(g));
    for (std::int64_t j = 0; j < N; ++j)
      want[i * N + j] = g * (std::exp(d.x[i * N + j] - lse[i]) - c.eps / N - (j == t ? 1 - c.eps : 0.0));
  }
  auto logits = upload(c.dt, M, N, d.x, c.layout);
  auto target = upload(c.tdt, 1, M, as_doubles(d.t));
  auto dlse = upload(DType::f32, 1, M, lse);
  std::unique_ptr<DeviceMatrix> ddloss, dlogits;
  CrossEntropyBackward a;
  a.logits = logits->view();
  a.target = target->vector();
  a.lse = dlse->vector();
  if (with_dloss) {
    ddloss = upload(DType::f32, 1, static_cast<std::int64_t>(dloss.size()), dloss);
    a.dloss = ddloss->vector();
  }
  a.dlogits = gradient_view(c, *logits, dlogits);
  Workspace ws;
  set_options(c, a, ws, cross_entropy_backward_workspace_bytes);
  cross_entropy_backward(a);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto got = (c.in_place ? logits : dlogits)->download();
  EXPECT_TRUE(all_close(got, want, c.dt, tolerance_for(c.dt, 1e-6 * gmax), "dlogits"));
}

void check_backward(const Case& c, std::uint64_t seed, bool with_dloss) {
  if (fits(c.M, c.N) && in_case_slice()) check_backward_values(c, make_data(c, seed), seed, with_dloss);
}

TEST_F(CrossEntropyGpu, BackwardFromLse) {
  std::uint64_t seed = 1100;
  for (DType dt : {DType::f32, DType::bf16})
    for (std::int64_t N : kRowLengths)
      for (std::int64_t M : kRowCounts) {
        if (!fits(M, N)) continue;
        Case c{dt, M, N};
        c.red = seed % 3 == 0 ? Reduction::none : seed % 3 == 1 ? Reduction::sum : Reduction::mean;
        c.tdt = seed % 2 ? DType::i32 : DType::i64;
        check_backward(c, seed, seed % 4 != 0);
        ++seed;
      }
}

TEST_F(CrossEntropyGpu, BackwardVariants) {
  std::uint64_t seed = 1200;
  for (std::int64_t N : {7, 4097, 50257, 1048576}) {
    const std::int64_t M = N > 65536 ? 2 : 55;
    Case c{DType::bf16, M, N};
    c.in_place = true;
    c.eps = 0.1f;
    c.red = Reduction::mean;
    check_backward(c, seed++, true);
    c.in_place = false;
    c.layout = {3, 1};
    c.dt = DType::f16;
    c.red = Reduction::none;
    check_backward(c, seed++, true);
    c.dt = DType::f32;
    c.layout = {5, 3};
    c.ignore_index = 2;
    check_backward(c, seed++, false);
  }
}

// Large-magnitude logits (issue #26), at the dtype's normal tolerance: fp16 near its maximum
// (65504, values 32 apart), bf16 near 1e4, fp32 near 1e4 and 1e6, rows of either sign; the loss,
// lse and fused gradient of the forward, and the backward from the saved lse. Each exponent is
// (x - max) * log2(e) (or x - lse); the prescaled x * log2(e) - max * log2(e) in one FFMA of the
// 16-bit kernels lost 4e-3 relative on fp16 logits near 65000; their statistics take it again
// only where the max is within kFastExpMax = 32 of 0 (rows centred at +-24: that bound).
struct LargeLogits {
  DType dt;
  double center, spread;
};
const LargeLogits kLargeLogits[] = {
    {DType::f16, 65504.0 - 16 * 32, 4 * 32}, {DType::bf16, 1e4, 200}, {DType::f32, 1e4, 2}, {DType::f32, 1e6, 2},
    {DType::f16, 24, 2}, {DType::bf16, 24, 2}};

Data large_data(const Case& c, const LargeLogits& r, std::uint64_t seed) {
  Data d = make_data(c, seed);  // targets
  d.x = random_values(DType::f32, c.M * c.N, seed + 3, r.spread);
  const double top = r.dt == DType::f16 ? 65504.0 : 3e38;
  for (std::int64_t i = 0; i < c.M; ++i)
    for (std::int64_t j = 0; j < c.N; ++j) {
      double& v = d.x[i * c.N + j];
      v = std::fmax(-top, std::fmin(top, round_to(r.dt, (i % 2 ? -r.center : r.center) + v)));
    }
  return d;
}

TEST_F(CrossEntropyGpu, LargeMagnitudes) {
  std::uint64_t seed = 1250;
  for (const LargeLogits& r : kLargeLogits)
    for (std::int64_t N : {7, 4096, 32000, 262144, 1048576}) {
      const std::int64_t M = N > 65536 ? 2 : 8;
      if (!fits(M, N)) continue;
      Case c{r.dt, M, N};
      c.grad = true;
      // Label smoothing on half the cases: its mean(x) term must keep the digits of max - mean.
      c.eps = seed % 8 < 4 ? 0.1f : 0.f;
      check_values(c, large_data(c, r, seed));
      c.grad = false;  // the loss alone takes its own layouts
      c.red = Reduction::mean;
      check_values(c, large_data(c, r, seed + 1));
      c.red = Reduction::none;
      check_backward_values(c, large_data(c, r, seed + 2), seed + 2, seed % 2 == 0);
      seed += 4;
    }
}

// The fused gradient and the backward from the saved lse agree.
TEST_F(CrossEntropyGpu, FusedMatchesBackward) {
  for (std::int64_t N : {1000, 32000}) {
    Case c{DType::f32, 64, N};
    c.red = Reduction::mean;
    c.grad = true;
    c.eps = 0.1f;
    const Data d = make_data(c, 1300 + N);
    const Outputs f = run_forward(c, d);
    auto logits = upload(c.dt, c.M, N, d.x);
    auto target = upload(c.tdt, 1, c.M, as_doubles(d.t));
    auto dlse = upload(DType::f32, 1, c.M, f.lse);
    DeviceMatrix dx(c.dt, c.M, N);
    CrossEntropyBackward a;
    a.logits = logits->view();
    a.target = target->vector();
    a.lse = dlse->vector();
    a.dlogits = dx.view();
    Workspace ws;
    set_options(c, a, ws, cross_entropy_backward_workspace_bytes);  // c.ignore_index: the default
    cross_entropy_backward(a);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(all_close(dx.download(), f.dx, DType::f32, "fused vs backward", 1e-7));
  }
}

// ---- lse combine ------------------------------------------------------------------------

TEST_F(CrossEntropyGpu, LseCombineOfVocabularyShards) {
  // lse of each shard from the forward itself (targets ignored), then combined.
  const std::int64_t M = 37, N = 50257, S = 4;
  auto x = random_values(DType::bf16, M * N, 1400, 2.0);
  const auto full = ref::cross_entropy(M, N, x, std::vector<std::int64_t>(M, -100), -100, 0.0, false);
  DeviceMatrix partial(DType::f32, S, M, M + 3);  // strided shards
  const std::int64_t shard = (N + S - 1) / S;
  auto target = upload(DType::i64, 1, M, std::vector<double>(M, -100.0));
  for (std::int64_t s = 0; s < S; ++s) {
    const std::int64_t c0 = s * shard, n = std::min(N, c0 + shard) - c0;
    std::vector<double> part(static_cast<std::size_t>(M * n));
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < n; ++j) part[i * n + j] = x[i * N + c0 + j];
    auto logits = upload(DType::bf16, M, n, part);
    DeviceMatrix loss(DType::f32, 1, M);
    CrossEntropyForward a;
    a.logits = logits->view();
    a.target = target->vector();
    a.loss = loss.vector();
    a.lse = view(static_cast<char*>(partial.data()) + s * (M + 3) * 4, DType::f32, {M});
    a.reduction = Reduction::none;
    cross_entropy_forward(a);
  }
  DeviceMatrix lse(DType::f32, 1, M);
  lse_combine({partial.view(), lse.vector()});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(all_close(lse.download(), full.lse, DType::f32, "combined lse", 1e-6));
}

TEST_F(CrossEntropyGpu, LseCombineSpecialValues) {
  const std::int64_t S = 3, M = 300;
  auto p = random_values(DType::f32, S * M, 1500, 5.0);
  for (std::int64_t s = 0; s < S; ++s) p[s * M + 0] = -INFINITY;  // all shards empty: -inf
  p[1 * M + 1] = -INFINITY;                                       // one empty shard
  p[0 * M + 2] = INFINITY;                                        // +inf
  p[2 * M + 3] = NAN;                                             // NaN
  p[0 * M + 4] = NAN;
  p[1 * M + 4] = INFINITY;
  const auto want = ref::lse_combine(S, M, p);
  auto dp = upload(DType::f32, S, M, p);
  DeviceMatrix lse(DType::f32, 1, M);
  lse_combine({dp->view(), lse.vector()});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(all_close(lse.download(), want, DType::f32, "lse", 1e-6));
  // One shard: the identity.
  DeviceMatrix one(DType::f32, 1, M);
  lse_combine({view(dp->data(), DType::f32, {1, M}), one.vector()});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<double> first(p.begin(), p.begin() + M);
  EXPECT_TRUE(all_close(one.download(), first, DType::f32, "one shard"));
}

// Tiles the power-of-two shapes above do not reach: whole rows of one and two chunks a thread
// (the whole build's small tiles), fp16 rows (the 8-chunk whole tile at 4096, one chunk at 7),
// fp32 rows on the 12-chunk tile (262144 < N <= 393216); with and without the gradient.
TEST_F(CrossEntropyGpu, TilesOffThePowersOfTwo) {
  std::uint64_t seed = 1400;
  for (bool grad : {false, true})
    for (DType dt : {DType::f16, DType::bf16, DType::f32}) {
      const std::int64_t v = 16 / static_cast<std::int64_t>(dtype_size(dt));
      for (std::int64_t N : {v, 2 * v, std::int64_t{7}, std::int64_t{4096}}) {
        Case c{dt, 199, N};
        c.grad = grad;
        check(c, seed++);
      }
    }
  for (bool grad : {false, true}) {
    Case c{DType::f32, 9, 300000};
    c.grad = grad;
    check(c, seed++);
  }
}

}  // namespace
}  // namespace tachyon::test

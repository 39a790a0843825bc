// tachyon-bench --suite host: the host time of one call of each public op at a tiny shape
// (4 x 4096 bf16 unless stated), beside the same-run floor of a bare kernel launch.
//
// Method, per case: all buffers allocated and filled once, the op's arguments built once;
// 200 warm-up calls + stream sync; then `rounds` (50) times: cudaStreamSynchronize, t0,
// 100 calls back to back, t1 (std::chrono::steady_clock, host only, no sync inside the timed
// span), sample = (t1 - t0) / 100. 100 launches (300 for a three-launch op) stay below the
// driver's launch-queue depth, so the host never waits for the GPU inside a round: the sample
// is the host cost of a call. Reported: median and min of the samples, in us per call, and
// the median minus the median of the floor: cudaLaunchKernel of an empty kernel (1 block of
// 32 threads), timed the same way in rounds alternating with the case's, so that a drift of
// the host's speed over the run enters both (timed first and last in one run, a lone floor
// drifted by 0.5 us of 3.5 on an H100 host). Every case runs on one non-blocking stream
// created once (Device::stream()).
//
// Floor rows tell where a per-call cost goes: cudaLaunchKernel, the <<<>>> form of the same
// kernel, cudaLaunchKernelEx with one attribute (cluster dimension 1), cudaLaunchKernel of an
// empty kernel with 512 bytes of parameters, cudaGetLastError() alone, cudaGetDevice() alone.
// The cudaLaunchKernel row is the floor against itself: its difference shows the noise.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "bench_host.h"
#include "harness.h"
#include "tachyon/cross_entropy.h"
#include "tachyon/elementwise.h"
#include "tachyon/gemm.h"
#include "tachyon/norm.h"
#include "tachyon/softmax.h"

namespace tachyon::bench {
namespace {

constexpr int kWarmupCalls = 200;
constexpr int kCallsPerRound = 100;
constexpr std::int64_t kM = 4, kN = 4096;

struct HostStats {
  double median_us = 0, min_us = 0;              // the case
  double floor_median_us = 0, floor_min_us = 0;  // the floor, timed in alternate rounds
};

// The floor: cudaLaunchKernel of an empty kernel, 1 block of 32 threads.
inline void launch_floor(cudaStream_t s) {
  static void* args[1] = {nullptr};
  BENCH_CUDA(cudaLaunchKernel(empty_kernel_ptr(), dim3(1), dim3(32), args, 0, s));
}

// One timed round: `kCallsPerRound` calls after a stream sync, host time per call in us.
template <class F>
double round_us(cudaStream_t stream, F& call) {
  BENCH_CUDA(cudaStreamSynchronize(stream));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCallsPerRound; ++i) call();
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / kCallsPerRound;
}

// The timing loop: a template, so that the timed call is inlined (no std::function in the
// span). The floor is timed in rounds alternating with the case's (floor first in even
// rounds, the case first in odd ones), so that a drift of the host's speed over the run
// (clock, caches, other tenants) enters the case and its floor alike.
template <class F>
HostStats time_host(cudaStream_t stream, int rounds, F&& call) {
  auto floor = [stream] { launch_floor(stream); };
  for (int i = 0; i < kWarmupCalls; ++i) call();
  for (int i = 0; i < kWarmupCalls; ++i) floor();
  BENCH_CUDA(cudaStreamSynchronize(stream));
  BENCH_CUDA(cudaGetLastError());
  std::vector<double> us, floor_us;
  us.reserve(static_cast<std::size_t>(rounds));
  floor_us.reserve(static_cast<std::size_t>(rounds));
  for (int r = 0; r < rounds; ++r) {
    if (r % 2 == 0) floor_us.push_back(round_us(stream, floor));
    us.push_back(round_us(stream, call));
    if (r % 2 == 1) floor_us.push_back(round_us(stream, floor));
  }
  BENCH_CUDA(cudaStreamSynchronize(stream));
  BENCH_CUDA(cudaGetLastError());  // catches a failed <<<>>> launch
  std::sort(us.begin(), us.end());
  std::sort(floor_us.begin(), floor_us.end());
  return {us[us.size() / 2], us.front(), floor_us[floor_us.size() / 2], floor_us.front()};
}

// ---- floor rows ----------------------------------------------------------------------------

// The floor itself, as a case: its rows' difference to the interleaved floor shows the noise.
HostStats floor_launch(Device& dev, int rounds) {
  const void* k = empty_kernel_ptr();
  void* args[1] = {nullptr};
  cudaStream_t s = dev.stream();
  return time_host(s, rounds, [&] { BENCH_CUDA(cudaLaunchKernel(k, dim3(1), dim3(32), args, 0, s)); });
}

HostStats floor_chevron(Device& dev, int rounds) {
  cudaStream_t s = dev.stream();
  return time_host(s, rounds, [&] { launch_empty_chevron(s); });
}

HostStats floor_launch_ex(Device& dev, int rounds) {
  cudaLaunchAttribute attr[1] = {};
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 1;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(1);
  cfg.blockDim = dim3(32);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = dev.stream();
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  const void* k = empty_kernel_ptr();
  void* args[1] = {nullptr};
  return time_host(dev.stream(), rounds, [&] { BENCH_CUDA(cudaLaunchKernelExC(&cfg, k, args)); });
}

HostStats floor_launch_512(Device& dev, int rounds) {
  const void* k = empty_kernel_512_ptr();
  std::vector<unsigned char> params(empty_kernel_512_param_bytes(), 1);
  void* args[1] = {params.data()};
  cudaStream_t s = dev.stream();
  return time_host(s, rounds, [&] { BENCH_CUDA(cudaLaunchKernel(k, dim3(1), dim3(32), args, 0, s)); });
}

HostStats floor_get_last_error(Device& dev, int rounds) {
  return time_host(dev.stream(), rounds, [&] { BENCH_CUDA(cudaGetLastError()); });
}

HostStats floor_get_device(Device& dev, int rounds) {
  int device = -1;
  return time_host(dev.stream(), rounds, [&] { BENCH_CUDA(cudaGetDevice(&device)); });
}

// ---- op rows -----------------------------------------------------------------------------

TensorView mat(void* p, std::int64_t m = kM, std::int64_t n = kN) { return view(p, DType::bf16, {m, n}); }

// Bytes of an (m, n) bf16 matrix / an n-vector of f32.
std::size_t mat_bytes(std::int64_t m = kM, std::int64_t n = kN) { return static_cast<std::size_t>(m * n) * 2; }
std::size_t f32_bytes(std::int64_t n) { return static_cast<std::size_t>(n) * 4; }

// Per-row statistics that a backward can use: rstd = 1, mean = 0.
void fill_stats(void* rstd, void* mean, std::int64_t m) {
  std::vector<float> ones(static_cast<std::size_t>(m), 1.f);
  if (rstd) BENCH_CUDA(cudaMemcpy(rstd, ones.data(), f32_bytes(m), cudaMemcpyHostToDevice));
  if (mean) BENCH_CUDA(cudaMemset(mean, 0, f32_bytes(m)));
}

// A cudaMalloc'd workspace, freed at scope exit.
struct Workspace {
  void* p = nullptr;
  explicit Workspace(std::size_t bytes) {
    if (bytes) BENCH_CUDA(cudaMalloc(&p, bytes));
  }
  ~Workspace() {
    if (p) cudaFree(p);
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
};

using Unary = void (*)(const TensorView&, const TensorView&, cudaStream_t);
using Binary = void (*)(const TensorView&, const TensorView&, const TensorView&, cudaStream_t);

HostStats op_unary(Device& dev, int rounds, Unary fn) {
  Buffers b;
  const TensorView x = mat(b.add(mat_bytes(), DType::bf16, 1)), y = mat(b.add(mat_bytes(), DType::bf16, 1));
  cudaStream_t s = dev.stream();
  return time_host(s, rounds, [&] { fn(x, y, s); });
}

HostStats op_binary(Device& dev, int rounds, Binary fn) {
  Buffers b;
  const TensorView x = mat(b.add(mat_bytes(), DType::bf16, 1)), y = mat(b.add(mat_bytes(), DType::bf16, 1));
  const TensorView z = mat(b.add(mat_bytes(), DType::bf16, 1));
  cudaStream_t s = dev.stream();
  return time_host(s, rounds, [&] { fn(x, y, z, s); });
}

HostStats op_add(Device& d, int r) {
  return op_binary(d, r, [](const TensorView& a, const TensorView& b, const TensorView& o, cudaStream_t s) { add(a, b, o, s); });
}
HostStats op_swiglu(Device& d, int r) {
  return op_binary(d, r, [](const TensorView& a, const TensorView& b, const TensorView& o, cudaStream_t s) { swiglu(a, b, o, s); });
}
HostStats op_silu(Device& d, int r) {
  return op_unary(d, r, [](const TensorView& x, const TensorView& o, cudaStream_t s) { silu(x, o, s); });
}
HostStats op_gelu(Device& d, int r) {
  return op_unary(d, r, [](const TensorView& x, const TensorView& o, cudaStream_t s) { gelu(x, o, s); });
}

HostStats op_rms_fwd(Device& dev, int rounds) {
  Buffers b;
  RmsNormForward a;
  a.x = mat(b.add(mat_bytes(), DType::bf16, 1));
  a.weight = view(b.add(mat_bytes(1), DType::bf16, 1), DType::bf16, {kN});
  a.y = mat(b.add(mat_bytes(), DType::bf16, 1));
  a.rstd = view(b.add(f32_bytes(kM), DType::f32, 1), DType::f32, {kM});
  cudaStream_t s = dev.stream();
  return time_host(s, rounds, [&] { rms_norm_forward(a, s); });
}

HostStats op_rms_fwd_residual(Device& dev, int rounds) {
  Buffers b;
  RmsNormForward a;
  a.x = mat(b.add(mat_bytes(), DType::bf16, 1));
  a.weight = view(b.add(mat_bytes(1), DType::bf16, 1), DType::bf16, {kN});
  a.residual = mat(b.add(mat_bytes(), DType::bf16, 1));
  a.y = mat(b.add(mat_bytes(), DType::bf16, 1));
  a.residual_out = mat(b.add(mat_bytes(), DType::bf16, 1));
  a.rstd = view(b.add(f32_bytes(kM), DType::f32, 1), DType::f32, {kM});
  cudaStream_t s = dev.stream();
  return time_host(s, rounds, [&] { rms_norm_forward(a, s); });
}

HostStats op_ln_fwd(Device& dev, int rounds) {
  Buffers b;
  LayerNormForward a;
  a.x = mat(b.add(mat_bytes(), DType::bf16, 1));
  a.weight = view(b.add(mat_bytes(1), DType::bf16, 1), DType::bf16, {kN});
  a.bias = view(b.add(mat_bytes(1), DType::bf16, 1), DType::bf16, {kN});
  a.y = mat(b.add(mat_bytes(), DType::bf16, 1));
  a.mean = view(b.add(f32_bytes(kM), DType::f32, 1), DType::f32, {kM});
  a.rstd = view(b.add(f32_bytes(kM), DType::f32, 1), DType::f32, {kM});
  cudaStream_t s = dev.stream();
  return time_host(s, rounds, [&] { layer_norm_forward(a, s); });
}

HostStats op_rms_bwd(Device& dev, int rounds) {
  Buffers b;
  RmsNormBackward a;
  a.x = mat(b.add(mat_bytes(), DType::bf16, 1));
  a.weight = view(b.add(mat_bytes(1), DType::bf16, 1), DType::bf16, {kN});
  void* rstd = b.add(f32_bytes(kM), DType::f32, 1);
  fill_stats(rstd, nullptr, kM);
  a.rstd = view(rstd, DType::f32, {kM});
  a.dy = mat(b.add(mat_bytes(), DType::bf16, 1));
  a.dx = mat(b.add(mat_bytes(), DType::bf16, 1));
  a.dw = view(b.add(mat_bytes(1), DType::bf16, 1), DType::bf16, {kN});
  a.workspace_bytes = rms_norm_backward_workspace_bytes(a);
  Workspace ws(a.workspace_bytes);
  a.workspace = ws.p;
  cudaStream_t s = dev.stream();
  return time_host(s, rounds, [&] { rms_norm_backward(a, s); });
}

HostStats op_ln_bwd(Device& dev, int rounds) {
  Buffers b;
  LayerNormBackward a;
  a.x = mat(b.add(mat_bytes(), DType::bf16, 1));
  a.weight = view(b.add(mat_bytes(1), DType::bf16, 1), DType::bf16, {kN});
  void* mean = b.add(f32_bytes(kM), DType::f32, 1);
  void* rstd = b.add(f32_bytes(kM), DType::f32, 1);
  fill_stats(rstd, mean, kM);
  a.mean = view(mean, DType::f32, {kM});
  a.rstd = view(rstd, DType::f32, {kM});
  a.dy = mat(b.add(mat_bytes(), DType::bf16, 1));
  a.dx = mat(b.add(mat_bytes(), DType::bf16, 1));
  a.dw = view(b.add(mat_bytes(1), DType::bf16, 1), DType::bf16, {kN});
  a.db = view(b.add(mat_bytes(1), DType::bf16, 1), DType::bf16, {kN});
  a.workspace_bytes = layer_norm_backward_workspace_bytes(a);
  Workspace ws(a.workspace_bytes);
  a.workspace = ws.p;
  cudaStream_t s = dev.stream();
  return time_host(s, rounds, [&] { layer_norm_backward(a, s); });
}

HostStats op_softmax_fwd(Device& dev, int rounds) {
  Buffers b;
  SoftmaxForward a;
  a.x = mat(b.add(mat_bytes(), DType::bf16, 1));
  a.y = mat(b.add(mat_bytes(), DType::bf16, 1));
  cudaStream_t s = dev.stream();
  return time_host(s, rounds, [&] { softmax_forward(a, s); });
}

HostStats op_softmax_bwd(Device& dev, int rounds) {
  Buffers b;
  SoftmaxBackward a;
  a.y = mat(b.add(mat_bytes(), DType::bf16, 1));
  a.dy = mat(b.add(mat_bytes(), DType::bf16, 1));
  a.dx = mat(b.add(mat_bytes(), DType::bf16, 1));
  cudaStream_t s = dev.stream();
  return time_host(s, rounds, [&] { softmax_backward(a, s); });
}

constexpr std::int64_t kVocab = 32000;

// int64 targets in [0, kVocab).
void* ce_targets(Buffers& b) {
  std::vector<std::int64_t> t(static_cast<std::size_t>(kM));
  for (std::int64_t i = 0; i < kM; ++i) t[static_cast<std::size_t>(i)] = (i * 7919) % kVocab;
  void* p = b.add(t.size() * 8, DType::i64, 1);
  BENCH_CUDA(cudaMemcpy(p, t.data(), t.size() * 8, cudaMemcpyHostToDevice));
  return p;
}

HostStats op_ce_fwd(Device& dev, int rounds) {
  Buffers b;
  CrossEntropyForward a;
  a.logits = mat(b.add(mat_bytes(kM, kVocab), DType::bf16, 1), kM, kVocab);
  a.target = view(ce_targets(b), DType::i64, {kM});
  a.loss = view(b.add(f32_bytes(1), DType::f32, 1), DType::f32, {1});
  a.lse = view(b.add(f32_bytes(kM), DType::f32, 1), DType::f32, {kM});
  a.reduction = Reduction::mean;
  a.workspace_bytes = cross_entropy_forward_workspace_bytes(a);
  Workspace ws(a.workspace_bytes);
  a.workspace = ws.p;
  cudaStream_t s = dev.stream();
  return time_host(s, rounds, [&] { cross_entropy_forward(a, s); });
}

HostStats op_ce_bwd(Device& dev, int rounds) {
  Buffers b;
  CrossEntropyBackward a;
  a.logits = mat(b.add(mat_bytes(kM, kVocab), DType::bf16, 1), kM, kVocab);
  a.target = view(ce_targets(b), DType::i64, {kM});
  a.lse = view(b.add(f32_bytes(kM), DType::f32, 1, 0.5f), DType::f32, {kM});
  a.dlogits = mat(b.add(mat_bytes(kM, kVocab), DType::bf16, 1), kM, kVocab);
  a.reduction = Reduction::mean;
  a.workspace_bytes = cross_entropy_backward_workspace_bytes(a);
  Workspace ws(a.workspace_bytes);
  a.workspace = ws.p;
  cudaStream_t s = dev.stream();
  return time_host(s, rounds, [&] { cross_entropy_backward(a, s); });
}

constexpr std::int64_t kGemmM = 64, kGemmN = 4096, kGemmK = 4096;

HostStats op_gemm(Device& dev, int rounds) {
  Buffers b;
  GemmArgs a;
  // Scaled so that the K = 4096 dot products stay small (values do not matter for host time).
  a.a = mat(b.add(mat_bytes(kGemmM, kGemmK), DType::bf16, 1, 0.05f), kGemmM, kGemmK);
  a.b = mat(b.add(mat_bytes(kGemmN, kGemmK), DType::bf16, 1, 0.05f), kGemmN, kGemmK);
  a.d = mat(b.add(mat_bytes(kGemmM, kGemmN), DType::bf16, 1), kGemmM, kGemmN);
  cudaStream_t s = dev.stream();
  return time_host(s, rounds, [&] { gemm(a, s); });
}

// ---- the case table -------------------------------------------------------------------------

struct HostCase {
  const char* op;
  const char* impl;   // "cuda" for the floor rows, "tachyon" for the ops
  const char* dtype;  // "none" for the floor rows
  const char* shape;
  HostStats (*run)(Device&, int rounds);
};

constexpr const char* kFloorOp = "cudaLaunchKernel";

const std::vector<HostCase>& cases() {
  static const std::vector<HostCase> c = {
      {kFloorOp, "cuda", "none", "1x32", floor_launch},
      {"launch_chevron", "cuda", "none", "1x32", floor_chevron},
      {"cudaLaunchKernelEx_cluster1", "cuda", "none", "1x32", floor_launch_ex},
      {"cudaLaunchKernel_512B_params", "cuda", "none", "1x32", floor_launch_512},
      {"cudaGetLastError", "cuda", "none", "-", floor_get_last_error},
      {"cudaGetDevice", "cuda", "none", "-", floor_get_device},
      {"add", "tachyon", "bf16", "4x4096", op_add},
      {"silu", "tachyon", "bf16", "4x4096", op_silu},
      {"gelu", "tachyon", "bf16", "4x4096", op_gelu},
      {"swiglu", "tachyon", "bf16", "4x4096", op_swiglu},
      {"rms_norm_fwd", "tachyon", "bf16", "4x4096", op_rms_fwd},
      {"rms_norm_fwd_residual", "tachyon", "bf16", "4x4096", op_rms_fwd_residual},
      {"layer_norm_fwd", "tachyon", "bf16", "4x4096", op_ln_fwd},
      {"rms_norm_bwd", "tachyon", "bf16", "4x4096", op_rms_bwd},
      {"layer_norm_bwd", "tachyon", "bf16", "4x4096", op_ln_bwd},
      {"softmax_fwd", "tachyon", "bf16", "4x4096", op_softmax_fwd},
      {"softmax_bwd", "tachyon", "bf16", "4x4096", op_softmax_bwd},
      {"cross_entropy_fwd_mean", "tachyon", "bf16", "4x32000", op_ce_fwd},
      {"cross_entropy_bwd_mean", "tachyon", "bf16", "4x32000", op_ce_bwd},
      {"gemm_bf16out", "tachyon", "bf16", "64x4096x4096", op_gemm},
  };
  return c;
}

}  // namespace

std::vector<std::string> host_case_names() {
  std::vector<std::string> n;
  for (const HostCase& c : cases()) n.push_back(c.op);
  return n;
}

int run_host_suite(Device& dev, const HostSuiteOptions& opt) {
  const int rounds = std::max(opt.rounds, 2);
  std::printf("host time per call, us: median / min over %d rounds of %d back-to-back calls (stream sync before\n"
              "each round, none inside), after %d warm-up calls; one non-blocking stream; ops at 4x4096 bf16\n"
              "unless stated. floor = %s of an empty kernel (1 x 32 threads), timed in rounds\n"
              "alternating with each case's; -floor = case median - floor median\n\n",
              rounds, kCallsPerRound, kWarmupCalls, kFloorOp);
  std::printf("%-30s %-5s %-14s %11s %11s %11s %11s\n", "case", "dtype", "shape", "median(us)", "min(us)",
              "floor(us)", "-floor(us)");
  std::fflush(stdout);
  // Process warm-up: ~0.2 s of floor launches, so that the first case does not pay for
  // cold driver paths or a CPU clock still ramping up.
  try {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (std::chrono::steady_clock::now() < end) {
      for (int i = 0; i < kCallsPerRound; ++i) launch_floor(dev.stream());
      BENCH_CUDA(cudaStreamSynchronize(dev.stream()));
    }
  } catch (const std::exception& e) {
    std::printf("host suite: the floor launch fails: %s\n", e.what());
    return 1;
  }
  int failures = 0;
  bool matched = opt.op_filter.empty();
  for (const HostCase& c : cases()) {
    if (!opt.op_filter.empty() && opt.op_filter != c.op) continue;
    matched = true;
    HostStats st;
    try {
      st = c.run(dev, rounds);
    } catch (const std::exception& e) {
      std::printf("%-30s %-5s %-14s  FAILED: %s\n", c.op, c.dtype, c.shape, e.what());
      std::fflush(stdout);
      ++failures;
      cudaGetLastError();  // do not let a launch error leak into the next case
      continue;
    }
    const double over = st.median_us - st.floor_median_us;
    std::printf("%-30s %-5s %-14s %11.3f %11.3f %11.3f %+11.3f\n", c.op, c.dtype, c.shape, st.median_us, st.min_us,
                st.floor_median_us, over);
    std::fflush(stdout);
    if (opt.json) {
      std::fprintf(opt.json,
                   "{\"op\": \"%s\", \"impl\": \"%s\", \"dtype\": \"%s\", \"shape\": \"%s\", \"suite\": \"host\", "
                   "\"host_us_median\": %.4f, \"host_us_min\": %.4f, \"floor_us\": %.4f, \"floor_us_min\": %.4f, "
                   "\"over_floor_us\": %.4f, \"floor_op\": \"%s\", \"rounds\": %d, \"calls_per_round\": %d, "
                   "\"warmup_calls\": %d, \"gpu\": \"%s\", \"date\": \"%s\", \"commit\": \"%s\"}\n",
                   c.op, c.impl, c.dtype, c.shape, st.median_us, st.min_us, st.floor_median_us, st.floor_min_us, over,
                   kFloorOp, rounds, kCallsPerRound, kWarmupCalls, opt.gpu.c_str(), opt.date.c_str(),
                   opt.commit.c_str());
      std::fflush(opt.json);
    }
  }
  if (!matched) {
    std::printf("no host case named '%s' (tachyon-bench --list)\n", opt.op_filter.c_str());
    ++failures;
  }
  return failures;
}

}  // namespace tachyon::bench

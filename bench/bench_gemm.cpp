// GEMM benchmarks: tachyon::gemm against cuBLASLt on the same inputs, in the same process.
// FLOPs = 2 M N K. For gemm_bf16out / gemm_f32out the limit column is cuBLASLt's TFLOP/s at
// the same shape and output dtype, so the ratio reads "x cuBLAS". For gemm_bias_silu the
// limit is tachyon's own plain GEMM at the same shape: the ratio is the epilogue's cost.
// Shapes are M x N x K with A (M, K) and B (N, K) K-major (a Linear weight).
// The launches compared in one case are timed interleaved (interleaved_ms), so clock drift
// within the case does not enter the ratio. Diagnostics outside the default suite (--op):
// gemm_bias / gemm_silu (the epilogue cost in parts), gemm_bf16out_queued (back-to-back
// launches: kernel time without the host-side gap before each timed launch).
#include <cublasLt.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"
#include "tachyon/gemm.h"

namespace tachyon::bench {
namespace {

void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLASLt status " + std::to_string(s));
}
#define LT(expr) check_lt((expr), #expr)

cudaDataType_t cuda_type(DType d) {
  return d == DType::f32 ? CUDA_R_32F : d == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
}

struct Operands {
  std::int64_t m, n, k;
  DType in, out;
  int sets;
  Buffers bufs;
  void *a, *b, *d, *bias;
  Operands(Device& dev, const Shape& sh, DType in_, DType out_) : in(in_), out(out_) {
    m = sh.dims[0];
    n = sh.dims[1];
    k = sh.dims[2];
    const double bytes = static_cast<double>(m * k + n * k) * static_cast<double>(dtype_size(in)) +
                         static_cast<double>(m * n) * static_cast<double>(dtype_size(out));
    sets = dev.rotation_sets(bytes);
    a = bufs.add(static_cast<std::size_t>(m * k) * dtype_size(in), in, sets);
    b = bufs.add(static_cast<std::size_t>(n * k) * dtype_size(in), in, sets);
    d = bufs.add(static_cast<std::size_t>(m * n) * dtype_size(out), out, sets);
    bias = bufs.add(static_cast<std::size_t>(n) * 4, DType::f32, 1);
  }
  GemmArgs args(int s) {
    GemmArgs g;
    g.a = view(bufs.get(a, s), in, {m, k});
    g.b = view(bufs.get(b, s), in, {n, k});
    g.d = view(bufs.get(d, s), out, {m, n});
    return g;
  }
};

// cuBLASLt's best heuristic algorithm for row-major D = A B^T, i.e. column-major
// D^T (N x M) = B (op T on the K x N column-major view of B) x A (the K x M view of A).
class CublasLtGemm {
 public:
  explicit CublasLtGemm(Operands& o) : o_(o) {
    constexpr std::size_t kWorkspace = 32u << 20;
    if (!handle_) {
      LT(cublasLtCreate(&handle_));
      BENCH_CUDA(cudaMalloc(&workspace_, kWorkspace));
    }
    LT(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LT(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    LT(cublasLtMatrixLayoutCreate(&la_, cuda_type(o.in), static_cast<std::uint64_t>(o.k), static_cast<std::uint64_t>(o.n), o.k));
    LT(cublasLtMatrixLayoutCreate(&lb_, cuda_type(o.in), static_cast<std::uint64_t>(o.k), static_cast<std::uint64_t>(o.m), o.k));
    LT(cublasLtMatrixLayoutCreate(&ld_, cuda_type(o.out), static_cast<std::uint64_t>(o.n), static_cast<std::uint64_t>(o.m), o.n));
    LT(cublasLtMatmulPreferenceCreate(&pref_));
    std::size_t ws = kWorkspace;
    LT(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    int found = 0;
    LT(cublasLtMatmulAlgoGetHeuristic(handle_, op_, la_, lb_, ld_, ld_, pref_, 1, &heur_, &found));
    if (found == 0) throw std::runtime_error("cuBLASLt: no algorithm");
  }
  ~CublasLtGemm() {
    cublasLtMatmulPreferenceDestroy(pref_);
    cublasLtMatrixLayoutDestroy(la_);
    cublasLtMatrixLayoutDestroy(lb_);
    cublasLtMatrixLayoutDestroy(ld_);
    cublasLtMatmulDescDestroy(op_);
  }
  void launch(int s, cudaStream_t stream) {
    const float alpha = 1.f, beta = 0.f;
    LT(cublasLtMatmul(handle_, op_, &alpha, o_.bufs.get(o_.b, s), la_, o_.bufs.get(o_.a, s), lb_, &beta,
                      o_.bufs.get(o_.d, s), ld_, o_.bufs.get(o_.d, s), ld_, &heur_.algo, workspace_, 32u << 20,
                      stream));
  }

 private:
  static inline cublasLtHandle_t handle_ = nullptr;
  static inline void* workspace_ = nullptr;
  Operands& o_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, ld_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  cublasLtMatmulHeuristicResult_t heur_ = {};
};

// Median times (ms) of several launches, timed in turn within every iteration (the order
// rotates from one iteration to the next). Timing one launch 60 times and then the other
// mixes the clock into the ratio: the GPU boosts after the idle gap of a case's setup and
// throttles under sustained load (run 14 at 8192^3: cuBLASLt 728 TFLOP/s timed first in
// its case, 671 timed after 60 tachyon launches). `reps` > 1 times that many launches
// back to back per sample (rotating the input sets) and divides: the host-side cost of a
// call then overlaps the previous launch, which separates kernel time from launch overhead.
std::vector<double> interleaved_ms(Device& dev, const std::vector<std::function<void(int)>>& launches, int sets,
                                   int reps = 1) {
  const int n = static_cast<int>(launches.size());
  cudaEvent_t start = nullptr, stop = nullptr;
  BENCH_CUDA(cudaEventCreate(&start));
  BENCH_CUDA(cudaEventCreate(&stop));
  for (int i = 0; i < dev.warmup; ++i)
    for (const auto& f : launches) f(i % sets);
  BENCH_CUDA(cudaStreamSynchronize(dev.stream()));
  BENCH_CUDA(cudaGetLastError());
  std::vector<std::vector<float>> times(static_cast<std::size_t>(n));
  int set = 0;
  for (int i = 0; i < dev.iters; ++i)
    for (int j = 0; j < n; ++j) {
      const int which = (i + j) % n;
      dev.occupy_gpu();
      BENCH_CUDA(cudaEventRecord(start, dev.stream()));
      for (int r = 0; r < reps; ++r) launches[static_cast<std::size_t>(which)](set++ % sets);
      BENCH_CUDA(cudaEventRecord(stop, dev.stream()));
      BENCH_CUDA(cudaEventSynchronize(stop));
      float ms = 0;
      BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
      times[static_cast<std::size_t>(which)].push_back(ms / static_cast<float>(reps));
    }
  BENCH_CUDA(cudaGetLastError());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::vector<double> med;
  for (auto& t : times) {
    std::sort(t.begin(), t.end());
    med.push_back(t[t.size() / 2]);
  }
  return med;
}

double tflops(const Operands& o, double ms) { return 2.0 * static_cast<double>(o.m * o.n * o.k) / (ms * 1e-3) / 1e12; }

// tachyon against cuBLASLt, interleaved; reps > 1: back-to-back launches (kernel time).
Result run_vs_cublas(Device& dev, DType in, const Shape& sh, DType out, int reps = 1) {
  Operands o(dev, sh, in, out);
  CublasLtGemm lt(o);
  // Enough sets that a back-to-back sample still rotates through more than 3x L2.
  const int sets = reps > 1 ? std::max(o.sets, 2) : o.sets;
  const std::vector<double> ms = interleaved_ms(
      dev, {[&](int s) { gemm(o.args(s), dev.stream()); }, [&](int s) { lt.launch(s, dev.stream()); }}, sets, reps);
  Result r;
  r.ms = ms[0];
  r.flops = 2.0 * static_cast<double>(o.m * o.n * o.k);
  r.limit = tflops(o, ms[1]);
  r.peer = "cublasLt";
  r.peer_value = r.limit;
  if (reps > 1) r.note = "back-to-back launches: kernel time without the host-side gap";
  return r;
}

// A fused epilogue against tachyon's own plain GEMM (and cuBLASLt plain), interleaved: the
// ratio is the epilogue's cost.
Result run_epilogue(Device& dev, DType in, const Shape& sh, bool bias, Activation act) {
  Operands o(dev, sh, in, DType::bf16);
  CublasLtGemm lt(o);
  const std::vector<double> ms = interleaved_ms(dev,
                                                {[&](int s) { gemm(o.args(s), dev.stream()); },
                                                 [&](int s) {
                                                   GemmArgs g = o.args(s);
                                                   if (bias) g.bias = view(o.bias, DType::f32, {o.n});
                                                   g.activation = act;
                                                   gemm(g, dev.stream());
                                                 },
                                                 [&](int s) { lt.launch(s, dev.stream()); }},
                                                o.sets);
  Result r;
  r.ms = ms[1];
  r.flops = 2.0 * static_cast<double>(o.m * o.n * o.k);
  r.limit = tflops(o, ms[0]);
  r.peer = "cublasLt(plain)";
  r.peer_value = tflops(o, ms[2]);
  r.note = "limit = tachyon plain gemm (interleaved): ratio = epilogue cost";
  return r;
}

// The shape list (M x N x K).
const std::vector<Shape> kShapes = {
    {{8192, 8192, 8192}}, {{4096, 4096, 4096}}, {{16384, 16384, 16384}}, {{2048, 2048, 2048}},
    {{8192, 6144, 4096}}, {{8192, 4096, 4096}}, {{8192, 28672, 4096}},   {{8192, 4096, 14336}},
    {{128, 8192, 8192}},  {{512, 8192, 8192}},  {{1024, 28672, 4096}},
};

Case make(const char* op, std::vector<Shape> shapes, std::function<Result(Device&, DType, const Shape&)> run) {
  Case c;
  c.family = "gemm";
  c.op = op;
  c.dtypes = {DType::bf16};
  c.shapes = std::move(shapes);
  c.run = std::move(run);
  c.in_default_suite = true;
  return c;
}

Register bf16out(make("gemm_bf16out", kShapes,
                      [](Device& d, DType dt, const Shape& s) { return run_vs_cublas(d, dt, s, DType::bf16); }));
Register f32out(make("gemm_f32out", kShapes,
                     [](Device& d, DType dt, const Shape& s) { return run_vs_cublas(d, dt, s, DType::f32); }));
Register bias_silu(make("gemm_bias_silu", {{{8192, 8192, 8192}}}, [](Device& d, DType dt, const Shape& s) {
  return run_epilogue(d, dt, s, true, Activation::silu);
}));

// Diagnostics, outside the default suite: the epilogue cost split into its parts, and the
// kernel time of small shapes without the host-side gap of each timed launch.
Case diagnostic(Case c) {
  c.in_default_suite = false;
  return c;
}
Register bias_only(diagnostic(make("gemm_bias", {{{8192, 8192, 8192}}}, [](Device& d, DType dt, const Shape& s) {
  return run_epilogue(d, dt, s, true, Activation::none);
})));
Register silu_only(diagnostic(make("gemm_silu", {{{8192, 8192, 8192}}}, [](Device& d, DType dt, const Shape& s) {
  return run_epilogue(d, dt, s, false, Activation::silu);
})));
Register queued(diagnostic(make("gemm_bf16out_queued", {{{2048, 2048, 2048}}, {{4096, 4096, 4096}}},
                                [](Device& d, DType dt, const Shape& s) {
                                  return run_vs_cublas(d, dt, s, DType::bf16, /*reps=*/20);
                                })));

}  // namespace
}  // namespace tachyon::bench

// GEMM benchmarks: tachyon::gemm against cuBLASLt on the same inputs, in the same process.
// FLOPs = 2 M N K. For gemm_bf16out / gemm_f32out the limit column is cuBLASLt's TFLOP/s at
// the same shape and output dtype, so the ratio reads "x cuBLAS". For gemm_bias_silu the
// limit is tachyon's own plain GEMM at the same shape: the ratio is the epilogue's cost.
// Shapes are M x N x K with A (M, K) and B (N, K) K-major (a Linear weight).
#include <cublasLt.h>

#include <stdexcept>
#include <string>

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
double cublas_ms(Device& dev, Operands& o) {
  static cublasLtHandle_t handle = nullptr;
  static void* workspace = nullptr;
  constexpr std::size_t kWorkspace = 32u << 20;
  if (!handle) {
    LT(cublasLtCreate(&handle));
    BENCH_CUDA(cudaMalloc(&workspace, kWorkspace));
  }
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  LT(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  LT(cublasLtMatrixLayoutCreate(&la, cuda_type(o.in), static_cast<std::uint64_t>(o.k), static_cast<std::uint64_t>(o.n), o.k));
  LT(cublasLtMatrixLayoutCreate(&lb, cuda_type(o.in), static_cast<std::uint64_t>(o.k), static_cast<std::uint64_t>(o.m), o.k));
  LT(cublasLtMatrixLayoutCreate(&ld, cuda_type(o.out), static_cast<std::uint64_t>(o.n), static_cast<std::uint64_t>(o.m), o.n));
  LT(cublasLtMatmulPreferenceCreate(&pref));
  std::size_t ws = kWorkspace;
  LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  cublasLtMatmulHeuristicResult_t heur = {};
  int found = 0;
  LT(cublasLtMatmulAlgoGetHeuristic(handle, op, la, lb, ld, ld, pref, 1, &heur, &found));
  if (found == 0) throw std::runtime_error("cuBLASLt: no algorithm");
  const float alpha = 1.f, beta = 0.f;
  double ms = dev.median_ms(
      [&](int s) {
        LT(cublasLtMatmul(handle, op, &alpha, o.bufs.get(o.b, s), la, o.bufs.get(o.a, s), lb, &beta, o.bufs.get(o.d, s),
                          ld, o.bufs.get(o.d, s), ld, &heur.algo, workspace, kWorkspace, dev.stream()));
      },
      o.sets);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(op);
  return ms;
}

double tflops(const Operands& o, double ms) { return 2.0 * static_cast<double>(o.m * o.n * o.k) / (ms * 1e-3) / 1e12; }

Result run_vs_cublas(Device& dev, DType in, const Shape& sh, DType out) {
  Operands o(dev, sh, in, out);
  const double lt_ms = cublas_ms(dev, o);
  Result r;
  r.ms = dev.median_ms([&](int s) { gemm(o.args(s), dev.stream()); }, o.sets);
  r.flops = 2.0 * static_cast<double>(o.m * o.n * o.k);
  r.limit = tflops(o, lt_ms);
  r.peer = "cublasLt";
  r.peer_value = r.limit;
  return r;
}

Result run_bias_silu(Device& dev, DType in, const Shape& sh) {
  Operands o(dev, sh, in, DType::bf16);
  const double plain_ms = dev.median_ms([&](int s) { gemm(o.args(s), dev.stream()); }, o.sets);
  const double lt_ms = cublas_ms(dev, o);
  Result r;
  r.ms = dev.median_ms(
      [&](int s) {
        GemmArgs g = o.args(s);
        g.bias = view(o.bias, DType::f32, {o.n});
        g.activation = Activation::silu;
        gemm(g, dev.stream());
      },
      o.sets);
  r.flops = 2.0 * static_cast<double>(o.m * o.n * o.k);
  r.limit = tflops(o, plain_ms);
  r.peer = "cublasLt(plain)";
  r.peer_value = tflops(o, lt_ms);
  r.note = "limit = tachyon plain gemm: ratio = epilogue cost";
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
Register bias_silu(make("gemm_bias_silu", {{{8192, 8192, 8192}}},
                        [](Device& d, DType dt, const Shape& s) { return run_bias_silu(d, dt, s); }));

}  // namespace
}  // namespace tachyon::bench

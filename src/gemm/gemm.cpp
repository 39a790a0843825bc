// tachyon::gemm: validation, the shape-aware plan, tensor maps, and the launch of the TMA /
// wgmma kernel or of the fallback.
#include <climits>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/check.h"
#include "core/device_info.h"
#include "core/host_device.h"
#include "core/validate.h"
#include "gemm/gemm_config.h"
#include "gemm/gemm_fallback.h"
#include "gemm/gemm_launch.h"
#include "gemm/gemm_params.h"
#include "gemm/tma.h"
#include "tachyon/gemm.h"

namespace tachyon::detail::gemm {
namespace {

constexpr const char* kOp = "gemm";

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : 0;
}

// Tuning knobs for measurements (docs/gemm.md): read once.
const GemmOverrides& overrides() {
  static const GemmOverrides o = [] {
    GemmOverrides x;
    x.ctas = env_int("TACHYON_GEMM_CTAS");
    x.raster_group = env_int("TACHYON_GEMM_GROUP");
    x.block_n = env_int("TACHYON_GEMM_BLOCK_N");
    x.cluster_m = env_int("TACHYON_GEMM_CLUSTER");
    x.stages = env_int("TACHYON_GEMM_STAGES");
    x.order = env_int("TACHYON_GEMM_ORDER");
    return x;
  }();
  return o;
}

struct Validated {
  Rows a, b, d, c;
  bool has_c = false, has_bias = false;
  std::int64_t m = 0, n = 0, k = 0;
};

Validated validate(const GemmArgs& g) {
  Validated v;
  TACHYON_REQUIRE(g.a.present(), kOp, "a", "is required but absent");
  TACHYON_REQUIRE(g.b.present(), kOp, "b", "is required but absent");
  TACHYON_REQUIRE(g.d.present(), kOp, "d", "is required but absent");
  check_dtype(kOp, "a", g.a, {DType::bf16, DType::f16});
  v.a = as_rows(kOp, "a", g.a);  // K (a's row length) at most kMaxRowLength
  check_dtype(kOp, "b", g.b, {DType::bf16, DType::f16});
  check_same_dtype(kOp, "b", g.b, "a", g.a);
  TACHYON_REQUIRE(g.b.rank == 2, kOp, "b", "must be 2-D, got " + g.b.str());
  v.b = as_rows(kOp, "b", g.b);
  TACHYON_REQUIRE(g.b_layout == BLayout::nk || g.b_layout == BLayout::kn, kOp, "b_layout", "is not a BLayout value");

  v.m = v.a.rows;
  v.k = v.a.cols;
  const bool nk = g.b_layout == BLayout::nk;
  v.n = nk ? v.b.rows : v.b.cols;
  const std::int64_t b_k = nk ? v.b.cols : v.b.rows;
  // Each size names the argument it comes from. Messages that format numbers are built only
  // on failure (TACHYON_REQUIRE, `fail`): this runs on every call, and for small shapes host
  // time is part of the call's latency.
  TACHYON_REQUIRE(v.m <= kMaxRowLength, kOp, "a",
                  "M = " + std::to_string(v.m) + " (its rows) exceeds the limit of 2^31 - 65: " + g.a.str());
  TACHYON_REQUIRE(v.n <= kMaxRowLength, kOp, "b",
                  "N = " + std::to_string(v.n) + " exceeds the limit of 2^31 - 65: " + g.b.str());
  if (b_k != v.k)
    fail(kOp, "b",
         std::string("K = ") + std::to_string(b_k) + " (as " + (nk ? "(N, K)" : "(K, N)") + ") differs from a's K = " +
             std::to_string(v.k) + ": " + g.b.str());
  check_dtype(kOp, "d", g.d, {DType::f32, DType::f16, DType::bf16});
  v.d = as_rows(kOp, "d", g.d);
  if (v.d.rows != v.m || v.d.cols != v.n)
    fail(kOp, "d", "shape " + g.d.str() + " is not (M, N) = (" + std::to_string(v.m) + ", " + std::to_string(v.n) + ")");

  v.has_c = g.c.present();
  if (v.has_c) {
    check_same_dtype(kOp, "c", g.c, "d", g.d);
    v.c = as_rows(kOp, "c", g.c);
    if (v.c.rows != v.m || v.c.cols != v.n) fail(kOp, "c", "shape " + g.c.str() + " differs from d's " + g.d.str());
  }
  TACHYON_REQUIRE(std::isfinite(g.alpha), kOp, "alpha", "must be finite, got " + std::to_string(g.alpha));
  TACHYON_REQUIRE(std::isfinite(g.beta), kOp, "beta", "must be finite, got " + std::to_string(g.beta));
  if (g.beta != 0.f && !v.has_c) fail(kOp, "c", "is required when beta != 0 (beta = " + std::to_string(g.beta) + ")");
  v.has_bias = g.bias.present();
  if (v.has_bias) {
    check_dtype(kOp, "bias", g.bias, {DType::f32, DType::f16, DType::bf16});
    check_vector(kOp, "bias", g.bias, v.n);
  }
  TACHYON_REQUIRE(static_cast<int>(g.activation) >= 0 && static_cast<int>(g.activation) <= 3, kOp, "activation",
          "is not an Activation value");

  // D may be exactly C (in place); any other overlap of D with an argument is an Error.
  check_overlaps(kOp, {{"a", v.a}, {"b", v.b}, {"c", v.c}, {"bias", vector_rows(g.bias)}, {"d", v.d, true}},
                 {{"d", "c"}});
  return v;
}

EpilogueParams make_epilogue(const GemmArgs& g, const Validated& v, bool swap) {
  EpilogueParams e;
  e.d = v.d.data;
  e.d_row_stride = swap ? 1 : v.d.row_stride;
  e.d_col_stride = swap ? v.d.row_stride : 1;
  if (g.beta != 0.f) {
    e.c = v.c.data;
    e.c_row_stride = swap ? 1 : v.c.row_stride;
    e.c_col_stride = swap ? v.c.row_stride : 1;
  }
  e.beta = g.beta;
  e.alpha = g.alpha;
  e.bias = v.has_bias && v.n > 0 ? g.bias.data : nullptr;
  e.bias_dtype = static_cast<int>(g.bias.dtype);
  e.bias_on_rows = swap ? 1 : 0;
  e.activation = static_cast<int>(g.activation);
  e.m = static_cast<int>(swap ? v.n : v.m);
  e.n = static_cast<int>(swap ? v.m : v.n);
  return e;
}

void run_fallback(const GemmArgs& g, const Validated& v, cudaStream_t stream) {
  FallbackParams p;
  p.a = v.a.data;
  p.lda = v.a.row_stride;
  p.b = v.b.data;
  if (g.b_layout == BLayout::nk) {
    p.b_n_stride = v.b.row_stride;
    p.b_k_stride = 1;
  } else {
    p.b_n_stride = 1;
    p.b_k_stride = v.b.row_stride;
  }
  p.m = static_cast<int>(v.m);
  p.n = static_cast<int>(v.n);
  p.k = static_cast<int>(v.k);
  p.epi = make_epilogue(g, v, false);
  launch_gemm_fallback(kOp, g.a.dtype, g.d.dtype, p, stream);
}

}  // namespace
}  // namespace tachyon::detail::gemm

namespace tachyon {

void gemm(const GemmArgs& g, cudaStream_t stream) {
  using namespace detail;
  using namespace detail::gemm;
  const Validated v = validate(g);
  if (v.m == 0 || v.n == 0) return;

  // Validation is complete; from here on CUDA is touched.
  const DeviceInfo& dev = current_device(kOp);
  if (!(dev.cc_major == 9 && dev.cc_minor == 0))
    throw Error(std::string(kOp) + ": needs an sm_90 (Hopper) GPU; device " + std::to_string(dev.device) + " is sm_" +
                std::to_string(dev.cc_major) + std::to_string(dev.cc_minor));

  const bool nk = g.b_layout == BLayout::nk;
  GemmProblem prob;
  prob.m = v.m;
  prob.n = v.n;
  prob.k = v.k;
  prob.b_k_major = nk;
  prob.a_tma = tma_compatible(v.a.data, v.a.dtype, v.a.rows, v.a.cols, v.a.row_stride);
  prob.b_tma = tma_compatible(v.b.data, v.b.dtype, v.b.rows, v.b.cols, v.b.row_stride);
  prob.d_tma = tma_compatible(v.d.data, v.d.dtype, v.d.rows, v.d.cols, v.d.row_stride);
  prob.out_bytes = static_cast<int>(dtype_size(g.d.dtype));
  prob.sm_count = dev.sm_count;
  prob.smem_per_block = dev.smem_per_block_optin;
  const GemmConfig cfg = choose_gemm_config(prob, overrides());
  if (cfg.path == GemmPath::fallback) return run_fallback(g, v, stream);

  // The kernel's operands: (A, B) or, swapped, (B, A); both K-major unless B is (K, N).
  const Rows& ka = cfg.swap_ab ? v.b : v.a;
  const Rows& kb = cfg.swap_ab ? v.a : v.b;
  GemmParams p;
  TmaMatrix ma{ka.data, ka.dtype, ka.rows, ka.cols, ka.row_stride, kBlockM, kBlockK};
  p.a = tma_matrix_map(kOp, ma);
  TmaMatrix mb{kb.data, kb.dtype, kb.rows, kb.cols, kb.row_stride, 0, 0};
  if (nk) {
    mb.box_rows = cfg.block_n / cfg.cluster_m;  // each CTA of the cluster loads its share
    mb.box_cols = kBlockK;
  } else {
    mb.box_rows = kBlockK;
    mb.box_cols = 64;
  }
  p.b = tma_matrix_map(kOp, mb);
  if (cfg.tma_store) {
    TmaMatrix md{v.d.data, v.d.dtype, v.d.rows, v.d.cols, v.d.row_stride, kStoreRows,
                 static_cast<int>(128 / dtype_size(v.d.dtype))};
    p.d = tma_matrix_map(kOp, md);
  } else {
    p.d = p.a;  // unused
  }
  p.m = static_cast<int>(cfg.kernel_m);
  p.n = static_cast<int>(cfg.kernel_n);
  p.k = static_cast<int>(v.k);
  p.k_blocks = static_cast<int>(ceil_div(v.k, kBlockK));
  p.stages = cfg.stages;
  p.sched.units_m = ceil_div(cfg.tiles_m, cfg.cluster_m);
  p.sched.units_n = cfg.tiles_n;
  p.sched.group = cfg.raster_group;
  p.sched.cluster_m = cfg.cluster_m;
  p.sched.snake = cfg.snake ? 1 : 0;
  p.epi = make_epilogue(g, v, cfg.swap_ab);
  p.epi.tma_store = cfg.tma_store ? 1 : 0;

  if (g.a.dtype == DType::bf16) launch_gemm_tma_bf16(kOp, g.d.dtype, nk, cfg, p, stream);
  else launch_gemm_tma_f16(kOp, g.d.dtype, nk, cfg, p, stream);
}

}  // namespace tachyon

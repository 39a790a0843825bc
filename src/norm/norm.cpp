// RMSNorm / LayerNorm entry points. Each call is validated at the boundary (a call that fails
// has made no CUDA call), then picks its kernel build (NormFwdMode, or the backward's typed loop)
// and row layout (plan_norm_forward, backward_row_config: norm_plan.cpp), then launches through
// norm_fwd.cu / norm_bwd.cu. The backward also sizes its persistent grid and the workspace of
// its dw / db partials. Design: docs/perf/norm.md.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "core/host_device.h"
#include "core/device_info.h"
#include "core/row_config.h"
#include "core/row_problem.h"
#include "core/validate.h"
#include "core/variants.h"
#include "norm/norm_params.h"
#include "tachyon/norm.h"

namespace tachyon {

using namespace detail;

namespace {

const std::initializer_list<DType> kFloat = {DType::f32, DType::f16, DType::bf16};

RowArg row_arg(const Rows& r) { return {r.data, r.row_stride, r.dtype}; }
RowArg vector_arg(const TensorView& t) { return {t.data, 0, t.dtype}; }

// An (M, N) operand of the op: float dtype and the same shape as x.
Rows matrix_operand(const char* op, const char* name, const TensorView& t, const TensorView& x) {
  check_dtype(op, name, t, kFloat);
  check_same_shape(op, name, t, "x", x);
  return as_rows(op, name, t);
}

void check_optional_vector(const char* op, const char* name, const TensorView& t, std::int64_t n,
                           std::initializer_list<DType> dtypes) {
  if (!t.present()) return;
  check_dtype(op, name, t, dtypes);
  check_vector(op, name, t, n);
}

void check_eps(const char* op, float eps) {
  TACHYON_REQUIRE(std::isfinite(eps) && eps >= 0.f, op, "eps", "must be finite and >= 0, got " + std::to_string(eps));
}

// ---- forward -------------------------------------------------------------------------------

struct FwdArgs {
  const char* op;
  bool layer_norm;
  TensorView x, weight, bias, residual, y, residual_out, mean, rstd;
  float eps, weight_offset;
};

void forward(const FwdArgs& a, cudaStream_t stream) {
  const char* op = a.op;
  check_dtype(op, "x", a.x, kFloat);
  const Rows x = as_rows(op, "x", a.x);
  const Rows y = matrix_operand(op, "y", a.y, a.x);
  const std::int64_t M = x.rows, N = x.cols;
  check_optional_vector(op, "weight", a.weight, N, kFloat);
  check_optional_vector(op, "bias", a.bias, N, kFloat);
  check_optional_vector(op, "mean", a.mean, M, {DType::f32});
  check_optional_vector(op, "rstd", a.rstd, M, {DType::f32});
  check_eps(op, a.eps);
  TACHYON_REQUIRE(std::isfinite(a.weight_offset), op, "weight_offset", "must be finite");
  const bool fused = a.residual.present();
  TACHYON_REQUIRE(fused == a.residual_out.present(), op, fused ? "residual_out" : "residual",
          fused ? "is required when residual is given" : "is required when residual_out is given");
  Rows residual, residual_out;
  if (fused) {
    residual = matrix_operand(op, "residual", a.residual, a.x);
    residual_out = matrix_operand(op, "residual_out", a.residual_out, a.x);
  }
  // In place (norm.h): y may be x or the residual, residual_out the residual or x. Every other
  // pair of an output with another argument is an Error (the kernels read weight and bias
  // through the read-only path, and write mean / rstd beside y).
  check_overlaps(op,
                 {{"x", x},
                  {"weight", vector_rows(a.weight)},
                  {"bias", vector_rows(a.bias)},
                  {"residual", residual},
                  {"y", y, true},
                  {"residual_out", residual_out, true},
                  {"mean", vector_rows(a.mean), true},
                  {"rstd", vector_rows(a.rstd), true}},
                 {{"y", "x"}, {"y", "residual"}, {"residual_out", "residual"}, {"residual_out", "x"}});
  if (M == 0 || N == 0) return;

  const Rows& storage = fused ? residual_out : x;
  NormFwdParams p;
  p.x = row_arg(x);
  p.y = row_arg(y);
  if (fused) {
    p.residual = row_arg(residual);
    p.residual_out = row_arg(residual_out);
  }
  if (a.weight.present()) p.weight = vector_arg(a.weight);
  if (a.bias.present()) p.bias = vector_arg(a.bias);
  p.mean = static_cast<float*>(a.mean.data);
  p.rstd = static_cast<float*>(a.rstd.data);
  p.rows = M;
  p.n = static_cast<int>(N);
  p.eps = a.eps;
  p.weight_offset = a.weight_offset;

  // The operands as the plan sees them. Typed kernels: every row operand in x's dtype; weight
  // and bias in it or in fp32 (the mixed-precision training case, a run-time branch in the
  // kernels' vector staging; LayerNorm's whole builds take a kernel apart, see norm_fwd.cu). The
  // whole build, besides: no residual, the weight (and LayerNorm's bias, both of one width) present,
  // every row and vector whole aligned 16-byte chunks, so its loops drop edge and alignment tests
  // (fused rows keep the typed and grouped builds). The grouped builds' full-tile form takes fused
  // rows of whole chunks (its output pass reads the weight as whole chunks) (docs/perf/norm.md#forward-design).
  auto typed_vector = [&](const TensorView& v) {
    return !v.present() || v.dtype == x.dtype || v.dtype == DType::f32;
  };
  auto wide = [&](const TensorView& v) { return v.present() && v.dtype != x.dtype; };
  auto whole = [&](const RowArg& r) {
    return r.data != nullptr && whole_chunk_rows(r, N, static_cast<int>(dtype_size(r.dtype)));
  };
  NormFwdProblem q;
  q.op = op;
  q.rows = row_problem(op, storage);
  q.storage = storage.dtype;
  q.layer_norm = a.layer_norm;
  q.fused = fused;
  q.typed = (!fused || (residual.dtype == x.dtype && residual_out.dtype == x.dtype)) && y.dtype == x.dtype &&
            typed_vector(a.weight) && typed_vector(a.bias);
  const bool whole_common = q.typed && whole(p.x) && whole(p.y) && whole(p.weight);
  q.whole_rows = whole_common && !fused && (!a.layer_norm || (whole(p.bias) && wide(a.weight) == wide(a.bias)));
  q.whole_fused = whole_common && fused && whole(p.residual) && whole(p.residual_out);
  // Rows off the 16-byte grid in their frame: x and y share it, weight and bias both in x's dtype
  // or both fp32, rows of two chunks at least (the statistics' first value).
  const int eb = static_cast<int>(dtype_size(x.dtype));
  q.framed_rows = q.typed && !fused && !q.whole_rows && same_chunk_frames(p.x, p.y, eb) && N >= 2 * 16 / eb &&
                  a.weight.present() && (!a.layer_norm || (a.bias.present() && wide(a.weight) == wide(a.bias))) &&
                  (!wide(a.weight) || variant_enabled(Variant::fwd_framed_wide));
  q.wide_weight = wide(a.weight);
  const NormFwdPlan plan = plan_norm_forward(q, [](const NormFwdProblem& q, NormFwdMode mode) {
    const DType kept = mode == NormFwdMode::generic ? DType::f32 : q.storage;  // forward_elem_bytes
    return norm_forward_regs(q.op, q.layer_norm, mode, kept, forward_wide_whole(q, mode));
  });
  p.threads_per_row = plan.cfg.threads_per_row;
  p.rows_per_cta = plan.cfg.rows_per_cta;
  p.cluster_size = plan.cfg.cluster_size;
  launch_norm_forward(op, a.layer_norm, plan.mode, forward_storage(plan, storage.dtype), p, plan.cfg, plan.full_tile,
                      forward_wide_whole(q, plan.mode), stream);
}

// ---- backward ------------------------------------------------------------------------------

struct BwdArgs {
  const char* op;
  bool layer_norm;
  TensorView x, weight, mean, rstd, dy, dresidual, dx, dw, db;
  float weight_offset;
  void* workspace;
  std::size_t workspace_bytes;
};

struct BwdPlan {
  Rows x, dy, dx, dresidual;
  bool typed = false;
  bool framed = false;  // the typed loop on rows in their frame (backward_frame_groups)
  RowConfig cfg;
  long long groups = 0;
  std::size_t workspace = 0;  // bytes
  int sums = 0;               // column sums kept: dw, db
  bool empty = false;
};

// The size query each op's messages point to, by layer_norm.
constexpr const char* kWorkspaceQuery[2] = {"rms_norm_backward_workspace_bytes", "layer_norm_backward_workspace_bytes"};

// Workspace bytes of one row group's dw (and db) partials: the least any call with sums needs,
// known without the device.
std::size_t group_partial_bytes(std::int64_t n, int sums) { return static_cast<std::size_t>(n) * 4 * sums; }

// Every check that needs no device: the tensors, scalars and their overlaps, and, for a call
// (`call`: not a workspace size query), the workspace's presence, alignment, least size and
// overlaps. A call that fails here has made no CUDA call.
BwdPlan validate_backward(const BwdArgs& a, bool call) {
  const char* op = a.op;
  BwdPlan b;
  check_dtype(op, "x", a.x, kFloat);
  b.x = as_rows(op, "x", a.x);
  // fp32 rows may take dy of any float dtype (a 16-bit y beside an fp32 residual stream: its
  // gradient arrives 16-bit); 16-bit rows take dy of their own dtype (the loops hold dy in x's).
  if (a.x.dtype != DType::f32) check_same_dtype(op, "dy", a.dy, "x", a.x);
  b.dy = matrix_operand(op, "dy", a.dy, a.x);
  b.dx = matrix_operand(op, "dx", a.dx, a.x);
  const std::int64_t M = b.x.rows, N = b.x.cols;
  check_optional_vector(op, "weight", a.weight, N, kFloat);
  if (a.layer_norm) {
    TACHYON_REQUIRE(a.mean.present(), op, "mean", "is required (the forward's saved mean)");
    check_optional_vector(op, "mean", a.mean, M, {DType::f32});
  }
  TACHYON_REQUIRE(a.rstd.present(), op, "rstd", "is required (the forward's saved rstd)");
  check_optional_vector(op, "rstd", a.rstd, M, {DType::f32});
  check_optional_vector(op, "dw", a.dw, N, kFloat);
  check_optional_vector(op, "db", a.db, N, kFloat);
  TACHYON_REQUIRE(!a.dw.present() || a.weight.present(), op, "dw", "is requested but there is no weight");
  TACHYON_REQUIRE(std::isfinite(a.weight_offset), op, "weight_offset", "must be finite");
  if (a.dresidual.present()) b.dresidual = matrix_operand(op, "dresidual", a.dresidual, a.x);
  b.empty = M == 0 || N == 0;
  b.sums = (a.dw.present() ? 1 : 0) + (a.db.present() ? 1 : 0);
  // The workspace of a call that keeps column sums: present, aligned, at least one row group's
  // partials (the exact need depends on the device and is checked once it is known).
  Rows ws;
  if (call && !b.empty && b.sums > 0) {
    check_workspace(op, kWorkspaceQuery[a.layer_norm], a.workspace, a.workspace_bytes,
                    group_partial_bytes(N, b.sums));
    ws = byte_rows(op, "workspace_bytes", a.workspace, a.workspace_bytes);
  }
  // In place (norm.h): dx may be dy, x or dresidual. Every other pair of an output (dx, dw,
  // db, the workspace) with another argument is an Error.
  check_overlaps(op,
                 {{"x", b.x},
                  {"weight", vector_rows(a.weight)},
                  {"mean", vector_rows(a.mean)},
                  {"rstd", vector_rows(a.rstd)},
                  {"dy", b.dy},
                  {"dresidual", b.dresidual},
                  {"dx", b.dx, true},
                  {"dw", vector_rows(a.dw), true},
                  {"db", vector_rows(a.db), true},
                  {"workspace", ws, true}},
                 {{"dx", "dy"}, {"dx", "x"}, {"dx", "dresidual"}});
  return b;
}

// The device's part of the plan (after validate_backward): the row layout, the loop (typed,
// framed or run-time-dtype), the persistent grid and the exact workspace size.
void plan_on_device(const BwdArgs& a, BwdPlan& b) {
  const char* op = a.op;
  const std::int64_t M = b.x.rows, N = b.x.cols;
  const DeviceInfo& dev = current_device(op);
  // The row layout of either loop: the typed loop's depends on its weight slots; the
  // run-time-dtype loop's is the plain one (backward_runtime_row_config).
  const BwdWeightSlots typed_slots = backward_weight_slots(b.x.dtype, a.weight.present(), a.weight.dtype);
  RowProblem prob = row_problem(op, b.x);
  prob.frames_vary = false;
  const RowConfig typed_cfg = backward_row_config(prob, a.layer_norm, typed_slots);
  prob.frames_vary = true;
  // Rows in their frame take the plain typed build (fp32 weight slots) of the pipelined tiles.
  const RowConfig framed_cfg = backward_row_config(prob, a.layer_norm, BwdWeightSlots::fp32);
  const RowConfig untyped_cfg = backward_runtime_row_config(prob);
  // The typed loop: x, dy and dx rows (and RMSNorm's dresidual, on the tiles that have its
  // build) of one dtype in whole aligned 16-byte chunks, or (no dresidual, the 2- and 4-chunk
  // tiles) sharing each row's frame (the same start and stride modulo 16 bytes: odd N, sliced
  // views), which its framed build keeps; the weight's dtype is free (read once). Anything else:
  // the run-time-dtype loop.
  const int eb = static_cast<int>(dtype_size(b.x.dtype));
  // Whether a layout's tile has the typed loop's kDres build (RMSNorm's dresidual).
  auto dres_build_on = [](const RowConfig& cfg) {
    return backward_typed_dresidual(cfg) && variant_enabled(Variant::bwd_typed_dresidual);
  };
  const bool dres_build = dres_build_on(typed_cfg);
  const bool dres_typed = !a.dresidual.present() ||
                          (b.dresidual.dtype == b.x.dtype && whole_chunk_rows(row_arg(b.dresidual), N, eb) &&
                           dres_build);
  // bf16 dy beside fp32 rows with a dresidual (the fused fp32 residual stream): the typed loop's
  // kNarrowDy build, on the kDres builds' tiles, dy's rows whole 8-byte parts of the chunks.
  const bool narrow_dy = b.x.dtype == DType::f32 && b.dy.dtype == DType::bf16 && a.dresidual.present() &&
                         dres_build && variant_enabled(Variant::bwd_narrow_dy);
  const bool dy_typed = b.dy.dtype == b.x.dtype ? whole_chunk_rows(row_arg(b.dy), N, eb)
                                                : narrow_dy && whole_chunk_rows(row_arg(b.dy), N, 2, 8);
  const bool typed_loop = variant_enabled(Variant::bwd_typed);
  b.typed = b.dx.dtype == b.x.dtype && dy_typed && dres_typed && whole_chunk_rows(row_arg(b.x), N, eb) &&
            whole_chunk_rows(row_arg(b.dx), N, eb) && backward_typed_tile(typed_cfg.items, eb, a.layer_norm) && typed_loop;
  b.cfg = b.typed ? typed_cfg : untyped_cfg;
  const bool frame_dtypes = b.dy.dtype == b.x.dtype && b.dx.dtype == b.x.dtype && !a.dresidual.present() &&
                            (framed_cfg.items == 2 || framed_cfg.items == kBackwardItems) && typed_loop &&
                            variant_enabled(Variant::bwd_framed);
  b.framed = !b.typed && frame_dtypes && same_chunk_frames(row_arg(b.dy), row_arg(b.x), eb) &&
             same_chunk_frames(row_arg(b.dx), row_arg(b.x), eb);
  if (b.framed) {
    b.typed = true;
    b.cfg = framed_cfg;
  }
  NormBwdParams shape_only;  // what the occupancy depends on: n and which sums are kept
  shape_only.n = static_cast<int>(N);
  static float marker;
  if (a.dw.present()) shape_only.dw_partial = &marker;
  if (a.db.present()) shape_only.db_partial = &marker;
  if (a.weight.present()) shape_only.weight = {&marker, 0, a.weight.dtype};  // its dtype picks the slot set
  // The kNarrowDy build where the call takes it (a dresidual present; a query without one sizes
  // the kDres-less build, whose occupancy tier is the same: ptxas -v).
  shape_only.dy.dtype = narrow_dy ? b.dy.dtype : b.x.dtype;
  // The grid: every group resident at once. The typed loop's kDres build where the layout's tile
  // has one (the run-time-dtype loop ignores it); rows in their frame have dy of x's dtype.
  auto groups_of = [&](bool typed, const RowConfig& cfg, bool framed = false) {
    NormBwdParams q = shape_only;
    if (a.dresidual.present() && dres_build_on(cfg))
      q.dresidual = {&marker, 0, a.dresidual.dtype};
    q.framed = framed;
    if (framed) q.dy.dtype = b.x.dtype;
    const long long total = ceil_div(M, cfg.rows_per_cta);
    const long long g = norm_backward_groups(op, a.layer_norm, typed, b.x.dtype, cfg, q, total, dev.sm_count);
    return framed ? backward_frame_groups(g, total, cfg.rows_per_cta) : g;
  };
  b.groups = groups_of(b.typed, b.cfg, b.framed);
  // The workspace holds the partials of either loop's grid, each on its own layout: the typed
  // choice depends on the pointers' alignment, which a size query made with other tensors of the
  // same shape need not share.
  // (Rows of one chunk have no typed layout: backward_typed_tile.)
  long long either = groups_of(false, untyped_cfg);
  if (backward_typed_tile(typed_cfg.items, eb, a.layer_norm)) either = std::max(either, groups_of(true, typed_cfg));
  if (frame_dtypes) either = std::max(either, groups_of(true, framed_cfg, true));
  b.workspace = b.sums ? (static_cast<std::size_t>(either) * group_partial_bytes(N, b.sums) + 255) / 256 * 256 : 0;
}

// The workspace size query: the arguments first (no device), then, only where column sums are
// kept over a non-empty problem, the device.
std::size_t workspace_bytes(const BwdArgs& a) {
  BwdPlan b = validate_backward(a, /*call=*/false);
  if (b.empty || b.sums == 0) return 0;
  plan_on_device(a, b);
  return b.workspace;
}

void backward(const BwdArgs& a, cudaStream_t stream) {
  BwdPlan b = validate_backward(a, /*call=*/true);
  if (b.empty) return;
  // Validation is complete; from here on CUDA is touched.
  plan_on_device(a, b);
  const char* op = a.op;
  TACHYON_REQUIRE(a.workspace_bytes >= b.workspace, op, "workspace_bytes",
                  std::to_string(a.workspace_bytes) + " is less than the " + std::to_string(b.workspace) +
                      " this device needs (see " + kWorkspaceQuery[a.layer_norm] + ")");
  NormBwdParams p;
  p.x = row_arg(b.x);
  p.dy = row_arg(b.dy);
  p.dx = row_arg(b.dx);
  if (a.dresidual.present()) p.dresidual = row_arg(b.dresidual);
  if (a.weight.present()) p.weight = vector_arg(a.weight);
  p.mean = static_cast<const float*>(a.mean.data);
  p.rstd = static_cast<const float*>(a.rstd.data);
  float* ws = static_cast<float*>(a.workspace);
  const std::size_t per = static_cast<std::size_t>(b.groups) * b.x.cols;
  if (a.dw.present()) p.dw_partial = ws;
  if (a.db.present()) p.db_partial = ws + (a.dw.present() ? per : 0);
  p.rows = b.x.rows;
  p.n = static_cast<int>(b.x.cols);
  p.weight_offset = a.weight_offset;
  p.threads_per_row = b.cfg.threads_per_row;
  p.rows_per_cta = b.cfg.rows_per_cta;
  p.cluster_size = b.cfg.cluster_size;
  p.framed = b.framed;
  launch_norm_backward(op, a.layer_norm, b.typed, b.x.dtype, p, b.cfg, b.groups, a.dw.data, a.dw.dtype, a.db.data,
                       a.db.dtype, stream);
}

BwdArgs rms_args(const RmsNormBackward& a) {
  return {"rms_norm_backward", false, a.x, a.weight, {}, a.rstd, a.dy, a.dresidual, a.dx, a.dw, {},
          a.weight_offset, a.workspace, a.workspace_bytes};
}
BwdArgs ln_args(const LayerNormBackward& a) {
  return {"layer_norm_backward", true, a.x, a.weight, a.mean, a.rstd, a.dy, {}, a.dx, a.dw, a.db,
          0.f, a.workspace, a.workspace_bytes};
}

}  // namespace

void rms_norm_forward(const RmsNormForward& a, cudaStream_t stream) {
  forward({"rms_norm_forward", false, a.x, a.weight, {}, a.residual, a.y, a.residual_out, {}, a.rstd, a.eps,
           a.weight_offset},
          stream);
}

void layer_norm_forward(const LayerNormForward& a, cudaStream_t stream) {
  forward({"layer_norm_forward", true, a.x, a.weight, a.bias, {}, a.y, {}, a.mean, a.rstd, a.eps, 0.f}, stream);
}

std::size_t rms_norm_backward_workspace_bytes(const RmsNormBackward& a) { return workspace_bytes(rms_args(a)); }
void rms_norm_backward(const RmsNormBackward& a, cudaStream_t stream) { backward(rms_args(a), stream); }

std::size_t layer_norm_backward_workspace_bytes(const LayerNormBackward& a) {
  return workspace_bytes(ln_args(a));
}
void layer_norm_backward(const LayerNormBackward& a, cudaStream_t stream) { backward(ln_args(a), stream); }

}  // namespace tachyon

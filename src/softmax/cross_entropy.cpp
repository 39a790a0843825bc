// Cross-entropy entry points: validation at the boundary, workspace layout, and the launch
// sequence: [count non-ignored targets] -> row kernel -> [fixed-order loss sum].
#include "tachyon/cross_entropy.h"

#include <cmath>
#include <string>

#include "core/device_info.h"
#include "core/row_config.h"
#include "core/row_problem.h"
#include "core/validate.h"
#include "core/variants.h"
#include "softmax/softmax_params.h"

namespace tachyon {
namespace detail {

RowConfig cross_entropy_row_config(RowProblem prob, bool gradient, std::int64_t rows, int sm_count) {
  RowConfig cfg = choose_row_config(prob);
  // (Without a register count choose_row_config has taken 256-thread CTAs first already.)
  const bool two_an_sm = prob.regs_per_thread > 0 && !cfg.streaming() &&
                         ctas_an_sm_by_registers(prob.regs_per_thread, cfg.cta_threads) <= 2;
  if (variant_enabled(Variant::ce_narrow) && two_an_sm) {
    prob.narrow_ctas = true;
    const RowConfig narrow = choose_row_config(prob);
    if (!narrow.streaming() && narrow.cluster_size <= kCrossEntropyNarrowCtas) cfg = narrow;
  }
  // The loss alone of a row too long for one 512-thread team: stream it (a CTA per row with
  // loads in flight, a cluster for the longest rows) instead of holding it across a cluster,
  // whose per-row latency every cluster pays (0.61x copy at N = 50257). Rows a 512-thread team
  // holds stay resident: streamed, a row of one group and a remnant a thread ran at 0.65-0.83x
  // copy (bf16 N = 20000), see docs/perf/cross_entropy.md#streaming-loss.
  const bool resident = !cfg.streaming() && cfg.cluster_size * cfg.threads_per_row <= kMaxRowThreads;
  if (!gradient && !resident) {
    prob.narrow_ctas = false;
    return choose_stream_config(prob, rows, sm_count);
  }
  return cfg;
}

}  // namespace detail

using namespace detail;

namespace {

const std::initializer_list<DType> kFloat = {DType::f32, DType::f16, DType::bf16};
const std::initializer_list<DType> kIndex = {DType::i32, DType::i64};

RowArg row_arg(const Rows& r) { return {r.data, r.row_stride, r.dtype}; }
std::size_t round256(std::size_t b) { return (b + 255) / 256 * 256; }

// Workspace: [kCountParts ints, padded to 256 B] (mean) [M floats: row losses] (sum, mean).
constexpr std::size_t kCountBytes = 256 * ((kCountParts * sizeof(int) + 255) / 256);

void check_reduction(const char* op, Reduction r) {
  TACHYON_REQUIRE(r == Reduction::none || r == Reduction::sum || r == Reduction::mean, op, "reduction",
          "is not one of none, sum, mean");
}

void check_smoothing(const char* op, float eps) {
  TACHYON_REQUIRE(std::isfinite(eps) && eps >= 0.f && eps <= 1.f, op, "label_smoothing",
          "must be in [0, 1], got " + std::to_string(eps));
}

// logits (M, N) with N >= 1 and target (M) of i32 / i64.
Rows check_logits_and_target(const char* op, const TensorView& logits, const TensorView& target) {
  check_dtype(op, "logits", logits, kFloat);
  const Rows x = as_rows(op, "logits", logits);
  TACHYON_REQUIRE(x.rows == 0 || x.cols >= 1, op, "logits", "has no classes (row length 0): " + logits.str());
  check_dtype(op, "target", target, kIndex);
  check_vector(op, "target", target, x.rows);
  return x;
}

void check_f32_vector(const char* op, const char* name, const TensorView& t, std::int64_t n) {
  check_dtype(op, name, t, {DType::f32});
  check_vector(op, name, t, n);
}

RowConfig row_config(const char* op, const Rows& x, int max_items, bool clusters) {
  return choose_row_config(row_problem(op, x, max_items, clusters));
}

// A call's workspace (`call`: not a size query) where it needs one, as Rows for the overlap
// checks: present, aligned, large enough.
Rows call_workspace(const char* op, const char* see, bool call, void* ws, std::size_t have, std::size_t need) {
  if (!call || need == 0) return {};
  check_workspace(op, see, ws, have, need);
  return byte_rows(op, "workspace_bytes", ws, have);
}

// What the validation of a forward or backward call yields: the logits and dlogits as rows,
// and the workspace bytes the call needs.
struct Plan {
  Rows logits, dlogits;
  std::size_t workspace = 0;
};

// ---- forward -------------------------------------------------------------------------------

Plan plan_forward(const CrossEntropyForward& a, bool call) {
  const char* op = "cross_entropy_forward";
  Plan b;
  check_reduction(op, a.reduction);
  b.logits = check_logits_and_target(op, a.logits, a.target);
  const std::int64_t M = b.logits.rows;
  TACHYON_REQUIRE(a.loss.present(), op, "loss", "is required but absent");
  check_f32_vector(op, "loss", a.loss, a.reduction == Reduction::none ? M : 1);
  if (a.lse.present()) check_f32_vector(op, "lse", a.lse, M);
  check_smoothing(op, a.label_smoothing);
  TACHYON_REQUIRE(std::isfinite(a.grad_output), op, "grad_output", "must be finite");
  if (a.dlogits.present()) {
    check_same_dtype(op, "dlogits", a.dlogits, "logits", a.logits);
    check_same_shape(op, "dlogits", a.dlogits, "logits", a.logits);
    b.dlogits = as_rows(op, "dlogits", a.dlogits);
  }
  if (a.reduction == Reduction::mean) b.workspace += kCountBytes;
  if (a.reduction != Reduction::none) b.workspace += round256(static_cast<std::size_t>(M) * sizeof(float));
  const Rows ws = call_workspace(op, "cross_entropy_forward_workspace_bytes", call, a.workspace, a.workspace_bytes,
                                 b.workspace);
  // In place: dlogits may be the logits. Every other pair of an output (loss, lse, dlogits,
  // the workspace) with another argument is an Error.
  check_overlaps(op,
                 {{"logits", b.logits},
                  {"target", vector_rows(a.target)},
                  {"loss", vector_rows(a.loss), true},
                  {"lse", vector_rows(a.lse), true},
                  {"dlogits", b.dlogits, true},
                  {"workspace", ws, true}},
                 {{"dlogits", "logits"}});
  return b;
}

// ---- backward ------------------------------------------------------------------------------

Plan plan_backward(const CrossEntropyBackward& a, bool call) {
  const char* op = "cross_entropy_backward";
  Plan b;
  check_reduction(op, a.reduction);
  b.logits = check_logits_and_target(op, a.logits, a.target);
  const std::int64_t M = b.logits.rows;
  TACHYON_REQUIRE(a.lse.present(), op, "lse", "is required (the forward's saved lse)");
  check_f32_vector(op, "lse", a.lse, M);
  if (a.dloss.present()) {
    check_dtype(op, "dloss", a.dloss, kFloat);
    check_vector(op, "dloss", a.dloss, a.reduction == Reduction::none ? M : 1);
  }
  check_smoothing(op, a.label_smoothing);
  TACHYON_REQUIRE(a.dlogits.present(), op, "dlogits", "is required but absent");
  check_same_dtype(op, "dlogits", a.dlogits, "logits", a.logits);
  check_same_shape(op, "dlogits", a.dlogits, "logits", a.logits);
  b.dlogits = as_rows(op, "dlogits", a.dlogits);
  if (a.reduction == Reduction::mean) b.workspace = kCountBytes;
  const Rows ws = call_workspace(op, "cross_entropy_backward_workspace_bytes", call, a.workspace, a.workspace_bytes,
                                 b.workspace);
  // In place: dlogits may be the logits. Every other pair of an output (dlogits, the
  // workspace) with another argument is an Error.
  check_overlaps(op,
                 {{"logits", b.logits},
                  {"target", vector_rows(a.target)},
                  {"lse", vector_rows(a.lse)},
                  {"dloss", vector_rows(a.dloss)},
                  {"dlogits", b.dlogits, true},
                  {"workspace", ws, true}},
                 {{"dlogits", "logits"}});
  return b;
}

}  // namespace

std::size_t cross_entropy_forward_workspace_bytes(const CrossEntropyForward& a) {
  return plan_forward(a, /*call=*/false).workspace;
}

void cross_entropy_forward(const CrossEntropyForward& a, cudaStream_t stream) {
  const char* op = "cross_entropy_forward";
  const Plan b = plan_forward(a, /*call=*/true);
  const std::int64_t M = b.logits.rows;
  if (M == 0 && a.reduction == Reduction::none) return;

  char* ws = static_cast<char*>(a.workspace);
  int* parts = a.reduction == Reduction::mean ? reinterpret_cast<int*>(ws) : nullptr;
  float* row_losses = a.reduction == Reduction::none
                          ? static_cast<float*>(a.loss.data)
                          : reinterpret_cast<float*>(ws + (a.reduction == Reduction::mean ? kCountBytes : 0));
  const bool target_i64 = a.target.dtype == DType::i64;
  if (parts) launch_count_targets(op, a.target.data, target_i64, M, a.ignore_index, parts, stream);
  if (M > 0) {
    RowProblem prob = row_problem(op, b.logits, cross_entropy_max_items(static_cast<int>(b.logits.elem_bytes())));
    prob.regs_per_thread = cross_entropy_forward_regs(op, b.logits.dtype);
    RowConfig cfg = cross_entropy_row_config(prob, a.dlogits.present(), M, current_device(op).sm_count);
    // After the count kernel, programmatically: every thread waits for it (at the gradient scale,
    // or before it exits), so that its completion implies the count's, which the loss sum reads.
    cfg.programmatic = parts != nullptr;
    CrossEntropyParams p;
    p.logits = row_arg(b.logits);
    if (a.dlogits.present()) p.dlogits = row_arg(b.dlogits);
    p.target = a.target.data;
    p.target_i64 = target_i64;
    p.loss = row_losses;
    p.lse_out = static_cast<float*>(a.lse.data);
    p.count_parts = a.dlogits.present() ? parts : nullptr;
    p.grad_scale = a.grad_output;
    p.ignore_index = a.ignore_index;
    p.smoothing = a.label_smoothing;
    p.rows = M;
    p.n = static_cast<int>(b.logits.cols);
    p.threads_per_row = cfg.threads_per_row;
    p.rows_per_cta = cfg.rows_per_cta;
    p.cluster_size = cfg.cluster_size;
    launch_cross_entropy_forward(op, b.logits.dtype, p, cfg, stream);
  }
  if (a.reduction != Reduction::none)
    launch_loss_reduce(op, row_losses, M, parts, static_cast<float*>(a.loss.data), stream);
}

std::size_t cross_entropy_backward_workspace_bytes(const CrossEntropyBackward& a) {
  return plan_backward(a, /*call=*/false).workspace;
}

void cross_entropy_backward(const CrossEntropyBackward& a, cudaStream_t stream) {
  const char* op = "cross_entropy_backward";
  const Plan b = plan_backward(a, /*call=*/true);
  const std::int64_t M = b.logits.rows;
  if (M == 0) return;
  int* parts = a.reduction == Reduction::mean ? static_cast<int*>(a.workspace) : nullptr;
  const bool target_i64 = a.target.dtype == DType::i64;
  if (parts) launch_count_targets(op, a.target.data, target_i64, M, a.ignore_index, parts, stream);
  // No reduction in this kernel: no clusters; rows past one CTA's tile loop over their chunks.
  RowConfig cfg = row_config(op, b.logits, 8, false);
  cfg.programmatic = parts != nullptr;  // after the count kernel: waits for the counts
  CrossEntropyBwdParams p;
  p.logits = row_arg(b.logits);
  p.dlogits = row_arg(b.dlogits);
  p.target = a.target.data;
  p.target_i64 = target_i64;
  p.lse = static_cast<const float*>(a.lse.data);
  p.dloss = a.dloss.present() ? a.dloss.data : nullptr;
  p.dloss_dtype = a.dloss.dtype;
  p.dloss_per_row = a.reduction == Reduction::none;
  p.count_parts = parts;
  p.ignore_index = a.ignore_index;
  p.smoothing = a.label_smoothing;
  p.rows = M;
  p.n = static_cast<int>(b.logits.cols);
  p.threads_per_row = cfg.threads_per_row;
  p.rows_per_cta = cfg.rows_per_cta;
  p.cluster_size = cfg.cluster_size;
  launch_cross_entropy_backward(op, b.logits.dtype, p, cfg, stream);
}

void lse_combine(const LseCombine& a, cudaStream_t stream) {
  const char* op = "lse_combine";
  check_dtype(op, "partial", a.partial, {DType::f32});
  const Rows part = as_rows(op, "partial", a.partial);
  TACHYON_REQUIRE(a.lse.present(), op, "lse", "is required but absent");
  check_f32_vector(op, "lse", a.lse, part.cols);
  check_no_overlap(op, "lse", vector_rows(a.lse), "partial", part, false);
  if (part.cols == 0) return;
  launch_lse_combine(op, reinterpret_cast<const float*>(part.data), part.rows, part.row_stride, part.cols,
                     static_cast<float*>(a.lse.data), stream);
}

}  // namespace tachyon

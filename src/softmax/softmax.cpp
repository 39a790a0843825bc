// Softmax / log-softmax entry points: validation at the boundary, the row layout from
// choose_row_config, then the launchers in softmax_fwd.cu / softmax_bwd.cu.
#include "tachyon/softmax.h"

#include "core/device_info.h"
#include "core/row_config.h"
#include "core/row_problem.h"
#include "core/validate.h"
#include "softmax/softmax_params.h"

namespace tachyon {
using namespace detail;

namespace {

const std::initializer_list<DType> kFloat = {DType::f32, DType::f16, DType::bf16};

RowArg row_arg(const Rows& r) { return {r.data, r.row_stride, r.dtype}; }

// An (M, N) operand: float dtype and the shape of `ref`.
Rows matrix_operand(const char* op, const char* name, const TensorView& t, const char* ref_name,
                    const TensorView& ref) {
  check_dtype(op, name, t, kFloat);
  check_same_shape(op, name, t, ref_name, ref);
  return as_rows(op, name, t);
}

RowConfig row_config(const char* op, const Rows& storage, int max_items) {
  return choose_row_config(row_problem(op, storage, max_items));
}

}  // namespace

void softmax_forward(const SoftmaxForward& a, cudaStream_t stream) {
  const char* op = "softmax_forward";
  check_dtype(op, "x", a.x, kFloat);
  const Rows x = as_rows(op, "x", a.x);
  const Rows y = matrix_operand(op, "y", a.y, "x", a.x);
  check_no_overlap(op, "y", y, "x", x, /*allow_same=*/true);
  if (x.rows == 0 || x.cols == 0) return;

  RowProblem prob = row_problem(op, x, softmax_forward_max_items(static_cast<int>(x.elem_bytes())));
  prob.regs_per_thread = softmax_forward_regs(op, x.dtype);
  const RowConfig cfg = choose_row_config(prob);
  SoftmaxFwdParams p;
  p.x = row_arg(x);
  p.y = row_arg(y);
  p.rows = x.rows;
  p.n = static_cast<int>(x.cols);
  p.log = a.log;
  p.threads_per_row = cfg.threads_per_row;
  p.rows_per_cta = cfg.rows_per_cta;
  p.cluster_size = cfg.cluster_size;
  launch_softmax_forward(op, /*typed=*/y.dtype == x.dtype, x.dtype, p, cfg, stream);
}

void softmax_backward(const SoftmaxBackward& a, cudaStream_t stream) {
  const char* op = "softmax_backward";
  check_dtype(op, "y", a.y, kFloat);
  const Rows y = as_rows(op, "y", a.y);
  check_same_dtype(op, "dy", a.dy, "y", a.y);
  const Rows dy = matrix_operand(op, "dy", a.dy, "y", a.y);
  const Rows dx = matrix_operand(op, "dx", a.dx, "y", a.y);
  check_no_overlap(op, "dx", dx, "y", y, true);
  check_no_overlap(op, "dx", dx, "dy", dy, true);
  if (y.rows == 0 || y.cols == 0) return;

  const RowConfig cfg = row_config(op, y, softmax_backward_max_items(static_cast<int>(y.elem_bytes())));
  SoftmaxBwdParams p;
  p.y = row_arg(y);
  p.dy = row_arg(dy);
  p.dx = row_arg(dx);
  p.rows = y.rows;
  p.n = static_cast<int>(y.cols);
  p.log = a.log;
  p.threads_per_row = cfg.threads_per_row;
  p.rows_per_cta = cfg.rows_per_cta;
  p.cluster_size = cfg.cluster_size;
  launch_softmax_backward(op, /*typed=*/dx.dtype == y.dtype, y.dtype, p, cfg, stream);
}

}  // namespace tachyon

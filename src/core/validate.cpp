#include "core/validate.h"

#include <cuda_runtime_api.h>

#include <climits>

#include "core/check.h"

namespace tachyon::detail {

void fail(const char* op, const char* arg, const std::string& what) {
  throw Error(std::string(op) + ": " + arg + ": " + what);
}

void throw_cuda_error(const char* op, const char* what, cudaError_t err) {
  cudaGetLastError();  // clear a non-sticky launch error so it is not reported again by the next call
  throw Error(std::string(op) + ": CUDA error " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
              ") from " + what);
}

std::string dtype_list(std::initializer_list<DType> allowed) {
  std::string s;
  for (DType d : allowed) s += (s.empty() ? "" : ", ") + std::string(dtype_name(d));
  return s;
}

std::int64_t Rows::span_bytes() const {
  if (rows == 0 || cols == 0) return 0;
  return ((rows - 1) * row_stride + cols) * static_cast<std::int64_t>(elem_bytes());
}

bool Rows::rows_aligned(std::size_t bytes) const {
  auto addr = reinterpret_cast<std::uintptr_t>(data);
  bool base = addr % bytes == 0;
  bool stride = rows <= 1 || (static_cast<std::uint64_t>(row_stride) * elem_bytes()) % bytes == 0;
  return base && stride;
}

Rows vector_rows(const TensorView& t) {
  Rows r;
  r.data = static_cast<char*>(t.data);
  r.dtype = t.dtype;
  r.rows = 1;
  r.cols = t.numel();
  r.row_stride = r.cols;
  return r;
}

Rows as_rows(const char* op, const char* arg, const TensorView& t, std::int64_t max_cols) {
  TACHYON_REQUIRE(t.present(), op, arg, "is required but absent");
  TACHYON_REQUIRE(t.rank >= 1 && t.rank <= kMaxRank, op, arg, "rank " + std::to_string(t.rank) + " is not in 1..4");
  for (int d = 0; d < t.rank; ++d)
    TACHYON_REQUIRE(t.shape[d] >= 0, op, arg, "negative extent in " + t.str());
  Rows r;
  r.data = static_cast<char*>(t.data);
  r.dtype = t.dtype;
  r.cols = t.shape[t.rank - 1];
  r.rows = 1;
  for (int d = 0; d < t.rank - 1; ++d) r.rows *= t.shape[d];
  if (r.rows == 0 || r.cols == 0) {
    r.row_stride = r.cols;
    return r;  // empty: nothing to check, nothing to do
  }
  TACHYON_REQUIRE(t.data != nullptr, op, arg, "null data with " + std::to_string(t.numel()) + " elements");
  TACHYON_REQUIRE(r.cols == 1 || t.stride[t.rank - 1] == 1, op, arg,
          "innermost dimension must be contiguous (stride 1), got " + t.str());
  TACHYON_REQUIRE(r.cols <= max_cols, op, arg,
          "row length " + std::to_string(r.cols) + " exceeds this op's limit of " + std::to_string(max_cols));
  // Collapse leading dims: each must step by (next stride * next extent).
  r.row_stride = t.rank >= 2 ? t.stride[t.rank - 2] : r.cols;
  for (int d = t.rank - 3; d >= 0; --d) {
    if (t.shape[d] == 1) continue;
    TACHYON_REQUIRE(t.stride[d] == t.stride[d + 1] * t.shape[d + 1], op, arg,
            "leading dimensions cannot be collapsed into rows: " + t.str());
  }
  if (r.rows == 1) r.row_stride = r.cols;
  TACHYON_REQUIRE(r.row_stride >= r.cols, op, arg,
          "row stride " + std::to_string(r.row_stride) + " is smaller than the row length " +
              std::to_string(r.cols) + " (rows would overlap)");
  TACHYON_REQUIRE(reinterpret_cast<std::uintptr_t>(t.data) % dtype_size(t.dtype) == 0, op, arg,
          "data pointer is not aligned to its element size " + std::to_string(dtype_size(t.dtype)));
  return r;
}

void check_dtype(const char* op, const char* arg, const TensorView& t, std::initializer_list<DType> allowed) {
  for (DType d : allowed)
    if (t.dtype == d) return;
  fail(op, arg, std::string("dtype ") + dtype_name(t.dtype) + " is not supported (expected one of " +
                    dtype_list(allowed) + ")");
}

void check_same_dtype(const char* op, const char* arg, const TensorView& t, const char* ref_arg,
                      const TensorView& ref) {
  TACHYON_REQUIRE(t.dtype == ref.dtype, op, arg,
          std::string("dtype ") + dtype_name(t.dtype) + " differs from " + ref_arg + "'s " + dtype_name(ref.dtype));
}

void check_same_shape(const char* op, const char* arg, const TensorView& t, const char* ref_arg,
                      const TensorView& ref) {
  bool same = t.rank == ref.rank;
  for (int d = 0; same && d < t.rank; ++d) same = t.shape[d] == ref.shape[d];
  TACHYON_REQUIRE(same, op, arg, "shape " + t.str() + " differs from " + ref_arg + "'s " + ref.str());
}

void check_vector(const char* op, const char* arg, const TensorView& t, std::int64_t n) {
  TACHYON_REQUIRE(t.present(), op, arg, "is required but absent");
  std::int64_t count = t.numel();
  bool ok = count == n;
  // Any rank whose only non-unit extent is the last, contiguous.
  for (int d = 0; ok && d < t.rank - 1; ++d) ok = t.shape[d] == 1;
  TACHYON_REQUIRE(ok, op, arg, "expected " + std::to_string(n) + " elements as a vector, got " + t.str());
  TACHYON_REQUIRE(n <= 1 || t.stride[t.rank - 1] == 1, op, arg, "must be contiguous, got " + t.str());
  TACHYON_REQUIRE(n == 0 || t.data != nullptr, op, arg, "null data with " + std::to_string(n) + " elements");
  TACHYON_REQUIRE(reinterpret_cast<std::uintptr_t>(t.data) % dtype_size(t.dtype) == 0, op, arg,
          "data pointer is not aligned to its element size");
}

void check_no_overlap(const char* op, const char* out_arg, const Rows& out, const char* in_arg, const Rows& in,
                      bool allow_same) {
  if (out.numel() == 0 || in.numel() == 0) return;
  auto o0 = reinterpret_cast<std::uintptr_t>(out.data), i0 = reinterpret_cast<std::uintptr_t>(in.data);
  auto o1 = o0 + out.span_bytes(), i1 = i0 + in.span_bytes();
  if (o1 <= i0 || i1 <= o0) return;  // disjoint extents
  bool same = o0 == i0 && out.dtype == in.dtype && out.rows == in.rows && out.cols == in.cols &&
              (out.rows == 1 || out.row_stride == in.row_stride);
  if (same && allow_same) return;
  // Interleaved rows of equal stride (e.g. two column blocks of one buffer) do not overlap.
  std::int64_t eb = static_cast<std::int64_t>(out.elem_bytes());
  if (!same && out.dtype == in.dtype && out.row_stride == in.row_stride && out.rows > 1 &&
      (static_cast<std::int64_t>(i0) - static_cast<std::int64_t>(o0)) % eb == 0) {
    std::int64_t s = out.row_stride;
    std::int64_t delta = (static_cast<std::int64_t>(i0) - static_cast<std::int64_t>(o0)) / eb;
    std::int64_t dm = ((delta % s) + s) % s;  // where in's rows start within out's row period
    if (dm >= out.cols && dm + in.cols <= s) return;
  }
  fail(op, out_arg, std::string(same ? "is the same memory as " : "overlaps ") + in_arg +
                        (same ? ", which this operation cannot do in place" : ""));
}

}  // namespace tachyon::detail

#include "core/validate.h"

#include <cuda_runtime_api.h>

#include <climits>
#include <cstring>

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

namespace {

bool rank_in(int rank, int lo) { return rank >= lo && rank <= kMaxRank; }

// Rank, dtype value, extents >= 0 and the element count without overflow (left to right, as
// PyTorch: an intermediate product that overflows is an error even if a later extent is 0).
// Returns the element count; `rows_out` (if given) the product of all extents but the last.
std::int64_t checked_extents(const char* op, const char* arg, const TensorView& t, int min_rank,
                             std::int64_t* rows_out) {
  TACHYON_REQUIRE(rank_in(t.rank, min_rank), op, arg,
                  "rank " + std::to_string(t.rank) + " is not in " + std::to_string(min_rank) + "..4");
  TACHYON_REQUIRE(known_dtype(t.dtype), op, arg,
                  "dtype value " + std::to_string(static_cast<int>(t.dtype)) + " is not a DType");
  std::int64_t n = 1, rows = 1;
  for (int d = 0; d < t.rank; ++d) {
    TACHYON_REQUIRE(t.shape[d] >= 0, op, arg, "negative extent in " + t.str());
    TACHYON_REQUIRE(!__builtin_mul_overflow(n, t.shape[d], &n), op, arg,
                    "the number of elements overflows int64: " + t.str());
    if (d == t.rank - 2) rows = n;
  }
  if (rows_out) *rows_out = t.rank >= 2 ? rows : 1;
  return n;
}

// The bytes of `rows` rows of `cols` elements `row_stride` apart, from `data`: fits int64 and
// does not run past the end of the address space.
void check_span(const char* op, const char* arg, const TensorView& t, const void* data, std::int64_t rows,
                std::int64_t cols, std::int64_t row_stride, std::int64_t elem) {
  std::int64_t span = 0;
  const bool ok = !__builtin_mul_overflow(rows - 1, row_stride, &span) && !__builtin_add_overflow(span, cols, &span) &&
                  !__builtin_mul_overflow(span, elem, &span);
  TACHYON_REQUIRE(ok, op, arg, "spans more than 2^63 bytes: " + t.str());
  const auto addr = reinterpret_cast<std::uintptr_t>(data);
  TACHYON_REQUIRE(static_cast<std::uintptr_t>(span) <= UINTPTR_MAX - addr, op, arg,
                  "runs past the end of the address space: " + t.str());
}

bool same_name(const char* a, const char* b) { return a == b || std::strcmp(a, b) == 0; }

// Whether the one row of `one` shares a byte with any row of `many` (validated views).
bool row_meets(const Rows& one, const Rows& many) {
  using i128 = __int128;
  const i128 x0 = reinterpret_cast<std::uintptr_t>(one.data), xlen = static_cast<i128>(one.cols) * one.elem_bytes();
  const i128 r0 = reinterpret_cast<std::uintptr_t>(many.data);
  const i128 len = static_cast<i128>(many.cols) * many.elem_bytes();
  if (many.rows == 1) return x0 < r0 + len && r0 < x0 + xlen;
  const i128 s = static_cast<i128>(many.row_stride) * many.elem_bytes();  // > 0: rows > 1
  const i128 lo = x0 - r0 - len + 1, hi = x0 + xlen - 1 - r0;  // rows i with lo <= i s <= hi
  if (hi < 0) return false;
  const i128 first = lo <= 0 ? 0 : (lo + s - 1) / s;
  const i128 last = hi / s < many.rows - 1 ? hi / s : many.rows - 1;
  return first <= last;
}

}  // namespace

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
  if (!t.present() || !rank_in(t.rank, 0)) return r;
  r.data = static_cast<char*>(t.data);
  r.dtype = t.dtype;
  r.rows = 1;
  r.cols = t.numel();
  r.row_stride = r.cols;
  return r;
}

Rows byte_rows(const char* op, const char* arg, const void* p, std::size_t bytes) {
  Rows r;
  if (p == nullptr || bytes == 0) return r;
  TACHYON_REQUIRE(bytes <= static_cast<std::size_t>(INT64_MAX) &&
                      bytes <= UINTPTR_MAX - reinterpret_cast<std::uintptr_t>(p),
                  op, arg, std::to_string(bytes) + " bytes run past the end of the address space");
  r.data = static_cast<char*>(const_cast<void*>(p));
  r.dtype = DType::f8_e4m3;  // one byte an element
  r.rows = 1;
  r.cols = static_cast<std::int64_t>(bytes);
  r.row_stride = r.cols;
  return r;
}

void check_workspace(const char* op, const char* see, const void* ws, std::size_t have, std::size_t need) {
  TACHYON_REQUIRE(ws != nullptr, op, "workspace",
                  "is required: " + std::to_string(need) + " bytes (see " + see + ")");
  TACHYON_REQUIRE(have >= need, op, "workspace_bytes",
                  std::to_string(have) + " is less than the " + std::to_string(need) + " needed (see " + see + ")");
  TACHYON_REQUIRE(reinterpret_cast<std::uintptr_t>(ws) % 16 == 0, op, "workspace", "must be 16-byte aligned");
  byte_rows(op, "workspace_bytes", ws, have);
}

Rows as_rows(const char* op, const char* arg, const TensorView& t, std::int64_t max_cols) {
  TACHYON_REQUIRE(t.present(), op, arg, "is required but absent");
  Rows r;
  const std::int64_t n = checked_extents(op, arg, t, 1, &r.rows);
  r.data = static_cast<char*>(t.data);
  r.dtype = t.dtype;
  r.cols = t.shape[t.rank - 1];
  if (n == 0) {
    r.row_stride = r.cols;
    return r;  // empty: nothing to check, nothing to do
  }
  TACHYON_REQUIRE(t.data != nullptr, op, arg, "null data with " + std::to_string(n) + " elements");
  const auto elem = static_cast<std::int64_t>(dtype_size(t.dtype));
  TACHYON_REQUIRE(reinterpret_cast<std::uintptr_t>(t.data) % elem == 0, op, arg,
                  "data pointer is not aligned to its element size " + std::to_string(elem));
  TACHYON_REQUIRE(r.cols == 1 || t.stride[t.rank - 1] == 1, op, arg,
                  "innermost dimension must be contiguous (stride 1), got " + t.str());
  TACHYON_REQUIRE(r.cols <= max_cols, op, arg,
                  "row length " + std::to_string(r.cols) + " exceeds this op's limit of " + std::to_string(max_cols));
  // Collapse the leading dimensions of extent > 1 (size-1 ones constrain nothing): each must
  // step by the next one's stride times its extent. The innermost gives the row stride.
  r.row_stride = r.cols;  // one row: its stride is never used
  int inner = -1;
  for (int d = t.rank - 2; d >= 0; --d) {
    if (t.shape[d] == 1) continue;
    if (inner < 0) {
      r.row_stride = t.stride[d];
    } else {
      std::int64_t step = 0;
      TACHYON_REQUIRE(!__builtin_mul_overflow(t.stride[inner], t.shape[inner], &step) && t.stride[d] == step, op,
                      arg, "leading dimensions cannot be collapsed into rows: " + t.str());
    }
    inner = d;
  }
  TACHYON_REQUIRE(r.row_stride >= r.cols, op, arg,
                  "row stride " + std::to_string(r.row_stride) + " is smaller than the row length " +
                      std::to_string(r.cols) + " (rows would overlap)");
  check_span(op, arg, t, t.data, r.rows, r.cols, r.row_stride, elem);
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
  bool same = t.rank == ref.rank && rank_in(t.rank, 0);
  for (int d = 0; same && d < t.rank; ++d) same = t.shape[d] == ref.shape[d];
  TACHYON_REQUIRE(same, op, arg, "shape " + t.str() + " differs from " + ref_arg + "'s " + ref.str());
}

void check_vector(const char* op, const char* arg, const TensorView& t, std::int64_t n) {
  TACHYON_REQUIRE(t.present(), op, arg, "is required but absent");
  const std::int64_t count = checked_extents(op, arg, t, 0, nullptr);
  bool ok = count == n;
  // Any rank whose only non-unit extent is the last, contiguous.
  for (int d = 0; ok && d < t.rank - 1; ++d) ok = t.shape[d] == 1;
  TACHYON_REQUIRE(ok, op, arg, "expected " + std::to_string(n) + " elements as a vector, got " + t.str());
  if (n == 0) return;
  TACHYON_REQUIRE(n == 1 || t.stride[t.rank - 1] == 1, op, arg, "must be contiguous, got " + t.str());
  TACHYON_REQUIRE(t.data != nullptr, op, arg, "null data with " + std::to_string(n) + " elements");
  const auto elem = static_cast<std::int64_t>(dtype_size(t.dtype));
  TACHYON_REQUIRE(reinterpret_cast<std::uintptr_t>(t.data) % elem == 0, op, arg,
                  "data pointer is not aligned to its element size");
  check_span(op, arg, t, t.data, 1, n, n, elem);
}

void check_no_overlap(const char* op, const char* out_arg, const Rows& out, const char* in_arg, const Rows& in,
                      bool allow_same) {
  if (out.empty() || in.empty()) return;
  // Validated views: spans fit int64 and end addresses do not wrap.
  const auto o0 = reinterpret_cast<std::uintptr_t>(out.data), i0 = reinterpret_cast<std::uintptr_t>(in.data);
  const auto o1 = o0 + static_cast<std::uintptr_t>(out.span_bytes());
  const auto i1 = i0 + static_cast<std::uintptr_t>(in.span_bytes());
  if (o1 <= i0 || i1 <= o0) return;  // disjoint extents
  bool same = o0 == i0 && out.dtype == in.dtype && out.rows == in.rows && out.cols == in.cols &&
              (out.rows == 1 || out.row_stride == in.row_stride);
  if (same && allow_same) return;
  // One side a single row (a vector, a workspace): exact, e.g. a vector in the other's row padding.
  if (!same && (out.rows == 1 || in.rows == 1) && !row_meets(out.rows == 1 ? out : in, out.rows == 1 ? in : out))
    return;
  // Interleaved rows of equal stride (e.g. two column blocks of one buffer) do not overlap.
  // The extents overlap, so the address difference is under 2^63 and fits int64.
  const std::int64_t eb = static_cast<std::int64_t>(out.elem_bytes());
  const auto diff = static_cast<std::int64_t>(i0 - o0);
  if (!same && out.dtype == in.dtype && out.row_stride == in.row_stride && out.rows > 1 && diff % eb == 0) {
    const std::int64_t s = out.row_stride;
    const std::int64_t delta = diff / eb;
    const std::int64_t dm = ((delta % s) + s) % s;  // where in's rows start within out's row period
    if (dm >= out.cols && dm + in.cols <= s) return;
  }
  fail(op, out_arg, std::string(same ? "is the same memory as " : "overlaps ") + in_arg +
                        (same ? ", which this operation cannot do in place" : ""));
}

void check_overlaps(const char* op, std::initializer_list<Operand> operands, std::initializer_list<InPlace> in_place) {
  for (const Operand* o = operands.begin(); o != operands.end(); ++o) {
    if (!o->output || o->rows.empty()) continue;
    const auto o0 = reinterpret_cast<std::uintptr_t>(o->rows.data);
    const auto o1 = o0 + static_cast<std::uintptr_t>(o->rows.span_bytes());
    for (const Operand* i = operands.begin(); i != operands.end(); ++i) {
      // Each pair once: an output against every input, and against the outputs before it.
      if (i == o || (i->output && i > o) || i->rows.empty()) continue;
      const auto i0 = reinterpret_cast<std::uintptr_t>(i->rows.data);
      if (o1 <= i0 || i0 + static_cast<std::uintptr_t>(i->rows.span_bytes()) <= o0) continue;
      bool allow = false;
      for (const InPlace& p : in_place)
        allow = allow || (same_name(p.out, o->name) && same_name(p.other, i->name)) ||
                (i->output && same_name(p.out, i->name) && same_name(p.other, o->name));
      check_no_overlap(op, o->name, o->rows, i->name, i->rows, allow);
    }
  }
}

}  // namespace tachyon::detail

#pragma once
// Argument validation at the API boundary. Every check throws tachyon::Error with a
// message "<op>: <argument>: <what is wrong>" before anything is launched.
#include <cstdint>
#include <initializer_list>
#include <string>

#include "tachyon/error.h"
#include "tachyon/tensor.h"

namespace tachyon::detail {

[[noreturn]] void fail(const char* op, const char* arg, const std::string& what);

// Throws when `ok` is false. A macro so that the message (often a formatted string) is built
// only on failure: the happy path of a call costs no allocation or formatting.
#define TACHYON_REQUIRE(ok, op, arg, what)                        \
  do {                                                            \
    if (!(ok)) ::tachyon::detail::fail((op), (arg), (what));      \
  } while (0)

// A tensor seen as rows of `cols` contiguous elements, `row_stride` elements apart: the
// form every row-wise kernel (elementwise, norms, softmax) works on. Leading dimensions
// must collapse into one row index; the innermost dimension must be contiguous.
struct Rows {
  char* data = nullptr;
  DType dtype = DType::f32;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t row_stride = 0;  // elements

  std::size_t elem_bytes() const { return dtype_size(dtype); }
  std::int64_t numel() const { return rows * cols; }
  // Bytes from the first to one past the last element.
  std::int64_t span_bytes() const;
  // True when every row starts on a `bytes` boundary (base and stride both aligned).
  bool rows_aligned(std::size_t bytes) const;
};

// Validates presence, rank (1..4), inner contiguity, collapsible leading dims, null data
// with non-zero size, element alignment, and that the row length fits the kernel's column
// index (31 bits for row kernels; flat elementwise kernels index with 64 bits).
Rows as_rows(const char* op, const char* arg, const TensorView& t, std::int64_t max_cols = 0x7fffffffLL - 64);

void check_dtype(const char* op, const char* arg, const TensorView& t, std::initializer_list<DType> allowed);
void check_same_dtype(const char* op, const char* arg, const TensorView& t, const char* ref_arg,
                      const TensorView& ref);
void check_same_shape(const char* op, const char* arg, const TensorView& t, const char* ref_arg,
                      const TensorView& ref);
// 1-D vector of exactly n elements (any stride 1), e.g. a weight or an rstd output.
void check_vector(const char* op, const char* arg, const TensorView& t, std::int64_t n);

// A contiguous vector (already validated, e.g. by check_vector) as one row, for
// check_no_overlap.
Rows vector_rows(const TensorView& t);

// Output `out` may not overlap input `in`, except that when `allow_same` is true the
// two may be exactly the same memory with the same layout (in-place).
void check_no_overlap(const char* op, const char* out_arg, const Rows& out, const char* in_arg, const Rows& in,
                      bool allow_same);

std::string dtype_list(std::initializer_list<DType> allowed);

}  // namespace tachyon::detail

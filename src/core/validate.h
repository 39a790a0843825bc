#pragma once
// Argument validation at the API boundary. Every check throws tachyon::Error with a
// message "<op>: <argument>: <what is wrong>" before anything is launched: no check here
// touches CUDA, so a call that fails validation makes no CUDA call at all.
//
// Arithmetic on extents, strides and addresses is checked (no silent int64 or address
// wrap-around): a view whose element count, byte span or end address overflows is an Error.
#include <cstddef>
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

// The longest row the row kernels take (norms, softmax, cross-entropy: they index a row
// with 32 bits and round it up to whole chunks) and the largest M, N and K of the GEMM:
// 2^31 - 65 = 2,147,483,583 elements.
inline constexpr std::int64_t kMaxRowLength = 0x7fffffffLL - 64;

// The dtypes DType names (a value cast from an out-of-range integer is not one).
inline bool known_dtype(DType d) { return static_cast<unsigned>(d) <= static_cast<unsigned>(DType::i64); }

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
  std::int64_t numel() const { return rows * cols; }  // validated: cannot overflow
  bool empty() const { return rows == 0 || cols == 0; }
  // Bytes from the first to one past the last element (validated: fits int64, no wrap).
  std::int64_t span_bytes() const;
  // True when every row starts on a `bytes` boundary (base and stride both aligned).
  bool rows_aligned(std::size_t bytes) const;
};

// Validates presence, rank (1..4), dtype value, extents (>= 0, element count without int64
// overflow), and for a non-empty view: data, element alignment, inner contiguity, leading
// dimensions that collapse into rows (size-1 dimensions ignored), rows that do not overlap
// one another, a byte span without overflow or address wrap, and that the row length fits
// the kernel's column index (`max_cols`; flat elementwise kernels index with 64 bits).
Rows as_rows(const char* op, const char* arg, const TensorView& t, std::int64_t max_cols = kMaxRowLength);

void check_dtype(const char* op, const char* arg, const TensorView& t, std::initializer_list<DType> allowed);
void check_same_dtype(const char* op, const char* arg, const TensorView& t, const char* ref_arg,
                      const TensorView& ref);
void check_same_shape(const char* op, const char* arg, const TensorView& t, const char* ref_arg,
                      const TensorView& ref);
// Vector of exactly n elements: rank 0..4 whose only non-unit extent is the last (rank 0 is
// one element), stride 1 when n > 1, non-null and element-aligned when n > 0, its bytes
// without overflow or address wrap. E.g. a weight or an rstd output.
void check_vector(const char* op, const char* arg, const TensorView& t, std::int64_t n);

// A vector (already validated by check_vector) as one row, for the overlap checks; an absent
// view gives an empty Rows.
Rows vector_rows(const TensorView& t);

// `bytes` of raw memory at `p` (a workspace) as one row of bytes, for the overlap checks.
// Validates that the range does not wrap the address space (naming `arg`).
Rows byte_rows(const char* op, const char* arg, const void* p, std::size_t bytes);

// A caller-provided workspace of `have` bytes for a call that needs at least `need` (> 0):
// non-null, 16-byte aligned, large enough, and within the address space.
void check_workspace(const char* op, const char* see, const void* ws, std::size_t have, std::size_t need);

// Output `out` may not overlap input `in`, except that when `allow_same` is true the
// two may be exactly the same memory with the same layout (in-place).
void check_no_overlap(const char* op, const char* out_arg, const Rows& out, const char* in_arg, const Rows& in,
                      bool allow_same);

// One argument of a call for check_overlaps: its name, its memory as Rows (empty when
// absent), and whether the call writes it (an output or a workspace).
struct Operand {
  const char* name;
  Rows rows;
  bool output = false;
};
// A pair (output, other argument) that may be exactly the same memory and layout.
struct InPlace {
  const char* out;
  const char* other;
};

// Every output against every other argument (inputs, other outputs, workspaces): no byte in
// common, except the `in_place` pairs, which may be exactly the same memory and layout.
// Pairs with disjoint extents cost a few compares and no string work.
void check_overlaps(const char* op, std::initializer_list<Operand> operands,
                    std::initializer_list<InPlace> in_place = {});

std::string dtype_list(std::initializer_list<DType> allowed);

}  // namespace tachyon::detail

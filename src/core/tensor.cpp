// TensorView helpers: sizes, contiguity, printing, construction.

#include "tachyon/error.h"
#include "tachyon/tensor.h"

namespace tachyon {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::f8_e4m3: return 1;
    case DType::f8_e5m2: return 1;
    case DType::i32: return 4;
    case DType::i64: return 8;
  }
  throw Error("dtype_size: unknown dtype " + std::to_string(static_cast<int>(dtype)));
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f8_e4m3: return "f8_e4m3";
    case DType::f8_e5m2: return "f8_e5m2";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
  }
  return "unknown";
}

bool is_floating(DType dtype) { return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16; }

std::int64_t TensorView::numel() const {
  if (rank < 0 || rank > kMaxRank)
    throw Error("TensorView::numel: rank " + std::to_string(rank) + " is not in 0..4");
  std::int64_t n = 1;
  for (int d = 0; d < rank; ++d) {
    if (shape[d] < 0) throw Error("TensorView::numel: negative extent in " + str());
    if (__builtin_mul_overflow(n, shape[d], &n))
      throw Error("TensorView::numel: the number of elements of " + str() + " overflows int64");
  }
  return n;
}

bool TensorView::is_contiguous() const {
  if (rank < 0 || rank > kMaxRank) return false;
  std::int64_t expected = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (shape[d] == 0) return true;  // empty: any strides
    if (shape[d] != 1 && stride[d] != expected) return false;
    if (__builtin_mul_overflow(expected, shape[d], &expected)) return false;
  }
  return true;
}

// Plain string building, no iostreams: the library is also loaded into processes (Python with
// torch) where an ostringstream built by this object's libstdc++ headers crashed in the locale
// machinery of the process's C++ runtime.
std::string TensorView::str() const {
  std::string s = dtype_name(dtype);
  if (rank < 0 || rank > kMaxRank) return s + "[rank " + std::to_string(rank) + "]";  // never read past the arrays
  s += "[";
  for (int d = 0; d < rank; ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  s += "] stride [";
  for (int d = 0; d < rank; ++d) s += (d ? ", " : "") + std::to_string(stride[d]);
  s += "]";
  return s;
}

namespace {
void set_shape(TensorView& t, std::initializer_list<std::int64_t> shape) {
  if (shape.size() > static_cast<std::size_t>(kMaxRank))
    throw Error("view: rank " + std::to_string(shape.size()) + " exceeds the maximum of 4");
  t.rank = static_cast<int>(shape.size());
  int d = 0;
  for (std::int64_t s : shape) {
    if (s < 0) throw Error("view: negative extent " + std::to_string(s) + " in dimension " + std::to_string(d));
    t.shape[d++] = s;
  }
}
}  // namespace

TensorView view(const void* data, DType dtype, std::initializer_list<std::int64_t> shape) {
  TensorView t;
  t.data = const_cast<void*>(data);
  t.dtype = dtype;
  set_shape(t, shape);
  std::int64_t s = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    t.stride[d] = s;
    if (d > 0 && __builtin_mul_overflow(s, t.shape[d], &s))
      throw Error("view: the strides of " + t.str() + " overflow int64");
  }
  t.numel();  // throws when the number of elements overflows
  return t;
}

TensorView view(const void* data, DType dtype, std::initializer_list<std::int64_t> shape,
                std::initializer_list<std::int64_t> strides) {
  if (strides.size() != shape.size())
    throw Error("view: " + std::to_string(shape.size()) + " extents but " + std::to_string(strides.size()) +
                " strides");
  TensorView t;
  t.data = const_cast<void*>(data);
  t.dtype = dtype;
  set_shape(t, shape);
  int d = 0;
  for (std::int64_t s : strides) t.stride[d++] = s;
  t.numel();  // throws when the number of elements overflows
  return t;
}

TensorView matrix(const void* data, DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t row_stride) {
  return view(data, dtype, {rows, cols}, {row_stride, 1});
}

}  // namespace tachyon

// TensorView helpers: sizes, contiguity, printing, construction.
#include <sstream>

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
  std::int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= shape[d];
  return n;
}

bool TensorView::is_contiguous() const {
  std::int64_t expected = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (shape[d] != 1 && stride[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

std::string TensorView::str() const {
  std::ostringstream s;
  s << dtype_name(dtype) << "[";
  for (int d = 0; d < rank; ++d) s << (d ? ", " : "") << shape[d];
  s << "] stride [";
  for (int d = 0; d < rank; ++d) s << (d ? ", " : "") << stride[d];
  s << "]";
  return s.str();
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
    s *= t.shape[d];
  }
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
  return t;
}

TensorView matrix(const void* data, DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t row_stride) {
  return view(data, dtype, {rows, cols}, {row_stride, 1});
}

}  // namespace tachyon

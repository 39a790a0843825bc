#pragma once
// A small non-owning view of device memory: pointer, dtype, shape and strides
// (in elements), rank 0..4. Every Tachyon operation takes views, scalars and a
// cudaStream_t, so the API binds directly to DLPack.
//
// What every operation checks (tachyon::Error naming the op and the argument, thrown before
// any CUDA call; the family headers add their own rules):
//  - a tensor argument has rank 1..4 (a vector argument 0..4: rank 0 is one element), extents
//    >= 0, and a known dtype; the product of its extents, taken left to right as PyTorch
//    does, fits int64, and so do the bytes it spans, which may not wrap the address space;
//  - size-1 dimensions constrain nothing: their strides are ignored (PyTorch's rule), so
//    (2, 1, 64) with strides (64, 1, 1) is a contiguous tensor of two rows;
//  - an empty tensor (an extent of 0) is valid with any data pointer and strides;
//  - an output may not overlap any other argument, another output or a workspace included,
//    except the in-place pairs its header allows (exactly the same memory and layout);
//  - float scalars (eps, alpha, label_smoothing, ...) must be finite (NaN or +-inf is an
//    Error), within the range each header gives.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace tachyon {

enum class DType : std::uint8_t {
  f32,
  f16,
  bf16,
  // Reserved: accepted by views, rejected by operations that do not list them.
  f8_e4m3,
  f8_e5m2,
  i32,
  i64,
};

std::size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);
bool is_floating(DType dtype);  // f32, f16, bf16 (the dtypes the math kernels take)

inline constexpr int kMaxRank = 4;

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::f32;
  int rank = 0;
  std::int64_t shape[kMaxRank] = {};
  std::int64_t stride[kMaxRank] = {};  // in elements

  // A default-constructed view (no data, rank 0) means "absent" for optional arguments.
  bool present() const { return data != nullptr || rank != 0; }
  // Product of the extents. Throws tachyon::Error when the rank is not in 0..4, an extent is
  // negative or the product overflows int64 (an operation reports those as its own Error).
  std::int64_t numel() const;
  bool empty() const { return numel() == 0; }
  std::int64_t size(int dim) const { return shape[dim < 0 ? dim + rank : dim]; }
  bool is_contiguous() const;  // false for a rank outside 0..4
  std::string str() const;  // "bf16[4096, 50257] stride [50264, 1]"; any view, valid or not
};

// Contiguous (row-major) view. Throws tachyon::Error for a rank above 4, a negative extent,
// or extents whose product (or a stride) overflows int64.
TensorView view(const void* data, DType dtype, std::initializer_list<std::int64_t> shape);
// View with explicit strides, in elements.
TensorView view(const void* data, DType dtype, std::initializer_list<std::int64_t> shape,
                std::initializer_list<std::int64_t> strides);
// 2-D view of `rows` rows of `cols` elements, `row_stride` elements apart.
TensorView matrix(const void* data, DType dtype, std::int64_t rows, std::int64_t cols,
                  std::int64_t row_stride);

}  // namespace tachyon

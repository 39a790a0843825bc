#pragma once
// A small non-owning view of device memory: pointer, dtype, shape and strides
// (in elements), rank 0..4. Every Tachyon operation takes views, scalars and a
// cudaStream_t, so the API binds directly to DLPack.
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
  std::int64_t numel() const;
  bool empty() const { return numel() == 0; }
  std::int64_t size(int dim) const { return shape[dim < 0 ? dim + rank : dim]; }
  bool is_contiguous() const;
  std::string str() const;  // "bf16[4096, 50257] stride [50264, 1]"
};

// Contiguous (row-major) view.
TensorView view(const void* data, DType dtype, std::initializer_list<std::int64_t> shape);
// View with explicit strides, in elements.
TensorView view(const void* data, DType dtype, std::initializer_list<std::int64_t> shape,
                std::initializer_list<std::int64_t> strides);
// 2-D view of `rows` rows of `cols` elements, `row_stride` elements apart.
TensorView matrix(const void* data, DType dtype, std::int64_t rows, std::int64_t cols,
                  std::int64_t row_stride);

}  // namespace tachyon

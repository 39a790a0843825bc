#pragma once
// Host-side test data: values kept as fp64 (exactly the values the device sees, since they
// are rounded to the dtype on creation), device matrices with any stride and a deliberate
// base-pointer offset, poisoning, and downloads back to fp64.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tachyon/tensor.h"

namespace tachyon::test {

// Rounds v to the nearest value representable in dtype.
double round_to(DType dtype, double v);
// One unit in the last place of dtype at magnitude |v| (for tolerances).
double ulp(DType dtype, double v);

std::vector<unsigned char> encode(DType dtype, const std::vector<double>& values);
std::vector<double> decode(DType dtype, const std::vector<unsigned char>& bytes);

// Fresh random values, normal(0, scale), rounded to dtype. Deterministic per seed.
std::vector<double> random_values(DType dtype, std::int64_t n, std::uint64_t seed, double scale = 1.0);

// Poison value written over outputs before a kernel runs: finite and far from any result,
// so an element the kernel forgot to write fails the comparison even where the reference
// is NaN.
inline constexpr unsigned char kPoisonByte = 0x7B;

#define TACHYON_CUDA_OK(expr)                                                              \
  do {                                                                                     \
    cudaError_t e_ = (expr);                                                               \
    ASSERT_EQ(e_, cudaSuccess) << #expr << ": " << cudaGetErrorString(e_);                 \
  } while (0)

// A device allocation holding rows x cols elements `stride` apart, starting `offset`
// elements past a 256-byte aligned base: offset 1 gives a misaligned base pointer. The
// allocation ends exactly at the last element so memcheck sees any overrun.
class DeviceMatrix {
 public:
  DeviceMatrix(DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t stride = -1, int offset = 0);
  ~DeviceMatrix();
  DeviceMatrix(const DeviceMatrix&) = delete;
  DeviceMatrix& operator=(const DeviceMatrix&) = delete;

  void upload(const std::vector<double>& dense);  // rows * cols values, row-major
  void poison();
  std::vector<double> download() const;  // rows * cols values, row-major

  TensorView view() const;    // 2-D (rows, cols) with the row stride
  TensorView vector() const;  // 1-D (cols), for rows == 1
  void* data() const { return data_; }
  DType dtype() const { return dtype_; }
  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  std::int64_t stride() const { return stride_; }

 private:
  DType dtype_;
  std::int64_t rows_, cols_, stride_;
  int offset_;
  char* base_ = nullptr;
  char* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace tachyon::test

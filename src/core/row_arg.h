#pragma once
// A row-major operand as kernels see it: base pointer, row stride in elements, dtype.
// Absent (optional operand not given) when data is null. Plain data for kernel parameters.
#include <cstdint>

#include "tachyon/tensor.h"

namespace tachyon::detail {

struct RowArg {
  const void* data = nullptr;
  std::int64_t stride = 0;
  DType dtype = DType::f32;
};

}  // namespace tachyon::detail

#pragma once
// A position-dependent pattern written on the device, for tensors too large to generate and
// upload from the host (the > 2^31-element tests). The host computes the same value for any
// index, so results can be checked at sampled positions.
#include <cstdint>

#include "tachyon/tensor.h"

namespace tachyon::test {

// Exactly representable in bf16, f16 and f32; sign and magnitude vary with i.
double pattern_value(std::int64_t i);
// Writes pattern_value(i) into the flat, contiguous tensor t.
void fill_pattern(const TensorView& t);

}  // namespace tachyon::test

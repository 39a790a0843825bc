#pragma once
// Comparison of device results with fp64 references. Tolerances are by output dtype and
// never loosened to make a test pass:
//   f32        |got - ref| <= 1e-5 |ref| + abs_floor
//   f16, bf16  |got - ref| <= ulp(ref) + 1e-3 |ref| + abs_floor
// NaN in the reference requires NaN; +-Inf requires the same infinity.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tachyon/tensor.h"

namespace tachyon::test {

struct Tolerance {
  double ulps = 0;       // output-dtype ulps at |ref|
  double rel = 0;        // relative to |ref|
  double abs_floor = 0;  // absolute, for results near zero produced by cancellation
};

Tolerance tolerance_for(DType out, double abs_floor = 0);

::testing::AssertionResult all_close(const std::vector<double>& got, const std::vector<double>& ref, DType out,
                                     const Tolerance& tol, const std::string& what = "");

// Per-element absolute floors (e.g. the magnitude of the terms a reduction summed).
::testing::AssertionResult all_close(const std::vector<double>& got, const std::vector<double>& ref, DType out,
                                     const Tolerance& tol, const std::vector<double>& abs_floors,
                                     const std::string& what);

inline ::testing::AssertionResult all_close(const std::vector<double>& got, const std::vector<double>& ref,
                                            DType out, const std::string& what = "", double abs_floor = 0) {
  return all_close(got, ref, out, tolerance_for(out, abs_floor), what);
}

}  // namespace tachyon::test

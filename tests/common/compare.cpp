#include "common/compare.h"

#include <cmath>
#include <sstream>

#include "common/host_tensor.h"

namespace tachyon::test {

Tolerance tolerance_for(DType out, double abs_floor) {
  if (out == DType::f32) return {0, 1e-5, abs_floor};
  return {1, 1e-3, abs_floor};
}

::testing::AssertionResult all_close(const std::vector<double>& got, const std::vector<double>& ref, DType out,
                                     const Tolerance& tol, const std::string& what) {
  return all_close(got, ref, out, tol, std::vector<double>(), what);
}

::testing::AssertionResult all_close(const std::vector<double>& got, const std::vector<double>& ref, DType out,
                                     const Tolerance& tol, const std::vector<double>& abs_floors,
                                     const std::string& what) {
  if (got.size() != ref.size())
    return ::testing::AssertionFailure() << what << ": size " << got.size() << " vs reference " << ref.size();
  std::size_t bad = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < got.size(); ++i) {
    double g = got[i], r = ref[i];
    bool ok;
    if (std::isnan(r)) ok = std::isnan(g);
    else if (std::isinf(r)) ok = g == r;
    else {
      double t = tol.ulps * ulp(out, r) + tol.rel * std::fabs(r) + tol.abs_floor +
                 (abs_floors.empty() ? 0.0 : abs_floors[i]);
      ok = std::isfinite(g) && std::fabs(g - r) <= t;
    }
    if (!ok) {
      if (bad < 5) first << "\n  [" << i << "] got " << g << " expected " << r;
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << got.size() << " elements differ ("
                                       << dtype_name(out) << ")" << first.str();
}

}  // namespace tachyon::test

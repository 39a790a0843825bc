#pragma once
// What host and device code share: the TACHYON_HD qualifier and integer helpers.
#include <type_traits>

#if defined(__CUDACC__)
#define TACHYON_HD __host__ __device__ __forceinline__
#else
#define TACHYON_HD inline
#endif

namespace tachyon::detail {

// ceil(a / b) for a >= 0, b > 0, in the type a + b has (as the open-coded (a + b - 1) / b).
template <class A, class B>
TACHYON_HD constexpr auto ceil_div(A a, B b) {
  static_assert(std::is_integral_v<A> && std::is_integral_v<B>, "ceil_div takes integers");
  return (a + b - 1) / b;
}

}  // namespace tachyon::detail

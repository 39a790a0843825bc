#include "common/gpu.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace tachyon::test {

bool gpu_available(std::string* why) {
  static int state = -1;
  static std::string reason;
  if (state < 0) {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      reason = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
      cudaGetLastError();
      state = 0;
    } else if (count == 0) {
      reason = "cudaGetDeviceCount returned 0";
      state = 0;
    } else {
      state = 1;
    }
  }
  if (why) *why = reason;
  return state == 1;
}

bool quick_mode() {
  const char* v = std::getenv("TACHYON_TEST_QUICK");
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

bool in_case_slice() {
  static const auto slice = [] {
    int i = 0, n = 1;
    const char* v = std::getenv("TACHYON_TEST_SLICE");
    if (v == nullptr || std::sscanf(v, "%d/%d", &i, &n) != 2 || n < 1 || i < 0 || i >= n) i = 0, n = 1;
    return std::pair{i, n};
  }();
  static long next = 0;
  return next++ % slice.second == slice.first;
}

}  // namespace tachyon::test

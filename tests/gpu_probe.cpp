// Prints one line saying whether the GPU tests ran, and why not: ctest itself only says
// "Skipped". `make test` runs it after ctest.
#include <cuda_runtime_api.h>

#include <cstdio>

#include "common/gpu.h"

int main() {
  std::string why;
  if (!tachyon::test::gpu_available(&why)) {
    std::printf("GPU tests SKIPPED: no CUDA device (%s)\n", why.c_str());
    return 0;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("GPU tests ran on: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount);
  return 0;
}

// A kernel that keeps the GPU busy for a while without touching memory: queued before each
// timed sample (Device::occupy_gpu) so that the host-side cost of the timed call overlaps it.
#include <cuda_runtime.h>

#include "harness.h"

namespace tachyon::bench {
namespace {

__global__ void spin_for(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

}  // namespace

void launch_spin(cudaStream_t stream, unsigned long long ns) {
  spin_for<<<1, 1, 0, stream>>>(ns);
  BENCH_CUDA(cudaGetLastError());
}

}  // namespace tachyon::bench

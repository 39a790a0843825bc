// Empty kernels for the host suite's floor rows (bench_host.cpp): the host cost of a bare
// launch, to compare each op's host cost with.
#include <cuda_runtime.h>

#include "bench_host.h"

namespace tachyon::bench {
namespace {

__global__ void empty_kernel() {}

// The same empty kernel with 512 bytes of parameters (a tachyon args struct of several
// TensorViews is of that order): the cost of copying parameters into the launch.
struct Params512 {
  unsigned long long v[64];
};
__global__ void empty_kernel_512(Params512) {}

}  // namespace

const void* empty_kernel_ptr() { return reinterpret_cast<const void*>(&empty_kernel); }
const void* empty_kernel_512_ptr() { return reinterpret_cast<const void*>(&empty_kernel_512); }
std::size_t empty_kernel_512_param_bytes() { return sizeof(Params512); }

void launch_empty_chevron(cudaStream_t stream) { empty_kernel<<<1, 32, 0, stream>>>(); }

}  // namespace tachyon::bench

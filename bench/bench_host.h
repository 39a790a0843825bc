#pragma once
// tachyon-bench --suite host: the host time per call of every public op at a tiny shape,
// beside the same-run floor of a bare kernel launch (bench_host.cpp). Not part of the
// default suite nor of `all`: it measures host time, not kernel time.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace tachyon::bench {

class Device;

struct HostSuiteOptions {
  std::string op_filter;      // run only this case (empty: all)
  int rounds = 50;            // timed rounds; median and min over them
  std::FILE* json = nullptr;  // results file (JSON lines), or null
  std::string gpu, date, commit;  // already JSON-escaped
};

// Runs the suite, prints its table; returns the number of failed cases.
int run_host_suite(Device& dev, const HostSuiteOptions& opt);
// The suite's case names (for --list), in run order.
std::vector<std::string> host_case_names();

// empty_kernel.cu
const void* empty_kernel_ptr();      // __global__ void k() {}
const void* empty_kernel_512_ptr();  // __global__ void k(Params512) {}
std::size_t empty_kernel_512_param_bytes();
void launch_empty_chevron(cudaStream_t stream);  // k<<<1, 32, 0, stream>>>()

}  // namespace tachyon::bench

#include "core/device_info.h"

#include <cuda_runtime_api.h>

#include <mutex>

#include "core/check.h"

namespace tachyon::detail {

namespace {
constexpr int kMaxDevices = 64;

DeviceInfo query(const char* op, int device) {
  DeviceInfo info;
  info.device = device;
  auto attr = [&](cudaDeviceAttr a) {
    int v = 0;
    TACHYON_CUDA_CHECK(op, cudaDeviceGetAttribute(&v, a, device));
    return v;
  };
  info.cc_major = attr(cudaDevAttrComputeCapabilityMajor);
  info.cc_minor = attr(cudaDevAttrComputeCapabilityMinor);
  info.sm_count = attr(cudaDevAttrMultiProcessorCount);
  info.max_threads_per_sm = attr(cudaDevAttrMaxThreadsPerMultiProcessor);
  info.regs_per_sm = attr(cudaDevAttrMaxRegistersPerMultiprocessor);
  info.smem_per_sm = static_cast<std::size_t>(attr(cudaDevAttrMaxSharedMemoryPerMultiprocessor));
  info.smem_per_block_optin = static_cast<std::size_t>(attr(cudaDevAttrMaxSharedMemoryPerBlockOptin));
  info.l2_bytes = static_cast<std::size_t>(attr(cudaDevAttrL2CacheSize));
  info.hbm_bytes_per_s = 2.0 * 1e3 * attr(cudaDevAttrMemoryClockRate) * attr(cudaDevAttrGlobalMemoryBusWidth) / 8;
  return info;
}
}  // namespace

const DeviceInfo& current_device(const char* op) {
  static DeviceInfo cache[kMaxDevices];
  static std::once_flag once[kMaxDevices];
  int device = 0;
  TACHYON_CUDA_CHECK(op, cudaGetDevice(&device));
  if (device < 0 || device >= kMaxDevices) throw Error(std::string(op) + ": device index out of range");
  std::call_once(once[device], [&] { cache[device] = query(op, device); });
  if (cache[device].sm_count == 0) throw Error(std::string(op) + ": device properties could not be read");
  return cache[device];
}

}  // namespace tachyon::detail

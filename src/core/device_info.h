#pragma once
// The few device properties the launch heuristics need, read once per device with
// cudaDeviceGetAttribute (cheap, no synchronisation) and cached.
#include <cstddef>

namespace tachyon::detail {

struct DeviceInfo {
  int device = 0;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int max_threads_per_sm = 0;
  int regs_per_sm = 0;
  std::size_t smem_per_sm = 0;
  std::size_t smem_per_block_optin = 0;
  std::size_t l2_bytes = 0;
  double hbm_bytes_per_s = 0;  // peak: 2 transfers a memory clock over the bus

  double hbm_per_sm() const { return sm_count > 0 ? hbm_bytes_per_s / sm_count : 0; }

  bool is_hopper() const { return cc_major == 9; }
  // Thread-block clusters and distributed shared memory: sm_90 and later.
  bool has_clusters() const { return cc_major >= 9; }
};

// Properties of the current device. Throws tachyon::Error (naming `op`) when no usable
// device is present.
const DeviceInfo& current_device(const char* op);

}  // namespace tachyon::detail

#pragma once
// The row-kernel test specification shared by the norm, softmax and cross-entropy tests:
// the row lengths and counts of the issues, the element budget that keeps the fp64
// references fast (smaller under compute-sanitizer), and device matrices with a row
// layout (padding, misaligned base pointer).
#include <cstdint>
#include <memory>
#include <vector>

#include "common/gpu.h"
#include "common/host_tensor.h"

namespace tachyon::test {

inline constexpr std::int64_t kRowLengths[] = {1,    7,     192,   256,    760,    1024,   1128,
                                               4096, 4097,  32768, 50257,  131072, 262144, 1048576};
inline constexpr std::int64_t kVocabularies[] = {32000, 50257, 128256, 151936};
inline constexpr std::int64_t kRowCounts[] = {1, 199, 8192};

// M x N bound for the fp64 reference: ~16M elements (1M in quick mode, i.e. under the sanitizer).
inline std::int64_t element_budget() { return quick_mode() ? (1 << 20) : (1 << 24); }
// Single rows always run; multi-row cases beyond the budget are skipped.
inline bool fits(std::int64_t M, std::int64_t N) { return M == 1 || M * N <= element_budget(); }

struct Layout {
  std::int64_t pad = 0;  // row stride = N + pad
  int offset = 0;        // base pointer offset in elements
};

inline std::unique_ptr<DeviceMatrix> upload(DType dt, std::int64_t M, std::int64_t N, const std::vector<double>& v,
                                            const Layout& L = {}) {
  auto m = std::make_unique<DeviceMatrix>(dt, M, N, N + L.pad, L.offset);
  m->upload(v);
  return m;
}

inline std::unique_ptr<DeviceMatrix> output(DType dt, std::int64_t M, std::int64_t N, const Layout& L = {}) {
  return std::make_unique<DeviceMatrix>(dt, M, N, N + L.pad, L.offset);
}

}  // namespace tachyon::test

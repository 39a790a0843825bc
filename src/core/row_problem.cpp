#include "core/row_problem.h"

#include "core/device_info.h"

namespace tachyon::detail {

RowProblem row_problem(const char* op, const Rows& storage, int max_items, bool clusters) {
  const DeviceInfo& dev = current_device(op);
  RowProblem p;
  p.n = storage.cols;
  p.elem_bytes = static_cast<int>(storage.elem_bytes());
  p.frames_vary = !storage.rows_aligned(16);
  p.max_cluster = clusters && dev.has_clusters() ? 16 : 1;
  p.max_items = max_items;
  return p;
}

}  // namespace tachyon::detail

#pragma once
// The row layout problem of an op's (M, N) storage operand on the current device: the input
// of choose_row_config / choose_stream_config, built in one place for every row family.
#include "core/row_config.h"
#include "core/validate.h"

namespace tachyon::detail {

// n, element size, whether row starts vary in 16-byte phase, and the largest cluster the
// device allows (1 when `clusters` is false or the device has none). max_items: the kernel's.
RowProblem row_problem(const char* op, const Rows& storage, int max_items = kMaxRowItems, bool clusters = true);

}  // namespace tachyon::detail

// The strongest published or baseline peer at a shape: the figure to be ahead of.
#include <string>

#include "harness.h"

namespace tachyon::bench {

namespace {
struct PeerRow {
  const char* op;
  const char* dtype;
  long long m, n;
  const char* peer;
  double value;
};
const PeerRow kPeers[] = {
#include "peers_data.inc"
};
}  // namespace

Peer lookup_peer(const std::string& op, DType dtype, const Shape& shape) {
  Peer best;
  if (shape.dims.size() < 2) return best;
  long long n = shape.dims[1];
  if (op.rfind("gemm", 0) == 0 && shape.dims.size() == 3) n = shape.dims[1] * 100000 + shape.dims[2];
  for (const PeerRow& r : kPeers) {
    if (op != r.op || std::string(dtype_name(dtype)) != r.dtype || r.n != n) continue;
    if (op.rfind("gemm", 0) == 0 && r.m != shape.dims[0]) continue;
    if (r.value > best.value) best = {r.peer, r.value};
  }
  return best;
}

}  // namespace tachyon::bench

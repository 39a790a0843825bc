#pragma once
// tachyon-bench harness. Every kernel family plugs in here (bench_*.cpp register their
// cases) instead of growing its own timer. Protocol (../shared/targets.md):
//  - CUDA events around each launch, >= 10 warm-up launches, median of >= 50;
//  - input sets rotated so that the bytes touched per set times the number of sets exceed
//    3x L2: small shapes are not served from cache;
//  - the limits measured in the same process: device-to-device copy bandwidth (1 GiB
//    cudaMemcpyAsync, read + write counted) and, for GEMMs, cuBLASLt;
//  - every result printed as a table row and written as one JSON line.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tachyon/tensor.h"

namespace tachyon::bench {

struct Shape {
  std::vector<std::int64_t> dims;
  std::string str() const;  // "32768x4096"
  static Shape parse(const std::string& s);
};

struct Result {
  std::string op, impl = "tachyon", dtype;
  Shape shape;
  double ms = 0;
  double bytes = 0;  // fewest bytes a correct kernel must move (targets.md)
  double flops = 0;
  // Filled by the harness from the same-run limits:
  double gbps = 0, tflops = 0, limit = 0, ratio = 0;
  std::string peer;  // e.g. "quack 2900" or "cublas 690"
  double peer_value = 0;
  std::string note;
};

class Device;

// One benchmark case: a family ("elementwise"), an op, the dtypes and shapes it runs by
// default, and a function that times one (dtype, shape) and returns its Result.
struct Case {
  std::string family, op;
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  std::function<Result(Device&, DType, const Shape&)> run;
  bool in_default_suite = true;
  // Which (dtype, shape) pairs of the lists apply (all when empty).
  std::function<bool(DType, const Shape&)> applies;
};

std::vector<Case>& registry();

void launch_spin(cudaStream_t stream, unsigned long long ns);  // occupy.cu

// Quack's memory-bound sweep (../shared/targets.md): (32768, 256 ... 65536), (16384, 131072),
// (8192, 262144).
std::vector<Shape> quack_sweep();
struct Register {
  explicit Register(Case c) { registry().push_back(std::move(c)); }
};

// Device buffers with rotation: `sets` copies of each tensor, filled with random values.
class Buffers {
 public:
  ~Buffers();
  // Allocates `sets` buffers of `bytes` each, filled with random data of dtype (never zeros).
  void* add(std::size_t bytes, DType dtype, int sets, float scale = 1.f);
  void* get(void* first, int set) const;  // the set-th copy of the tensor `first`
 private:
  struct Entry { std::vector<void*> copies; };
  std::vector<Entry> entries_;
};

class Device {
 public:
  Device();
  ~Device();
  cudaStream_t stream() const { return stream_; }
  const std::string& name() const { return name_; }
  int sm_count() const { return sm_count_; }
  std::size_t l2_bytes() const { return l2_bytes_; }
  int warmup = 10, iters = 50;

  // Sets needed so that `bytes_per_set` x sets >= 3 x L2.
  int rotation_sets(double bytes_per_set) const;
  // Median time in ms of launch(set), rotating set over `sets`.
  double median_ms(const std::function<void(int set)>& launch, int sets);
  // Device-to-device copy bandwidth in GB/s (bytes read + written), measured once per run.
  double copy_gbps();
  // Call right before recording a timed sample's start event: queues a kernel that spins
  // for 40 us without touching memory, so that the GPU is still busy while the host records
  // the start event and makes the timed call. The sample then measures the device time of
  // the call, not the host-side gap before its kernel starts (triton.testing.do_bench, which
  // timed the peers of ../shared/baselines, gets the same effect from the L2 flush it queues
  // before each sample; a spin leaves L2 as the input rotation left it, with no dirty lines
  // to write back during the timed kernel).
  void occupy_gpu();

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  std::string name_;
  int sm_count_ = 0;
  std::size_t l2_bytes_ = 0;
  double copy_gbps_ = 0;
};

// Throws a std::runtime_error naming the call when a CUDA call fails.
void check(cudaError_t err, const char* what);
#define BENCH_CUDA(expr) ::tachyon::bench::check((expr), #expr)

// Published / baseline peer figure for (op, dtype, shape), GB/s or TFLOP/s; 0 when none.
struct Peer { std::string name; double value = 0; };
Peer lookup_peer(const std::string& op, DType dtype, const Shape& shape);

}  // namespace tachyon::bench

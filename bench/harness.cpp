#include "harness.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace tachyon::bench {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

std::string Shape::str() const {
  std::string s;
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

Shape Shape::parse(const std::string& s) {
  Shape sh;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, 'x')) sh.dims.push_back(std::stoll(part));
  return sh;
}

std::vector<Shape> quack_sweep() {
  std::vector<Shape> s;
  for (std::int64_t n = 256; n <= 65536; n *= 2) s.push_back({{32768, n}});
  s.push_back({{16384, 131072}});
  s.push_back({{8192, 262144}});
  return s;
}

std::vector<Case>& registry() {
  static std::vector<Case> cases;
  return cases;
}

// ---- buffers ---------------------------------------------------------------------------

Buffers::~Buffers() {
  for (auto& e : entries_)
    for (void* p : e.copies) cudaFree(p);
}

void* Buffers::add(std::size_t bytes, DType dtype, int sets, float scale) {
  Entry e;
  // One random host pattern, uploaded to every copy (values matter for speed only through
  // being non-zero and finite; rotation defeats the cache).
  std::size_t es = dtype_size(dtype);
  std::size_t n = bytes / es;
  std::size_t pattern_n = std::min<std::size_t>(n, 1 << 20);
  std::vector<unsigned char> host(pattern_n * es);
  std::mt19937 gen(1234 + static_cast<unsigned>(entries_.size()));
  std::normal_distribution<float> dist(0.f, scale);
  for (std::size_t i = 0; i < pattern_n; ++i) {
    float v = dist(gen);
    unsigned char* p = host.data() + i * es;
    if (dtype == DType::f32) *reinterpret_cast<float*>(p) = v;
    else if (dtype == DType::f16) *reinterpret_cast<__half*>(p) = __float2half(v);
    else if (dtype == DType::bf16) *reinterpret_cast<__nv_bfloat16*>(p) = __float2bfloat16(v);
    else if (dtype == DType::i32) *reinterpret_cast<std::int32_t*>(p) = static_cast<std::int32_t>(i % 1000);
    else if (dtype == DType::i64) *reinterpret_cast<std::int64_t*>(p) = static_cast<std::int64_t>(i % 1000);
  }
  for (int s = 0; s < sets; ++s) {
    void* d = nullptr;
    BENCH_CUDA(cudaMalloc(&d, std::max<std::size_t>(bytes, 16)));
    // Upload the pattern once, then double it on the device: GiB-sized buffers fill in ms.
    std::size_t filled = std::min(host.size(), bytes);
    BENCH_CUDA(cudaMemcpy(d, host.data(), filled, cudaMemcpyHostToDevice));
    while (filled < bytes) {
      std::size_t n = std::min(filled, bytes - filled);
      BENCH_CUDA(cudaMemcpy(static_cast<char*>(d) + filled, d, n, cudaMemcpyDeviceToDevice));
      filled += n;
    }
    e.copies.push_back(d);
  }
  entries_.push_back(std::move(e));
  return entries_.back().copies.front();
}

void* Buffers::get(void* first, int set) const {
  for (const auto& e : entries_)
    if (e.copies.front() == first) return e.copies[static_cast<std::size_t>(set) % e.copies.size()];
  throw std::runtime_error("Buffers::get: unknown buffer");
}

// ---- device and timing -------------------------------------------------------------------

Device::Device() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0)
    throw std::runtime_error(std::string("no CUDA device found (") +
                             (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices") + ")");
  BENCH_CUDA(cudaSetDevice(0));
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  name_ = prop.name;
  sm_count_ = prop.multiProcessorCount;
  l2_bytes_ = static_cast<std::size_t>(prop.l2CacheSize);
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  BENCH_CUDA(cudaEventCreate(&start_));
  BENCH_CUDA(cudaEventCreate(&stop_));
}

Device::~Device() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
  cudaStreamDestroy(stream_);
}

int Device::rotation_sets(double bytes_per_set) const {
  if (bytes_per_set <= 0) return 1;
  return std::max(1, static_cast<int>(std::ceil(3.0 * static_cast<double>(l2_bytes_) / bytes_per_set)));
}

double Device::median_ms(const std::function<void(int)>& launch, int sets) {
  for (int i = 0; i < warmup; ++i) launch(i % sets);
  BENCH_CUDA(cudaStreamSynchronize(stream_));
  BENCH_CUDA(cudaGetLastError());
  std::vector<float> times;
  times.reserve(static_cast<std::size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    occupy_gpu();
    BENCH_CUDA(cudaEventRecord(start_, stream_));
    launch((warmup + i) % sets);
    BENCH_CUDA(cudaEventRecord(stop_, stream_));
    BENCH_CUDA(cudaEventSynchronize(stop_));
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
    times.push_back(ms);
  }
  BENCH_CUDA(cudaGetLastError());
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void Device::occupy_gpu() { launch_spin(stream_, 40000); }

double Device::copy_gbps() {
  if (copy_gbps_ > 0) return copy_gbps_;
  const std::size_t bytes = std::size_t{1} << 30;
  void *src = nullptr, *dst = nullptr;
  BENCH_CUDA(cudaMalloc(&src, bytes));
  BENCH_CUDA(cudaMalloc(&dst, bytes));
  BENCH_CUDA(cudaMemsetAsync(src, 0x3c, bytes, stream_));
  double ms = median_ms([&](int) { BENCH_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_)); }, 1);
  BENCH_CUDA(cudaFree(src));
  BENCH_CUDA(cudaFree(dst));
  copy_gbps_ = 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
  return copy_gbps_;
}

}  // namespace tachyon::bench

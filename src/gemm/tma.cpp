#include "gemm/tma.h"

#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>

#include "core/check.h"
#include "tachyon/error.h"

namespace tachyon::detail::gemm {

namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_fn(const char* op) {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static cudaError_t err = cudaSuccess;
  static cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSuccess;
  static std::once_flag once;
  std::call_once(once, [] {
    void* p = nullptr;
    err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &status);
    if (err == cudaSuccess && status == cudaDriverEntryPointSuccess) fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  });
  if (!fn)
    throw Error(std::string(op) + ": cuTensorMapEncodeTiled is not available from the driver (" +
                (err != cudaSuccess ? cudaGetErrorString(err) : "entry point not found") + ")");
  return fn;
}

CUtensorMapDataType tma_dtype(DType d) {
  switch (d) {
    case DType::f32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case DType::f16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    default: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  }
}

bool same(const TmaMatrix& a, const TmaMatrix& b) {
  return a.base == b.base && a.dtype == b.dtype && a.rows == b.rows && a.cols == b.cols &&
         a.row_stride == b.row_stride && a.box_rows == b.box_rows && a.box_cols == b.box_cols;
}

// A small cache: GEMM call sites reuse a handful of (pointer, shape) combinations (weights,
// activation buffers), so 64 entries with round-robin replacement keep every hot map.
constexpr int kCacheSize = 64;
struct Entry {
  TmaMatrix key;
  CUtensorMap map;
  bool used = false;
};
std::mutex cache_mutex;
Entry cache[kCacheSize];
int next_slot = 0;
std::atomic<std::uint64_t> encodes{0};

}  // namespace

bool tma_compatible(const void* base, DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t row_stride) {
  const auto es = static_cast<std::int64_t>(dtype_size(dtype));
  if (reinterpret_cast<std::uintptr_t>(base) % 16 != 0) return false;
  if (rows > 1 && (row_stride * es) % 16 != 0) return false;
  if (rows > 1 && row_stride * es >= (std::int64_t{1} << 40)) return false;
  return rows > 0 && cols > 0 && rows < (std::int64_t{1} << 32) && cols < (std::int64_t{1} << 32);
}

CUtensorMap tma_matrix_map(const char* op, const TmaMatrix& m) {
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    for (const Entry& e : cache)
      if (e.used && same(e.key, m)) return e.map;
  }
  const auto es = static_cast<std::int64_t>(dtype_size(m.dtype));
  // A single row has no meaningful stride; TMA still wants one that is a multiple of 16 bytes.
  std::int64_t stride_bytes = m.row_stride * es;
  if (m.rows <= 1) stride_bytes = (m.cols * es + 15) / 16 * 16;
  cuuint64_t dims[2] = {static_cast<cuuint64_t>(m.cols), static_cast<cuuint64_t>(m.rows)};
  cuuint64_t strides[1] = {static_cast<cuuint64_t>(stride_bytes)};
  cuuint32_t box[2] = {static_cast<cuuint32_t>(m.box_cols), static_cast<cuuint32_t>(m.box_rows)};
  cuuint32_t elem_strides[2] = {1, 1};
  CUtensorMap map;
  std::memset(&map, 0, sizeof map);
  // A driver call on a thread that has made no runtime call yet finds no current context
  // (torch's autograd thread when a GEMM backward is its first CUDA work): a runtime call first
  // binds the device's primary context to the thread (a no-op where one is current). Only on a
  // cache miss, so the hot path makes no extra call.
  TACHYON_CUDA_CHECK(op, cudaFree(nullptr));
  const CUresult r =
      encode_fn(op)(&map, tma_dtype(m.dtype), 2, const_cast<void*>(m.base), dims, strides, box, elem_strides,
                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw Error(std::string(op) + ": cuTensorMapEncodeTiled failed with CUresult " + std::to_string(static_cast<int>(r)) +
                " for a " + dtype_name(m.dtype) + " matrix " + std::to_string(m.rows) + "x" + std::to_string(m.cols) +
                " (row stride " + std::to_string(m.row_stride) + ", box " + std::to_string(m.box_rows) + "x" +
                std::to_string(m.box_cols) + ")");
  encodes.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(cache_mutex);
  Entry& e = cache[next_slot];
  next_slot = (next_slot + 1) % kCacheSize;
  e.key = m;
  e.map = map;
  e.used = true;
  return map;
}

std::uint64_t tma_encode_count() { return encodes.load(std::memory_order_relaxed); }

}  // namespace tachyon::detail::gemm

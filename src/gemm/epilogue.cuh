#pragma once
// GEMM epilogue: D = act(alpha * acc + beta * C + bias), converted to the output dtype.
//
// Two ways out of the registers:
//  - TMA store (the fast path): each consumer warpgroup writes its 64 x block_n accumulator
//    tile into shared memory in 64-row x 128-byte chunks, laid out with the same 128-byte
//    swizzle as the operands (so the eight rows a warp writes at once fall in different
//    banks), and one thread issues a TMA store per chunk. Two chunk buffers per warpgroup
//    alternate: the store of one drains while the next is filled, and the last stores of a
//    tile drain while the next tile's mainloop runs. Tails in M and N are clipped by TMA.
//  - Direct stores: bounds-checked stores from registers through (row, col) strides, for an
//    output TMA cannot describe (unaligned row stride or base) and for the swapped problem,
//    whose output is the transpose of the kernel's tile.
// C (beta != 0) and the bias are read with plain loads; both are small next to A and B. On
// the TMA-store path the bias of a tile is loaded when the tile starts (load_tile_bias).
#include <cuda/ptx>

#include <cstdint>

#include "core/dtype.cuh"
#include "elementwise/ops.cuh"
#include "gemm/gemm_params.h"
#include "gemm/pipeline.cuh"

namespace tachyon::detail::gemm {

// The epilogue math runs as passes over a group of values held in registers (static
// indices, so nothing goes to local memory): scale, then + beta C, then + bias, then the
// activation, each pass behind one uniform branch. Per-element switches would multiply the
// code of the fully unrolled epilogue (and its compile time) for nothing.

// sigmoid(t) = 1 / (1 + 2^(-t log2 e)) in exactly two MUFU instructions. The ftz forms of
// ex2.approx / rcp.approx are single instructions; the non-ftz ones (what __expf and
// __fdividef compile to without -use_fast_math) wrap each MUFU in a denormal range check
// and rescale, which tripled the instructions per element of the bias + silu epilogue.
// Accuracy is that of __expf / __fdividef (~2 ulp): ftz only changes results whose
// magnitude is below 2^-126. Limits: t -> -inf gives rcp(inf) = 0, t -> +inf gives 1.
__device__ __forceinline__ float ex2_approx_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float rcp_approx_ftz(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float fast_sigmoid(float t) {
  constexpr float kNegLog2e = -1.4426950408889634f;
  return rcp_approx_ftz(1.f + ex2_approx_ftz(kNegLog2e * t));
}

// gelu-tanh as x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): the form of
// elementwise/ops.cuh, without the cancellation of 1 + tanh(u) for negative x.
__device__ __forceinline__ float gelu_tanh_fast(float v) {
  constexpr float kTwoSqrt2OverPi = 1.5957691216057308f;
  return v * fast_sigmoid(kTwoSqrt2OverPi * fmaf(0.044715f * v, v * v, v));
}

// The activation as a template parameter: the TMA-store epilogue picks it once per tile, so
// the silu loop carries no gelu polynomial and no relu select (predicated-off instructions
// still take issue slots).
template <int kAct>
__device__ __forceinline__ float activate(float v) {
  if constexpr (kAct == kActRelu) return ReluOp{}(v);
  else if constexpr (kAct == kActSilu) return v * fast_sigmoid(v);
  else if constexpr (kAct == kActGeluTanh) return gelu_tanh_fast(v);
  else return v;
}

// The same with the activation a runtime value, for the direct-store epilogue (swapped or
// unaligned outputs: small problems, where code size matters more than issue slots).
__device__ __forceinline__ float activate(float v, int act) {
  constexpr float kTwoSqrt2OverPi = 1.5957691216057308f;
  const float t = act == kActGeluTanh ? kTwoSqrt2OverPi * fmaf(0.044715f * v, v * v, v) : v;
  const float gated = v * fast_sigmoid(t);
  return act == kActRelu ? ReluOp{}(v) : gated;
}

__device__ __forceinline__ float bias16_to_float(unsigned short bits, bool is_bf16) {
  return is_bf16 ? __uint_as_float(static_cast<unsigned>(bits) << 16) : __half2float(__ushort_as_half(bits));
}

// Where value i of a thread's group sits: the accumulator layout of wgmma (wgmma.cuh) with
// i = 4 j + 2 h + x gives row r0 + 8 h and column c0 + 8 j + x.
__device__ __forceinline__ int frag_row(int r0, int i) { return r0 + 8 * ((i >> 1) & 1); }
__device__ __forceinline__ int frag_col(int c0, int i) { return c0 + 8 * (i >> 2) + (i & 1); }

// v += beta C for a group of G values at (frag_row(r0, i), frag_col(c0, i)); loads outside
// the output are skipped (those results are dropped).
template <class OutT, int G>
__device__ __forceinline__ void add_beta_c(float (&v)[G], int r0, int c0, const EpilogueParams& e) {
  const OutT* c = static_cast<const OutT*>(e.c);
#pragma unroll
  for (int i = 0; i < G; ++i) {
    const int row = frag_row(r0, i), col = frag_col(c0, i);
    const bool in = row < e.m && col < e.n;
    const std::int64_t off = static_cast<std::int64_t>(in ? row : 0) * e.c_row_stride +
                             static_cast<std::int64_t>(in ? col : 0) * e.c_col_stride;
    const float cv = in ? to_float(c[off]) : 0.f;
    v[i] = fmaf(e.beta, cv, v[i]);
  }
}

// The whole epilogue math for a group of G values of one thread, value i at
// (frag_row(r0, i), frag_col(c0, i)) of the kernel's output, with per-element bias loads
// (per row when the problem is swapped). Used by the direct-store path.
template <class OutT, int G>
__device__ __forceinline__ void epilogue_math(float (&v)[G], int r0, int c0, const EpilogueParams& e) {
#pragma unroll
  for (int i = 0; i < G; ++i) v[i] *= e.alpha;
  if (e.beta != 0.f) add_beta_c<OutT, G>(v, r0, c0, e);
  if (e.bias != nullptr) {
    if (e.bias_dtype == static_cast<int>(DType::f32)) {
      const float* b = static_cast<const float*>(e.bias);
#pragma unroll
      for (int i = 0; i < G; ++i) {
        const int idx = e.bias_on_rows ? frag_row(r0, i) : frag_col(c0, i);
        const bool in = idx < (e.bias_on_rows ? e.m : e.n);
        v[i] += in ? b[idx] : 0.f;
      }
    } else {
      const auto* b = static_cast<const unsigned short*>(e.bias);
      const bool is_bf16 = e.bias_dtype == static_cast<int>(DType::bf16);
#pragma unroll
      for (int i = 0; i < G; ++i) {
        const int idx = e.bias_on_rows ? frag_row(r0, i) : frag_col(c0, i);
        const bool in = idx < (e.bias_on_rows ? e.m : e.n);
        v[i] += in ? bias16_to_float(b[idx], is_bf16) : 0.f;
      }
    }
  }
  if (e.activation != kActNone) {
#pragma unroll
    for (int i = 0; i < G; ++i) v[i] = activate(v[i], e.activation);
  }
}

// Direct stores of one warpgroup's 64 x BN tile whose top-left output element is (row0, col0),
// in groups of 4 fragments (16 values) to bound the registers the passes hold.
template <class OutT, int BN>
__device__ __forceinline__ void epilogue_direct(float (&acc)[BN / 2], const EpilogueParams& e, int row0,
                                                int col0, int tid) {
  constexpr int kGroup = 16;
  tid = opaque_tid() % 128;
  const int r_base = row0 + 16 * (tid / 32) + (tid % 32) / 4;
  const int c_base = col0 + 2 * (tid % 4);
  OutT* d = static_cast<OutT*>(e.d);
  float (&rest)[BN / 2] = acc;  // rolled loop over groups, shifting the accumulators (see below)
#pragma unroll 1
  for (int g = 0; g < BN / 2; g += kGroup) {
    float v[kGroup];
#pragma unroll
    for (int i = 0; i < kGroup; ++i) v[i] = rest[i];
#pragma unroll
    for (int i = 0; i + kGroup < BN / 2; ++i) rest[i] = rest[i + kGroup];
    const int c0 = c_base + 2 * g;  // group g starts at fragment j = g / 4
    epilogue_math<OutT, kGroup>(v, r_base, c0, e);
#pragma unroll
    for (int i = 0; i < kGroup; ++i) {
      const int row = frag_row(r_base, i), col = frag_col(c0, i);
      if (row < e.m && col < e.n)
        d[static_cast<std::int64_t>(row) * e.d_row_stride + static_cast<std::int64_t>(col) * e.d_col_stride] =
            from_float<OutT>(v[i]);
    }
  }
}

// ---- The TMA-store epilogue ---------------------------------------------------------------
//
// The bias of a tile's BN columns lives in registers, spread over the warp: slot t of lane l
// holds columns 64 t + 8 (l / 4) + 2 (l % 4) + {0, 1}. The thread that needs column
// 8 j + 2 (l % 4) + x reads it from lane 4 (j % 8) + l % 4, slot j / 8, with a shuffle.
// The consumer loads the slots when it starts a tile (load_tile_bias), so the global round
// trip runs under the mainloop instead of stalling the epilogue (both consumer warpgroups
// at once, with the tensor cores idle) at every tile.
template <int BN>
struct TileBias {
  static constexpr int kSlots = BN / 64;
  float slot[kSlots][2];
};

// The bias slots of the tile whose first column is col0 (zero past N). Loads only, no use:
// 16-bit values are kept as raw bits (zero-extended) and converted by tile_bias_to_float in
// the epilogue, so no instruction waits for the loads before the mainloop starts.
template <int BN>
__device__ __forceinline__ void load_tile_bias(const EpilogueParams& e, int col0, int lane, TileBias<BN>& tb) {
  const int first = col0 + 8 * (lane / 4) + 2 * (lane % 4);
  if (e.bias_dtype == static_cast<int>(DType::f32)) {
    const float* b = static_cast<const float*>(e.bias);
#pragma unroll
    for (int t = 0; t < TileBias<BN>::kSlots; ++t)
#pragma unroll
      for (int x = 0; x < 2; ++x) {
        const int col = first + 64 * t + x;
        tb.slot[t][x] = col < e.n ? b[col] : 0.f;
      }
  } else {
    const auto* b = static_cast<const unsigned short*>(e.bias);
#pragma unroll
    for (int t = 0; t < TileBias<BN>::kSlots; ++t)
#pragma unroll
      for (int x = 0; x < 2; ++x) {
        const int col = first + 64 * t + x;
        tb.slot[t][x] = __uint_as_float(col < e.n ? static_cast<unsigned>(b[col]) : 0u);
      }
  }
}

// Turns the raw 16-bit bias bits of load_tile_bias into floats (f32 bias: nothing to do).
template <int BN>
__device__ __forceinline__ void tile_bias_to_float(const EpilogueParams& e, TileBias<BN>& tb) {
  if (e.bias == nullptr || e.bias_dtype == static_cast<int>(DType::f32)) return;
  const bool is_bf16 = e.bias_dtype == static_cast<int>(DType::bf16);
#pragma unroll
  for (int t = 0; t < TileBias<BN>::kSlots; ++t)
#pragma unroll
    for (int x = 0; x < 2; ++x)
      tb.slot[t][x] = bias16_to_float(static_cast<unsigned short>(__float_as_uint(tb.slot[t][x])), is_bf16);
}

// Two adjacent outputs packed for one shared-memory store.
template <class OutT>
struct Pair;
template <>
struct Pair<float> {
  using type = float2;
  __device__ static float2 make(float a, float b) { return make_float2(a, b); }
};
template <>
struct Pair<bf16> {
  using type = __nv_bfloat162;
  __device__ static __nv_bfloat162 make(float a, float b) { return __floats2bfloat162_rn(a, b); }
};
template <>
struct Pair<half> {
  using type = __half2;
  __device__ static __half2 make(float a, float b) { return __floats2half2_rn(a, b); }
};

// One group of 16 values (4 fragments) of a chunk: alpha, beta C, the bias from the slots,
// the activation. Without beta the scale and the bias are one FMA per element.
// `frag0` is the group's first fragment within the current bias slot (j % 8).
template <class OutT, int kAct>
__device__ __forceinline__ void tma_group_math(float (&v)[16], const EpilogueParams& e, const float (&slot0)[2],
                                               int frag0, int lane, int r0, int c0) {
  float b[16];
  if (e.bias != nullptr) {
    // Values 4 jj + 2 h + x: rows h = 0, 1 share the column, so 8 shuffles serve 16 values.
#pragma unroll
    for (int i = 0; i < 16; ++i) b[i] = __shfl_sync(0xffffffffu, slot0[i & 1], 4 * (frag0 + i / 4) + lane % 4);
  } else {
#pragma unroll
    for (int i = 0; i < 16; ++i) b[i] = 0.f;
  }
  if (e.beta == 0.f) {
#pragma unroll
    for (int i = 0; i < 16; ++i) v[i] = fmaf(e.alpha, v[i], b[i]);
  } else {
#pragma unroll
    for (int i = 0; i < 16; ++i) v[i] *= e.alpha;
    add_beta_c<OutT, 16>(v, r0, c0, e);
#pragma unroll
    for (int i = 0; i < 16; ++i) v[i] += b[i];
  }
  if constexpr (kAct != kActNone) {
#pragma unroll
    for (int i = 0; i < 16; ++i) v[i] = activate<kAct>(v[i]);
  }
}

// The chunk loop of the TMA-store epilogue for one activation. `bufs` is this warpgroup's
// 2 x 8 KiB (1024-byte aligned), `barrier_id` its named barrier.
template <class OutT, int BN, int kAct>
__device__ __forceinline__ void tma_store_chunks(float (&acc)[BN / 2], const EpilogueParams& e,
                                                 const CUtensorMap* tmap_d, unsigned char* bufs, int row0, int col0,
                                                 TileBias<BN>& tb, std::uint32_t barrier_id) {
  constexpr int kEs = static_cast<int>(sizeof(OutT));
  constexpr int kChunkCols = 128 / kEs;  // one 128-byte swizzle row per output row
  constexpr int kChunks = BN / kChunkCols;
  constexpr int kVals = kChunkCols / 2;  // values per thread per chunk: 64 rows x kChunkCols / 128
  constexpr int kSlots = TileBias<BN>::kSlots;
  constexpr int kChunksPerSlot = 64 / kChunkCols;
  constexpr int kFragsPerChunk = kChunkCols / 8;
  // The chunk loop is not unrolled: an unrolled epilogue is tens of KiB of straight-line code
  // per tile, fetched through the instruction cache every tile (measured: bias + silu cost 25%
  // at 8192^3). Instead every chunk reads the first kVals accumulators and then shifts the rest
  // down by kVals (register moves), so all indices stay static and nothing goes to local memory.
  // The bias slots shift the same way as chunks consume them.
  // (The accumulators are consumed: the next tile's first wgmma overwrites them.)
  float (&rest)[BN / 2] = acc;
#pragma unroll 1
  for (int c = 0; c < kChunks; ++c) {
    // Thread coordinates re-derived per chunk from an opaque %tid: hoisted out of the loop,
    // the 16 swizzled store offsets and 8 shuffle lanes they feed would stay live next to
    // the 128 accumulators and spill.
    const int tid = opaque_tid() % 128;
    const int lane = tid % 32;
    const int r_local = 16 * (tid / 32) + (tid % 32) / 4;  // plus 8 h
    const int c_local = 2 * (tid % 4);                     // plus 8 jj + x
    float v[kVals];
#pragma unroll
    for (int g = 0; g < kVals; g += 16) {
      float(&vg)[16] = *reinterpret_cast<float(*)[16]>(v + g);
#pragma unroll
      for (int i = 0; i < 16; ++i) vg[i] = rest[g + i];  // i = 4 jj + 2 h + x
      const int frag0 = (c % kChunksPerSlot) * kFragsPerChunk + g / 4;
      tma_group_math<OutT, kAct>(vg, e, tb.slot[0], frag0, lane, row0 + r_local,
                                 col0 + c * kChunkCols + c_local + 2 * g);
    }
#pragma unroll
    for (int i = 0; i + kVals < BN / 2; ++i) rest[i] = rest[i + kVals];
    if (c % kChunksPerSlot == kChunksPerSlot - 1) {
#pragma unroll
      for (int t = 0; t + 1 < kSlots; ++t) {
        tb.slot[t][0] = tb.slot[t + 1][0];
        tb.slot[t][1] = tb.slot[t + 1][1];
      }
    }
    unsigned char* buf = bufs + (c & 1) * 8192;
    // The store issued from this buffer two chunks ago must have finished reading it.
    if (tid == 0) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<1>{});
    named_barrier_sync(barrier_id, 128);
#pragma unroll
    for (int i = 0; i < kVals; i += 2) {
      const int r = r_local + 8 * ((i >> 1) & 1);
      const int byte = (8 * (i >> 2) + c_local) * kEs;
      const int offset = r * 128 + ((((byte >> 4) ^ (r & 7)) << 4) | (byte & 15));
      *reinterpret_cast<typename Pair<OutT>::type*>(buf + offset) = Pair<OutT>::make(v[i], v[i + 1]);
    }
    // Make the generic-proxy writes visible to the TMA engine, then let one thread store.
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
    named_barrier_sync(barrier_id, 128);
    if (tid == 0) {
      const int col = col0 + c * kChunkCols;
      if (row0 < e.m && col < e.n) {
        const std::int32_t coords[2] = {col, row0};
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, tmap_d, coords, buf);
      }
      cuda::ptx::cp_async_bulk_commit_group();
    }
  }
}

// Shared memory through TMA stores: each consumer warpgroup writes its 64 x BN tile whose
// top-left output element is (row0, col0). `tb` holds the tile's bias when e.bias is set
// (never per row here: swapped problems store directly). The activation is dispatched once
// per tile, on a uniform value.
template <class OutT, int BN>
__device__ __forceinline__ void epilogue_tma_store(float (&acc)[BN / 2], const EpilogueParams& e,
                                                   const CUtensorMap* tmap_d, unsigned char* bufs, int row0,
                                                   int col0, TileBias<BN>& tb, std::uint32_t barrier_id) {
  tile_bias_to_float<BN>(e, tb);
  switch (e.activation) {
    case kActSilu: return tma_store_chunks<OutT, BN, kActSilu>(acc, e, tmap_d, bufs, row0, col0, tb, barrier_id);
    case kActGeluTanh:
      return tma_store_chunks<OutT, BN, kActGeluTanh>(acc, e, tmap_d, bufs, row0, col0, tb, barrier_id);
    case kActRelu: return tma_store_chunks<OutT, BN, kActRelu>(acc, e, tmap_d, bufs, row0, col0, tb, barrier_id);
    default: return tma_store_chunks<OutT, BN, kActNone>(acc, e, tmap_d, bufs, row0, col0, tb, barrier_id);
  }
}

}  // namespace tachyon::detail::gemm

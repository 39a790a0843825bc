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
#include "core/fast_math.cuh"
#include "core/named_barrier.cuh"
#include "elementwise/ops.cuh"
#include "gemm/gemm_config.h"
#include "gemm/gemm_params.h"
#include "gemm/pipeline.cuh"
#include "gemm/wgmma.cuh"

namespace tachyon::detail::gemm {

// The epilogue math runs as passes over a group of values held in registers (static
// indices, so nothing goes to local memory): scale, then + beta C, then + bias, then the
// activation, each pass behind one uniform branch. Per-element switches would multiply the
// code of the fully unrolled epilogue (and its compile time) for nothing.

// The activations with core's two-MUFU sigmoid (fast_math.cuh): the elementwise ops' IEEE
// reciprocal (their form then) tripled the instructions per element of this compute-bound
// epilogue.
// The activation as a template parameter: the TMA-store epilogue picks it once per tile, so
// the silu loop carries no gelu polynomial and no relu select (predicated-off instructions
// still take issue slots).
template <int kAct>
__device__ __forceinline__ float activate(float v) {
  if constexpr (kAct == kActRelu) return ReluOp{}(v);
  else if constexpr (kAct == kActSilu) return v * fast_sigmoid(v);
  else if constexpr (kAct == kActGeluTanh) return v * fast_sigmoid(gelu_two_u(v));
  else return v;
}

// The same with the activation a runtime value, for the direct-store epilogue (swapped or
// unaligned outputs: small problems, where code size matters more than issue slots).
__device__ __forceinline__ float activate(float v, int act) {
  const float t = act == kActGeluTanh ? gelu_two_u(v) : v;
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
// The output tensor map's box is kStoreRows = 16 rows x 128 bytes: one warp's rows of a
// chunk. A chunk buffer holds the warpgroup's 64 rows as four such boxes, 2 KiB apart
// (1024-byte aligned, so the 128-byte swizzle of row r is r % 8 in each box as in the whole
// buffer).
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

// kAct value of the general chunk loop: the activation is read from the parameters per
// group (the loop runs only with beta != 0, where C's loads dominate anyway).
inline constexpr int kActRuntime = -1;

// The bias of a group of 16 values (4 fragments, frag0 = the first one's index within the
// slot, j % 8) from the tile's slots. Values 4 jj + 2 h + x: rows h = 0, 1 share the
// column, so 8 shuffles serve 16 values.
__device__ __forceinline__ void group_bias(float (&b)[16], const float (&slot)[2], int frag0, int lane) {
#pragma unroll
  for (int i = 0; i < 16; ++i) b[i] = __shfl_sync(0xffffffffu, slot[i & 1], 4 * (frag0 + i / 4) + lane % 4);
}

// One group of 16 values (4 fragments) of a chunk in the general loop: alpha, beta C, the
// bias from the slots, the activation.
template <class OutT, int kAct>
__device__ __forceinline__ void tma_group_math(float (&v)[16], const EpilogueParams& e, const float (&slot0)[2],
                                               int frag0, int lane, int r0, int c0) {
  float b[16];
  if (e.bias != nullptr) {
    group_bias(b, slot0, frag0, lane);
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
  if constexpr (kAct == kActRuntime) {
    if (e.activation != kActNone) {
#pragma unroll
      for (int i = 0; i < 16; ++i) v[i] = activate(v[i], e.activation);
    }
  } else if constexpr (kAct != kActNone) {
#pragma unroll
    for (int i = 0; i < 16; ++i) v[i] = activate<kAct>(v[i]);
  }
}

// Byte `byte` (< 128) of row `row` in a buffer of 128-byte rows under the 128-byte swizzle:
// its 16-byte segment XORed with row % 8 (what the TMA store's tensor map expects).
__device__ __forceinline__ int swizzle128(int byte, int row) { return (((byte >> 4) ^ (row & 7)) << 4) | (byte & 15); }

// The general chunk loop of the TMA-store epilogue (beta != 0: C is read per element).
// `bufs` is this warpgroup's 2 x 8 KiB (1024-byte aligned), `barrier_id` its named barrier.
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
      const int offset = r * 128 + swizzle128(byte, r);
      *reinterpret_cast<typename Pair<OutT>::type*>(buf + offset) = Pair<OutT>::make(v[i], v[i + 1]);
    }
    // Make the generic-proxy writes visible to the TMA engine, then let one thread store.
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
    named_barrier_sync(barrier_id, 128);
    if (tid == 0) {
      const int col = col0 + c * kChunkCols;
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const std::int32_t coords[2] = {col, row0 + kStoreRows * w};
        if (coords[1] < e.m && col < e.n)
          cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, tmap_d, coords,
                                          buf + w * kStoreRows * 128);
      }
      cuda::ptx::cp_async_bulk_commit_group();
    }
  }
}

// stmatrix.x4 (CCCL 13.0 has no cuda::ptx wrapper): four 8 x 8 matrices of 16-bit values.
// Lane l gives the shared address of row l % 8 of matrix l / 8; register q of lane l holds
// the pair at row l / 4, columns 2 (l % 4) + {0, 1} of matrix q — exactly the pair a wgmma
// accumulator fragment gives the lane, so packed fragments go out with no shuffling.
__device__ __forceinline__ void stmatrix_x4(std::uint32_t addr, std::uint32_t r0, std::uint32_t r1, std::uint32_t r2,
                                            std::uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}

template <class OutT>
__device__ __forceinline__ std::uint32_t pack_pair(float a, float b) {
  const typename Pair<OutT>::type p = Pair<OutT>::make(a, b);
  return *reinterpret_cast<const std::uint32_t*>(&p);
}

// The chunk loop without C (beta == 0, every plain and bias / activation GEMM), unrolled:
// each chunk reads its accumulators by static index, so the general loop's register shifts
// (96 moves per chunk) disappear, and 16-bit outputs leave through 4 stmatrix per chunk
// instead of 16 32-bit stores. The epilogue is time the tensor cores sit idle (measured:
// skipping it entirely made 8192^3 3.5 % faster, 4096^3 6 %), so its instruction count is
// what matters. No beta code in the unrolled body keeps it a few hundred instructions (a
// fully unrolled general loop was tens of KiB and cost 25 % through the instruction cache).
template <class OutT, int BN, int kAct, bool kAffine>
__device__ __forceinline__ void tma_store_chunks_unrolled(float (&acc)[BN / 2], const EpilogueParams& e,
                                                          const CUtensorMap* tmap_d, unsigned char* bufs, int row0,
                                                          int col0, const TileBias<BN>& tb, std::uint32_t barrier_id) {
  constexpr int kEs = static_cast<int>(sizeof(OutT));
  constexpr int kChunkCols = 128 / kEs;
  constexpr int kChunks = BN / kChunkCols;
  constexpr int kVals = kChunkCols / 2;
  constexpr int kChunksPerSlot = 64 / kChunkCols;
  constexpr int kFragsPerChunk = kChunkCols / 8;
  const int tid = opaque_tid() % 128;
  const int lane = tid % 32;
  // This lane's offset in a chunk buffer (128-byte swizzled rows, chunk ^ (row % 8)).
  //  16-bit: stmatrix q of a chunk covers fragments 2q, 2q + 1 (16 columns) of the warp's 16
  //  rows; lane l addresses matrix m = l / 8 (rows + 8 (m % 2), fragment 2q + m / 2), row
  //  s = l % 8. Its 16-byte segment is (2q + m / 2) ^ s = 2q ^ (m / 2 ^ s): q enters as a XOR.
  //  32-bit: the thread's own float2 stores (two values of a fragment row).
  std::uint32_t lane_off;
  if constexpr (kEs == 2) {
    const int m = lane / 8, s = lane % 8;
    lane_off = static_cast<std::uint32_t>((16 * (tid / 32) + 8 * (m & 1) + s) * 128 + (((m >> 1) ^ s) << 4));
  } else {
    lane_off = static_cast<std::uint32_t>((16 * (tid / 32) + lane / 4) * 128);
  }
  const std::uint32_t buf_base = smem_addr(bufs);
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    float v[kVals];
#pragma unroll
    for (int i = 0; i < kVals; ++i) v[i] = acc[c * kVals + i];
    // No branch on the bias inside: without one the slots are zero (TileBias{}), and a
    // join of two paths would cost a move per value.
    if constexpr (kAffine) {
#pragma unroll
      for (int g = 0; g < kVals; g += 16) {
        float b[16];
        group_bias(b, tb.slot[c / kChunksPerSlot], (c % kChunksPerSlot) * kFragsPerChunk + g / 4, lane);
#pragma unroll
        for (int i = 0; i < 16; ++i) v[g + i] = fmaf(e.alpha, v[g + i], b[i]);
      }
    }
    if constexpr (kAct != kActNone) {
#pragma unroll
      for (int i = 0; i < kVals; ++i) v[i] = activate<kAct>(v[i]);
    }
    // Each warp fills and stores its own 16 rows of the chunk: only warp-level syncs, no
    // warpgroup barrier (two per chunk cost the whole warpgroup the slowest warp's time).
    const std::uint32_t buf = buf_base + static_cast<std::uint32_t>(c & 1) * 8192u;
    // The store this warp issued from this buffer two chunks ago must have finished reading it.
    if (lane == 0) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<1>{});
    __syncwarp();
    if constexpr (kEs == 2) {
#pragma unroll
      for (int q = 0; q < kVals / 8; ++q)
        stmatrix_x4(buf + (lane_off ^ static_cast<std::uint32_t>(q << 5)), pack_pair<OutT>(v[8 * q], v[8 * q + 1]),
                    pack_pair<OutT>(v[8 * q + 2], v[8 * q + 3]), pack_pair<OutT>(v[8 * q + 4], v[8 * q + 5]),
                    pack_pair<OutT>(v[8 * q + 6], v[8 * q + 7]));
    } else {
      const int c_local = 2 * (tid % 4);
#pragma unroll
      for (int i = 0; i < kVals; i += 2) {
        const int r8 = 8 * ((i >> 1) & 1);  // + 8 h rows
        const int byte = (8 * (i >> 2) + c_local) * kEs;
        const std::uint32_t off = lane_off + static_cast<std::uint32_t>(r8 * 128 + swizzle128(byte, lane / 4 + r8));
        asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(buf + off), "f"(v[i]), "f"(v[i + 1]) : "memory");
      }
    }
    // Make the generic-proxy writes visible to the TMA engine, then let one lane store.
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
    __syncwarp();
    if (lane == 0) {
      const int warp = tid / 32;
      const std::int32_t coords[2] = {col0 + c * kChunkCols, row0 + kStoreRows * warp};
      if (coords[1] < e.m && coords[0] < e.n)
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, tmap_d, coords,
                                        bufs + (c & 1) * 8192 + warp * kStoreRows * 128);
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
  if (e.beta != 0.f)
    return tma_store_chunks<OutT, BN, kActRuntime>(acc, e, tmap_d, bufs, row0, col0, tb, barrier_id);
  // The plain GEMM (alpha 1, no bias, no activation) converts and stores, nothing else; an
  // activation comes with the affine pass (a bias is the usual companion).
  switch (e.activation) {
    case kActSilu:
      return tma_store_chunks_unrolled<OutT, BN, kActSilu, true>(acc, e, tmap_d, bufs, row0, col0, tb, barrier_id);
    case kActGeluTanh:
      return tma_store_chunks_unrolled<OutT, BN, kActGeluTanh, true>(acc, e, tmap_d, bufs, row0, col0, tb,
                                                                     barrier_id);
    case kActRelu:
      return tma_store_chunks_unrolled<OutT, BN, kActRelu, true>(acc, e, tmap_d, bufs, row0, col0, tb, barrier_id);
    default:
      if (e.alpha != 1.f || e.bias != nullptr)
        return tma_store_chunks_unrolled<OutT, BN, kActNone, true>(acc, e, tmap_d, bufs, row0, col0, tb, barrier_id);
      return tma_store_chunks_unrolled<OutT, BN, kActNone, false>(acc, e, tmap_d, bufs, row0, col0, tb, barrier_id);
  }
}

}  // namespace tachyon::detail::gemm

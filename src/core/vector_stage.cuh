#pragma once
// Row-invariant vector operands (a norm's weight and bias) staged in shared memory.
//
// Every row of a norm multiplies by the same weight, and a thread touches the same columns
// of it in every row it handles. Loading a thread's weight chunks from global memory in the
// output loop put one L2 round trip per chunk on the path after the row reduction (eight in
// a row for a bf16 thread of 8 chunks), which per-thread register tiles cannot hide without
// holding the whole slice in registers. Instead each thread copies its chunks into its own
// shared-memory slots with cp.async (LDGSTS: no registers held) at kernel start, under the
// row's loads and reduction, and reads them back with one LDS per chunk.
//
// Slots are thread-private (chunk k of thread t at (k * blockDim.x + t) * chunk_bytes:
// consecutive 16-byte slots across a warp, conflict-free), so the copying thread is the only
// reader and waits for its own copies (no barrier). A chunk that is not whole inside the row
// or whose source is not 16-byte aligned (a row frame that shifts the weight's columns) is
// not staged: it is read straight from global memory, as before. When to stage, and how many
// slots (a window reused along the row where the whole tile does not fit), is the host's
// choice: forward_stage_bytes / forward_stage_window (norm/norm_params.h, the reasons in norm_plan.cpp).
#include <cuda_pipeline.h>

#include <type_traits>

#include "core/row_access.cuh"
#include "core/vec.cuh"

namespace tachyon::detail {

// cp.async.ca: allocates in L1, so the CTAs of an SM that stage the same weight columns
// hit L1 after the first (the 16-byte form of __pipeline_memcpy_async is .cg, L2 only: with
// it every CTA refetched the weight from L2 and short rows ran 3x slower). Inline PTX: CCCL's
// cuda::ptx wraps the bulk copies (cp.async.bulk) but not the per-thread cp.async.
// dst: a shared-window address (__cvta_generic_to_shared).
template <int kBytes>
__device__ __forceinline__ void copy_async_l1(unsigned dst, const void* src_global) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(dst), "l"(src_global), "n"(kBytes) : "memory");
}

// kMaybeWide (typed 16-bit kernels that opt in): the operand may also be fp32 (an fp32 weight
// beside 16-bit rows, as autocast gives), a run-time choice instead of a kernel more.
// kHoist: the slot's shared-window address is converted once, at make(), not at every copy
// (in a cluster-capable kernel each conversion re-derives the CTA's window: ~10 instructions a
// copy). For the one-CTA whole builds (docs/perf/norm.md#forward-design); where the register
// tile is bounded, the register it holds cost ptxas spills.
// kFixed (Staging, row_arg.h): the host stages this kernel's operand always (forward_staging),
// so the unstaged path's reads and address work are not compiled in (they issued under
// predicates a chunk).
template <class T, bool kTyped, int V, bool kMaybeWide = false, bool kHoist = false,
          Staging kFixed = Staging::per_launch>
struct VectorStage {
  const RowArg* arg;    // the operand in global memory (data null: absent)
  unsigned char* mine;  // this thread's slot of chunk 0; chunk k is k * step bytes further
  unsigned mine_shared; // kHoist: `mine` as a shared-window address
  int step;             // blockDim.x * chunk_bytes
  bool staged_;         // this row's chunks of the operand are (being) copied to shared memory
  __device__ bool staged() const { return kFixed == Staging::always || staged_; }

  static_assert(!kMaybeWide || (kTyped && sizeof(T) == 2), "an fp32 operand beside typed 16-bit rows");
  static constexpr bool kTypedRows = kTyped;
  static constexpr int kTypedChunk = V * static_cast<int>(sizeof(T));
  __device__ static int chunk_bytes(const RowArg& a) {
    return kTyped && !kMaybeWide ? kTypedChunk : V * dtype_bytes(a.dtype);
  }
  __device__ bool wide() const { return kMaybeWide && arg->dtype == DType::f32; }

  // `off`: the row's frame offset. The operand's chunks are 16-byte aligned for every chunk
  // of the row or for none (the frame shifts all columns alike), so one flag per row.
  __device__ static VectorStage make(const RowArg& a, unsigned char* region, bool enabled, int off) {
    const int bytes = chunk_bytes(a);
    const bool aligned = is_aligned(static_cast<const unsigned char*>(a.data) - off * (bytes / V), bytes < 16 ? 8 : 16);
    unsigned char* mine = region + threadIdx.x * bytes;
    return {&a, mine, kHoist ? static_cast<unsigned>(__cvta_generic_to_shared(mine)) : 0u,
            static_cast<int>(blockDim.x) * bytes, kFixed == Staging::always || (enabled && a.data != nullptr && aligned)};
  }
  // Bytes of shared memory the operand takes (for the next operand's region).
  __device__ std::size_t region_bytes(int items) const {
    return arg->data ? static_cast<std::size_t>(items) * step : 0;
  }
  __device__ const unsigned char* source(int c0) const {
    return static_cast<const unsigned char*>(arg->data) + static_cast<std::ptrdiff_t>(c0) * (chunk_bytes(*arg) / V);
  }

  // Starts the copy of the chunk at columns [c0, c0 + V) into slot k (the chunk's index in
  // the thread's tile, or its place in a window of slots reused along the row); completes at
  // wait(). Chunks that hang over a row end are not copied (load() reads them from global memory).
  // kInside: the caller knows the chunk lies inside the row (a full tile), so no test.
  template <bool kInside = false>
  __device__ void copy(int k, int c0, int n) const {
    if (!staged() || (!kInside && !chunk_inside(c0, V, n))) return;
    // cp.async moves 4, 8 or 16 bytes: a chunk of a 16-bit operand of an fp32 row is 8.
    const int bytes = chunk_bytes(*arg);
    const unsigned dst = kHoist ? mine_shared + static_cast<unsigned>(k * step)
                                : static_cast<unsigned>(__cvta_generic_to_shared(mine + k * step));
    if (bytes < 16) {
      copy_async_l1<8>(dst, source(c0));
    } else {
      for (int i = 0; i < bytes; i += 16) copy_async_l1<16>(dst + i, source(c0) + i);
    }
  }
  __device__ static void commit() { __pipeline_commit(); }
  __device__ static void wait() { __pipeline_wait_prior(0); }
  // Waits until at most `pending` of the committed copy groups are still in flight.
  __device__ static void wait_prior(int pending) { __pipeline_wait_prior(pending); }

  // Chunk k as stored, for the typed fast paths: the chunk lies inside the row and the
  // operand (present) is 16-byte aligned there, so whole 16-byte accesses (two for an fp32
  // operand of a 16-bit row). kWide: wide(), known to the caller, which branches once outside
  // its chunk loop. The raw words, not converted floats: selecting between the two sources
  // element by element cost two PRMTs a word.
  template <bool kWide>
  __device__ auto whole_chunk(int k, int c0) const {
    static_assert(kTyped && V * sizeof(T) == 16 && (!kWide || kMaybeWide), "typed 16-byte chunks");
    using W = std::conditional_t<kWide, float, T>;
    Vec<W, V> w;
    uint4* words = reinterpret_cast<uint4*>(&w);
    constexpr int kWords = static_cast<int>(sizeof(w) / 16);
    if constexpr (kWide) {
      // fp32 chunks (two words) through one pointer to either space: branched, ptxas spilled.
      const uint4* src = staged() ? reinterpret_cast<const uint4*>(mine + k * step)
                                : reinterpret_cast<const uint4*>(static_cast<const W*>(arg->data) + c0);
#pragma unroll
      for (int i = 0; i < kWords; ++i) words[i] = staged() ? src[i] : load_word<Cache::readonly>(src + i);
    } else if (staged()) {
      // Branched, not through one pointer: a pointer to either space made the slot's read a
      // generic load that re-derived the CTA's shared window a chunk (~20 instructions a chunk
      // and operand); here an LDS.
      const uint4* slot = reinterpret_cast<const uint4*>(mine + k * step);
#pragma unroll
      for (int i = 0; i < kWords; ++i) words[i] = slot[i];
    } else {
      const uint4* src = reinterpret_cast<const uint4*>(static_cast<const W*>(arg->data) + c0);
#pragma unroll
      for (int i = 0; i < kWords; ++i) words[i] = load_word<Cache::readonly>(src + i);
    }
    return w;
  }

  // Where whole_at reads chunk k of the thread's tile: base + k * stride bytes, the thread's
  // slots when staged, else its columns of the operand (chunk k of a team of s threads lies s
  // chunks after chunk k - 1; frame 0). Chosen once a row: whole_chunk's choice a chunk
  // recomputed both addresses and read through generic loads (~15 instructions a chunk).
  struct Source {
    const unsigned char* base;
    long long stride;
  };
  template <bool kWide>
  __device__ Source whole_source(int rank, int team_size) const {
    using W = std::conditional_t<kWide, float, T>;
    if (staged()) return {mine, step};
    return {reinterpret_cast<const unsigned char*>(static_cast<const W*>(arg->data) + static_cast<long long>(rank) * V),
            static_cast<long long>(team_size) * V * static_cast<long long>(sizeof(W))};
  }
  template <bool kWide>
  __device__ static auto whole_at(const Source& s, int k) {
    using W = std::conditional_t<kWide, float, T>;
    Vec<W, V> w;
    const uint4* src = reinterpret_cast<const uint4*>(s.base + k * s.stride);
#pragma unroll
    for (int i = 0; i < static_cast<int>(sizeof(w) / 16); ++i) reinterpret_cast<uint4*>(&w)[i] = src[i];
    return w;
  }

  // Chunk k as fp32 (`absent` everywhere when the operand is absent).
  __device__ void load(int k, int c0, int n, float (&out)[V], float absent) const {
    using IO = OperandIO<T, kTyped>;
    if (arg->data == nullptr) {
#pragma unroll
      for (int e = 0; e < V; ++e) out[e] = absent;
    } else if (wide()) {
      if (staged() && chunk_inside(c0, V, n)) load_chunk_f<Cache::normal>(reinterpret_cast<const float*>(mine + k * step), 0, V, out, 0.f);
      else load_chunk_f<Cache::readonly>(static_cast<const float*>(arg->data), c0, n, out, 0.f);
    } else if (staged() && chunk_inside(c0, V, n)) {
      IO::template load<Cache::normal, V>(mine + k * step, arg->dtype, 0, V, out, 0.f);
    } else if constexpr (kTyped) {
      load_global(static_cast<const T*>(arg->data), c0, n, out);
    } else {
      IO::template load<Cache::readonly, V>(arg->data, arg->dtype, c0, n, out, 0.f);
    }
  }
  // Typed rows' unstaged operand chunks: off the 16-byte grid where the row's frame shifts them
  // (odd n), so read inline (load_chunk's kInlineInside). An fp32 weight beside 16-bit rows keeps
  // the call: -6 % inline (H100 LayerNorm bf16 4095, docs/perf/norm.md#odd-rows).
  template <class E>
  __device__ static void load_global(const E* data, int c0, int n, float (&out)[V]) {
    Vec<E, V> raw;
    load_chunk<Cache::readonly, true>(data, c0, n, raw, from_float<E>(0.f));
    to_floats(raw, out);
  }
};

}  // namespace tachyon::detail

#pragma once
// Vector access to rows: the one place that turns "V consecutive elements of a row
// starting at column c0" into 16-byte loads and stores, with a masked element-by-element
// path for the chunks that hang over either end of the row or are not aligned.
//
// Every kernel of every family reads and writes memory through these helpers: a chunk is
// V = 16 / sizeof(T) elements of the row's main dtype T, so one full, aligned chunk is one
// 128-bit LDG/STG. Other tensors of the row (weight, residual, an fp32 output) are accessed
// at the same columns in their own dtype: V of them may be 8, 16 or 32 bytes, split into
// as many 16-byte accesses as needed, and fall back to scalar accesses when misaligned.
#include <cstdint>
#include <type_traits>

#include "core/dtype.cuh"

namespace tachyon::detail {

template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

template <class T, int V>
__device__ __forceinline__ Vec<T, V> zero_vec() {
  Vec<T, V> z;
#pragma unroll
  for (int e = 0; e < V; ++e) z.v[e] = from_float<T>(0.f);
  return z;
}

// Elements per 16-byte chunk for a dtype.
template <class T>
inline constexpr int kVec = 16 / static_cast<int>(sizeof(T));

// How a kernel expects to use the data it touches. `stream` = read once / written once:
// use the evict-first cache hints so the data does not push reusable lines (weights) out.
// `readonly` = loads of data no thread of the kernel writes (a norm's weight and bias;
// the entry points reject outputs that overlap them): the non-coherent path, which also
// tells the compiler that the kernel's stores cannot change it, so it may issue these loads
// ahead of earlier stores instead of one round trip after each.
enum class Cache { normal, stream, readonly };

template <int kBytes>
struct RawWord;
template <>
struct RawWord<2> { using type = unsigned short; };
template <>
struct RawWord<4> { using type = unsigned int; };
template <>
struct RawWord<8> { using type = uint2; };
template <>
struct RawWord<16> { using type = uint4; };

template <Cache kCache, class W>
__device__ __forceinline__ W load_word(const W* p) {
  if constexpr (kCache == Cache::stream && (sizeof(W) == 16 || sizeof(W) == 8 || sizeof(W) == 4)) {
    return __ldcs(p);
  } else if constexpr (kCache == Cache::readonly && (sizeof(W) == 16 || sizeof(W) == 8 || sizeof(W) == 4)) {
    return __ldg(p);
  } else {
    return *p;
  }
}

// One 16-bit element under the cache policy, zero-extended. load_chunk's kInlineInside path
// reads its end halfwords with it: a generic load there cost the 16-bit 8-chunk typed forward
// two registers, i.e. three warps an SM (docs/perf/norm.md#odd-rows).
template <Cache kCache>
__device__ __forceinline__ unsigned load_half(const unsigned short* p) {
  if constexpr (kCache == Cache::stream) return __ldcs(p);
  else if constexpr (kCache == Cache::readonly) return __ldg(p);
  else return *p;
}

template <Cache kCache, class W>
__device__ __forceinline__ void store_word(W* p, const W& w) {
  if constexpr (kCache == Cache::stream && (sizeof(W) == 16 || sizeof(W) == 8 || sizeof(W) == 4)) {
    __stcs(p, w);
  } else {
    *p = w;
  }
}

__device__ __forceinline__ bool is_aligned(const void* p, int bytes) {
  return (reinterpret_cast<std::uintptr_t>(p) & static_cast<std::uintptr_t>(bytes - 1)) == 0;
}

// kWords 32-bit words from q, which lies kMis (0, 4, 8 or 12) bytes past a 16-byte boundary,
// each step in the widest access its address allows: a 32-byte chunk 4 bytes off the grid in
// four loads (4, 8, 16, 4 bytes), not eight. Each load is an L1 request whatever its width, and
// an operand read off the grid was bound by them (docs/perf/norm.md#odd-rows).
template <Cache kCache, int kMis, int kWords>
__device__ __forceinline__ void load_words_from(const unsigned* q, unsigned* w) {
  if constexpr (kWords >= 4 && kMis == 0) {
    const uint4 v = load_word<kCache>(reinterpret_cast<const uint4*>(q));
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
    load_words_from<kCache, 0, kWords - 4>(q + 4, w + 4);
  } else if constexpr (kWords >= 2 && kMis % 8 == 0) {
    const uint2 v = load_word<kCache>(reinterpret_cast<const uint2*>(q));
    w[0] = v.x, w[1] = v.y;
    load_words_from<kCache, (kMis + 8) % 16, kWords - 2>(q + 2, w + 2);
  } else if constexpr (kWords >= 1) {
    w[0] = load_word<kCache>(q);
    load_words_from<kCache, (kMis + 4) % 16, kWords - 1>(q + 1, w + 1);
  }
}

// The element-by-element path for chunks that hang over a row end or are misaligned. Kept
// out of line: at most two chunks of a row take it, and inlined it multiplied every
// kernel's code by the number of chunks (the instruction cache then throttled the 16-bit
// kernels, which have 8 elements a chunk).
template <class T, int V, class I>
__device__ __noinline__ Vec<T, V> load_masked(const T* row, I c0, I n, T fill) {
  Vec<T, V> out;
#pragma unroll
  for (int e = 0; e < V; ++e) out.v[e] = (c0 + e >= 0 && c0 + e < n) ? row[c0 + e] : fill;
  return out;
}

template <class T, int V, class I>
__device__ __noinline__ void store_masked(T* row, I c0, I n, Vec<T, V> in) {
#pragma unroll
  for (int e = 0; e < V; ++e)
    if (c0 + e >= 0 && c0 + e < n) row[c0 + e] = in.v[e];
}

// Columns [c0, c0 + V) of a row of n elements. Columns outside [0, n) read as `fill` and
// are never touched in memory.
// I is the column index type: int for row kernels (N < 2^31), int64 for flat elementwise.
// kInlineInside: a chunk inside [0, n) but off the 16-byte grid is read inline in aligned words
// (32 bytes: load_words_from; 16 bytes: 32-bit words, or at a 2-byte offset a halfword, V / 2 - 1
// words and a halfword, merged in pairs), not through load_masked's call, which waits for its
// loads: for an operand read in another tensor's frame (a weight beside misaligned rows), whose
// inner chunks are all off the grid. The row's two ends still take load_masked.
template <Cache kCache = Cache::normal, bool kInlineInside = false, class T, int V, class I>
__device__ __forceinline__ void load_chunk(const T* row, I c0, I n, Vec<T, V>& out, T fill) {
  constexpr int kBytes = V * static_cast<int>(sizeof(T));
  constexpr int kWord = kBytes < 16 ? kBytes : 16;
  using W = typename RawWord<kWord>::type;
  const T* p = row + c0;
  if constexpr (kInlineInside) {
    static_assert(kBytes % 16 == 0 && (sizeof(T) == 2 || sizeof(T) == 4), "16-byte chunks of 16- or 32-bit elements");
    unsigned* w = reinterpret_cast<unsigned*>(&out);
    if (!(c0 >= 0 && c0 + V <= n)) {
      out = load_masked<T, V, I>(row, c0, n, fill);
    } else if (is_aligned(p, 16)) {
#pragma unroll
      for (int i = 0; i < kBytes / 16; ++i)
        reinterpret_cast<uint4*>(&out)[i] = load_word<kCache>(reinterpret_cast<const uint4*>(p) + i);
    } else if (sizeof(T) == 2 && !is_aligned(p, 4)) {
      // Word i of the 2-byte-offset chunk holds elements 2i + 1 and 2i + 2.
      const unsigned short* h = reinterpret_cast<const unsigned short*>(p);
      const unsigned* q = reinterpret_cast<const unsigned*>(h + 1);
      unsigned lo = load_half<kCache>(h);
#pragma unroll
      for (int i = 0; i < V / 2; ++i) {
        const unsigned next = i + 1 < V / 2 ? load_word<kCache>(q + i) : load_half<kCache>(h + V - 1);
        w[i] = lo | next << 16;
        lo = next >> 16;
      }
    } else if constexpr (kBytes == 32) {
      // An fp32 chunk beside 16-bit rows: the frame puts it 4, 8 or 12 bytes off the grid.
      const unsigned* q = reinterpret_cast<const unsigned*>(p);
      const unsigned mis = reinterpret_cast<std::uintptr_t>(p) & 12;
      if (mis == 8) load_words_from<kCache, 8, 8>(q, w);
      else if (mis == 4) load_words_from<kCache, 4, 8>(q, w);
      else load_words_from<kCache, 12, 8>(q, w);
    } else {
#pragma unroll
      for (int i = 0; i < kBytes / 4; ++i) w[i] = load_word<kCache>(reinterpret_cast<const unsigned*>(p) + i);
    }
  } else if (c0 >= 0 && c0 + V <= n && is_aligned(p, kWord)) {
    W* dst = reinterpret_cast<W*>(&out);
#pragma unroll
    for (int i = 0; i < kBytes / kWord; ++i) dst[i] = load_word<kCache>(reinterpret_cast<const W*>(p) + i);
  } else {
    out = load_masked<T, V, I>(row, c0, n, fill);
  }
}

template <Cache kCache = Cache::normal, class T, int V, class I>
__device__ __forceinline__ void store_chunk(T* row, I c0, I n, const Vec<T, V>& in) {
  constexpr int kBytes = V * static_cast<int>(sizeof(T));
  constexpr int kWord = kBytes < 16 ? kBytes : 16;
  using W = typename RawWord<kWord>::type;
  T* p = row + c0;
  if (c0 >= 0 && c0 + V <= n && is_aligned(p, kWord)) {
    const W* src = reinterpret_cast<const W*>(&in);
#pragma unroll
    for (int i = 0; i < kBytes / kWord; ++i) store_word<kCache>(reinterpret_cast<W*>(p) + i, src[i]);
  } else {
    store_masked<T, V, I>(row, c0, n, in);
  }
}

// A chunk known to lie inside the row and to be 16-byte aligned (the kernels built for rows
// of whole chunks, chosen on the host): one 16-byte access, no edge or alignment tests, and
// no out-of-line masked path whose call would pin the caller's registers.
// Loads through the chunk's 32-bit words: assigning a Vec of 16-bit elements made the compiler
// merge halfwords (PRMT) out of one staging register, serialising the row's loads.
template <Cache kCache, class T, int V>
__device__ __forceinline__ void load_whole(const T* p, Vec<T, V>& out) {
  using W = typename RawWord<V * static_cast<int>(sizeof(T))>::type;  // 16 bytes, or a narrower operand's part
  reinterpret_cast<W&>(out) = load_word<kCache>(reinterpret_cast<const W*>(p));
}
template <Cache kCache, class T>
__device__ __forceinline__ void store_whole(T* p, const Vec<T, kVec<T>>& v) {
  store_word<kCache>(reinterpret_cast<uint4*>(p), reinterpret_cast<const uint4&>(v));
}

// A chunk of a row kept in its frame (chunk_col with the row's frame_offset): a chunk inside
// [0, n) is 16-byte aligned by construction, one access without an alignment test; only the
// row's two ends take a masked path (columns outside read as `fill`, never written).
// `inline_ends`: that path inline (below), not load_masked, whose call returns its loads' values
// and so waits for them: a memory latency a row in the warps that hold the row's ends, which the
// pipelined loop's next-row loads were to hide. It costs registers, so a tile picks it per chunk.
// `head`: whether this chunk may be the frame's first (c0 < 0); false drops the head's tests
// (both are compile-time constants where the caller unrolls its chunks).
template <Cache kCache, class T, int V>
__device__ __forceinline__ void load_framed(const T* row, int c0, int n, Vec<T, V>& out, T fill,
                                            bool head = true, bool inline_ends = false) {
  if (c0 >= 0 && c0 + V <= n) {
    load_whole<kCache>(row + c0, out);
  } else if (!inline_ends) {
    out = load_masked<T, V, int>(row, c0, n, fill);
  } else if constexpr (sizeof(T) == 4) {
    // 32-bit elements: each loads straight into its register.
#pragma unroll
    for (int e = 0; e < V; ++e) out.v[e] = (!head || c0 + e >= 0) && c0 + e < n ? row[c0 + e] : fill;
  } else {
    // 16-bit: each 32-bit word loads straight into its register, whole where both halves are in
    // the row, its one in-row half zero-extended where only one is (fill must be 0): no merge, so
    // no wait here. A word whose in-row half is the high one (the row's first element at an odd
    // column of the frame) then holds it in its low half: lift_frame_head moves it at use.
    static_assert(sizeof(T) == 2 && V % 2 == 0, "16-bit chunks of whole words");
    unsigned* w = reinterpret_cast<unsigned*>(&out);
    const unsigned short* h = reinterpret_cast<const unsigned short*>(row);
#pragma unroll
    for (int i = 0; i < V / 2; ++i) {
      const int a = c0 + 2 * i;
      unsigned v = 0;
      if ((!head || a >= 0) && a + 1 < n) v = load_word<kCache>(reinterpret_cast<const unsigned*>(h + a));
      else if (!head) { if (a < n) v = load_half<kCache>(h + a); }
      else if (a >= -1 && a < n) v = load_half<kCache>(h + (a < 0 ? a + 1 : a));
      w[i] = v;
    }
  }
}
// The frame's first chunk (c0 < 0) of a 16-bit row whose first element sits at an odd column of
// the frame: load_framed left that element in the low half of its word; this moves it up (at
// use, where the wait for its load is due anyway). No-op for any other chunk.
template <class T, int V>
__device__ __forceinline__ void lift_frame_head(Vec<T, V>& v, int c0) {
  if constexpr (sizeof(T) == 2) {
    if (c0 < 0 && (c0 & 1)) {
      unsigned* w = reinterpret_cast<unsigned*>(&v);
      const int at = (-c0 - 1) / 2;  // the word of element -c0 - 1 + 1 = the row's first
#pragma unroll
      for (int i = 0; i < V / 2; ++i)
        if (i == at) w[i] <<= 16;
    }
  }
}
template <Cache kCache, class T>
__device__ __forceinline__ void store_framed(T* row, int c0, int n, const Vec<T, kVec<T>>& v) {
  if (c0 >= 0 && c0 + kVec<T> <= n) store_whole<kCache>(row + c0, v);
  else store_masked<T, kVec<T>, int>(row, c0, n, v);
}

// ---- fp32 views of chunks -------------------------------------------------------------

// Element e of a chunk as fp32. bf16 pairs are widened straight from their 32-bit word
// (low: shift, high: mask): converting element by element made the compiler unpack whole
// register-resident rows up front into twice the registers (the bf16 norm kernels held 104
// registers against 76 for fp16, and spilled at 12 chunks).
template <class T, int V>
__device__ __forceinline__ float elem(const Vec<T, V>& h, int e) {
  if constexpr (std::is_same_v<T, bf16>) {
    const unsigned w = reinterpret_cast<const unsigned*>(&h)[e / 2];
    return __uint_as_float((e & 1) ? (w & 0xffff0000u) : (w << 16));
  } else {
    return to_float(h.v[e]);
  }
}

// The same value as elem(), spelled with byte permutes: a conversion the compiler cannot
// match with elem()'s. For a later pass over chunks held in registers: with one spelling
// the compiler keeps the first pass's conversions alive (V floats per chunk on top of the
// packed words) instead of redoing one instruction per element.
template <class T, int V>
__device__ __forceinline__ float elem_permuted(const Vec<T, V>& h, int e) {
  if constexpr (std::is_same_v<T, float>) {
    return h.v[e];
  } else {
    const unsigned w = reinterpret_cast<const unsigned*>(&h)[e / 2];
    if constexpr (std::is_same_v<T, bf16>) return __uint_as_float(__byte_perm(w, 0u, (e & 1) ? 0x3254u : 0x1054u));
    else return __half2float(__ushort_as_half(static_cast<unsigned short>(__byte_perm(w, 0u, (e & 1) ? 0x32u : 0x10u))));
  }
}

// The output pass's spelling: permutes for bf16 (the norm and softmax kernels' second
// pass), elem() for the others.
template <class T, int V>
__device__ __forceinline__ float elem_again(const Vec<T, V>& h, int e) {
  if constexpr (std::is_same_v<T, bf16>) return elem_permuted(h, e);
  else return to_float(h.v[e]);
}

template <class T, int V>
__device__ __forceinline__ void to_floats(const Vec<T, V>& in, float (&out)[V]) {
#pragma unroll
  for (int e = 0; e < V; ++e) out[e] = elem(in, e);
}

// 16-bit outputs convert in pairs: one F2FP packs two values (element by element it took
// an F2FP per value and a PRMT per pair to merge them).
template <class T, int V>
__device__ __forceinline__ Vec<T, V> from_floats(const float (&in)[V]) {
  Vec<T, V> out;
  if constexpr (std::is_same_v<T, bf16> && V % 2 == 0) {
#pragma unroll
    for (int e = 0; e < V; e += 2)
      reinterpret_cast<__nv_bfloat162*>(&out)[e / 2] = __floats2bfloat162_rn(in[e], in[e + 1]);
  } else if constexpr (std::is_same_v<T, half> && V % 2 == 0) {
#pragma unroll
    for (int e = 0; e < V; e += 2) reinterpret_cast<__half2*>(&out)[e / 2] = __floats2half2_rn(in[e], in[e + 1]);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) out.v[e] = from_float<T>(in[e]);
  }
  return out;
}

template <Cache kCache = Cache::normal, class T, int V, class I>
__device__ __forceinline__ void load_chunk_f(const T* row, I c0, I n, float (&out)[V], float fill) {
  Vec<T, V> raw;
  load_chunk<kCache>(row, c0, n, raw, from_float<T>(fill));
  to_floats(raw, out);
}

template <Cache kCache = Cache::normal, class T, int V, class I>
__device__ __forceinline__ void store_chunk_f(T* row, I c0, I n, const float (&in)[V]) {
  store_chunk<kCache>(row, c0, n, from_floats<T>(in));
}

// Runtime-dtype versions for the secondary tensors of a row (weight, bias, residual,
// outputs whose dtype may differ from the main one). The dtype is uniform across the grid;
// the two 16-bit dtypes share one access path and differ only in the conversion (a select),
// so each call site carries two paths, not three.
__device__ __forceinline__ float bits16_to_float(unsigned short b, bool is_bf16) {
  return is_bf16 ? __uint_as_float(static_cast<unsigned>(b) << 16) : __half2float(__ushort_as_half(b));
}
__device__ __forceinline__ unsigned short float_to_bits16(float f, bool is_bf16) {
  return is_bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(f)) : __half_as_ushort(__float2half_rn(f));
}

template <Cache kCache = Cache::normal, int V, class I>
__device__ __forceinline__ void load_chunk_f(const void* row, DType dtype, I c0, I n, float (&out)[V], float fill) {
  if (dtype == DType::f32) {
    load_chunk_f<kCache>(static_cast<const float*>(row), c0, n, out, fill);
  } else {
    const bool is_bf16 = dtype == DType::bf16;
    Vec<unsigned short, V> raw;
    load_chunk<kCache>(static_cast<const unsigned short*>(row), c0, n, raw, float_to_bits16(fill, is_bf16));
#pragma unroll
    for (int e = 0; e < V; ++e) out[e] = bits16_to_float(raw.v[e], is_bf16);
  }
}

template <Cache kCache = Cache::normal, int V, class I>
__device__ __forceinline__ void store_chunk_f(void* row, DType dtype, I c0, I n, const float (&in)[V]) {
  if (dtype == DType::f32) {
    store_chunk_f<kCache>(static_cast<float*>(row), c0, n, in);
  } else {
    const bool is_bf16 = dtype == DType::bf16;
    Vec<unsigned short, V> raw;
#pragma unroll
    for (int e = 0; e < V; ++e) raw.v[e] = float_to_bits16(in[e], is_bf16);
    store_chunk<kCache>(static_cast<unsigned short*>(row), c0, n, raw);
  }
}

// Element offset of a row start within its 16-byte segment. Row kernels shift their chunk
// grid by it ("the row's frame"), so a row that starts mid-segment (odd N, a sliced view)
// still gets full 16-byte accesses everywhere but its two ends.
// kAlign = 128 frames the row at a 128-byte line instead: a warp's 32 consecutive chunks then
// cover 4 whole lines rather than straddling 5. Only for kernels whose chunk count per row is
// not a fixed register tile (the frame adds up to 7 chunks): the streaming cross-entropy
// (~1 % faster at N = 50257 bf16).
template <class T, unsigned kAlign = 16>
__device__ __forceinline__ int frame_offset(const void* row) {
  static_assert(kAlign % 16 == 0 && (kAlign & (kAlign - 1)) == 0, "a power-of-two multiple of 16 bytes");
  return static_cast<int>((reinterpret_cast<std::uintptr_t>(row) & (kAlign - 1)) / sizeof(T));
}

// The same for a row whose dtype is known at run time, framed in chunks of `chunk_elems`
// elements of `elem_bytes` each (a power of two of bytes): the norm forward's fp32 rows whose x
// is 16-bit, framed in 8-byte chunks.
__device__ __forceinline__ int frame_offset(const void* row, unsigned chunk_elems, unsigned elem_bytes) {
  return static_cast<int>((reinterpret_cast<std::uintptr_t>(row) & (chunk_elems * elem_bytes - 1)) / elem_bytes);
}

template <class T>
__device__ __forceinline__ const T* byte_offset(const T* p, std::int64_t bytes) {
  return reinterpret_cast<const T*>(reinterpret_cast<const char*>(p) + bytes);
}
template <class T>
__device__ __forceinline__ T* byte_offset(T* p, std::int64_t bytes) {
  return reinterpret_cast<T*>(reinterpret_cast<char*>(p) + bytes);
}

}  // namespace tachyon::detail

#pragma once
// Warpgroup MMA (wgmma.mma_async, sm_90a): shared-memory matrix descriptors, the MMA
// instruction for the tile widths the GEMM uses, and the fences that order it.
//
// Operands live in shared memory in the layout TMA writes with CU_TENSOR_MAP_SWIZZLE_128B:
// rows of 128 bytes, the eight 16-byte chunks of row r stored at chunk ^ (r % 8), every
// tile 1024-byte aligned so that the hardware's address swizzle (bits [4:6] ^= [7:9]) and
// TMA's agree. Accumulators are fp32 in registers: m64nNk16 gives each of the 128 threads
// N/2 floats; value 4j + 2h + e of thread t (warp w, lane l) holds row 16w + l/4 + 8h,
// column 8j + 2(l%4) + e of the warpgroup's 64 x N tile.
#include <cstdint>

#include "core/dtype.cuh"

namespace tachyon::detail::gemm {

// Descriptor bits (PTX ISA "Matrix Descriptor Format"): start address >> 4 in [0:13],
// leading byte offset >> 4 in [16:29], stride byte offset >> 4 in [32:45], base offset
// [49:51] (0: tiles are 1024-byte aligned), layout [62:63] (1 = 128-byte swizzle).
//
// K-major operand (rows of 64 K-elements): SBO = 1024 bytes between groups of 8 rows; LBO
// is unused for swizzled K-major layouts (the k16 slice is inside one 128-byte row) and set
// to 1 as CUTLASS does. The next k16 slice starts 32 bytes further.
// MN-major operand (rows of 64 MN-elements, one row per k): LBO = bytes between 64-element
// MN blocks, SBO = 1024 bytes between groups of 8 k-rows. The next k16 slice starts 16
// rows = 2048 bytes further.
__device__ __forceinline__ std::uint64_t smem_desc_sw128(std::uint32_t smem_addr, std::uint32_t lbo_bytes,
                                                         std::uint32_t sbo_bytes) {
  std::uint64_t d = 0;
  d |= static_cast<std::uint64_t>((smem_addr & 0x3FFFF) >> 4);
  d |= static_cast<std::uint64_t>((lbo_bytes >> 4) & 0x3FFF) << 16;
  d |= static_cast<std::uint64_t>((sbo_bytes >> 4) & 0x3FFF) << 32;
  d |= static_cast<std::uint64_t>(1) << 62;
  return d;
}

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// Orders register accesses before the next wgmma (required before the first wgmma and
// whenever the accumulators were touched by other instructions).
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N committed wgmma groups of this warpgroup are pending.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Accumulator register lists "%0, ..., %(N/2 - 1)" for the asm templates below.
#define TACHYON_WGMMA_D64 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define TACHYON_WGMMA_D128 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define TACHYON_WGMMA_D256 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"

#define TACHYON_F8(d, i) \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define TACHYON_F32(d, i) TACHYON_F8(d, i), TACHYON_F8(d, i + 8), TACHYON_F8(d, i + 16), TACHYON_F8(d, i + 24)
#define TACHYON_F64(d, i) TACHYON_F32(d, i), TACHYON_F32(d, i + 32)
#define TACHYON_F128(d, i) TACHYON_F64(d, i), TACHYON_F64(d, i + 64)

// One wgmma: D(64 x N, fp32) (+)= A(64 x 16, smem desc) * B(16 x N, smem desc).
// scale_d = 0 overwrites D (the first k-slice of a tile), 1 accumulates. kTransB = true
// reads B MN-major (B stored (K, N)); A is always K-major. A, B, scale_d and trans-b are
// operands N/2 .. N/2 + 3, after the N/2 accumulators.
#define TACHYON_WGMMA_ASM(N, TYPE, DREGS, OA, OB, OS, OT)                                           \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " OS ", 0;\n"                                                    \
  "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" DREGS "}, " OA ", " OB ", p, " \
  "1, 1, 0, " OT ";\n}\n"

template <int N, class T, bool kTransB>
struct Wgmma;

#define TACHYON_DEFINE_WGMMA(N, CT, TYPE, DREGS, FLIST, OA, OB, OS, OT)                                 \
  template <bool kTransB>                                                                                 \
  struct Wgmma<N, CT, kTransB> {                                                                          \
    __device__ __forceinline__ static void mma(float (&d)[N / 2], std::uint64_t a, std::uint64_t b,      \
                                               int scale_d) {                                             \
      asm volatile(TACHYON_WGMMA_ASM(N, TYPE, DREGS, OA, OB, OS, OT)                                     \
                   : FLIST(d, 0)                                                                          \
                   : "l"(a), "l"(b), "r"(scale_d), "n"(kTransB ? 1 : 0));                                \
    }                                                                                                     \
  };

TACHYON_DEFINE_WGMMA(256, bf16, "bf16", TACHYON_WGMMA_D256, TACHYON_F128, "%128", "%129", "%130", "%131")
TACHYON_DEFINE_WGMMA(256, half, "f16", TACHYON_WGMMA_D256, TACHYON_F128, "%128", "%129", "%130", "%131")
TACHYON_DEFINE_WGMMA(128, bf16, "bf16", TACHYON_WGMMA_D128, TACHYON_F64, "%64", "%65", "%66", "%67")
TACHYON_DEFINE_WGMMA(128, half, "f16", TACHYON_WGMMA_D128, TACHYON_F64, "%64", "%65", "%66", "%67")
TACHYON_DEFINE_WGMMA(64, bf16, "bf16", TACHYON_WGMMA_D64, TACHYON_F32, "%32", "%33", "%34", "%35")
TACHYON_DEFINE_WGMMA(64, half, "f16", TACHYON_WGMMA_D64, TACHYON_F32, "%32", "%33", "%34", "%35")

#undef TACHYON_DEFINE_WGMMA
#undef TACHYON_WGMMA_ASM
#undef TACHYON_F128
#undef TACHYON_F64
#undef TACHYON_F32
#undef TACHYON_F8
#undef TACHYON_WGMMA_D256
#undef TACHYON_WGMMA_D128
#undef TACHYON_WGMMA_D64

}  // namespace tachyon::detail::gemm

#pragma once
// The persistent warp-specialised Hopper GEMM kernel: D = act(alpha A B^T + beta C + bias).
//
//   warpgroup 0   producer: one thread walks the tile schedule and, per k-block, waits for a
//                 free ring slot, posts the slot's byte count on its "full" barrier and issues
//                 the TMA loads (A: its own 128 x 64 tile; B: its share of the block_n x 64
//                 tile, multicast to every CTA of the cluster). Keeps 40 registers.
//   warpgroups 1-2 consumers: each owns 64 rows of the 128-row tile. Per k-block: wait "full",
//                 issue four wgmma m64nNk16 (K = 64), commit, wait until only this k-block's
//                 group is in flight, release the previous slot on the "empty" barrier of every
//                 CTA in the cluster. After the last k-block: the epilogue (epilogue.cuh), whose
//                 TMA stores drain while the next tile's mainloop starts. Keep 232 registers.
//
// Shared memory (1024-byte aligned): A ring [stages][128 x 128 B], B ring [stages][block_n x
// 128 B] (K-major) or [stages][block_n / 64][64 k-rows x 128 B] (N-major), epilogue chunk
// buffers [2 warpgroups][2][8 KiB], then the full[] and empty[] mbarriers.
#include <cuda/ptx>

#include <cstdint>

#include "core/cluster.cuh"
#include "core/mbarrier.cuh"
#include "gemm/epilogue.cuh"
#include "gemm/gemm_config.h"
#include "gemm/gemm_params.h"
#include "gemm/pipeline.cuh"
#include "gemm/scheduler.h"
#include "gemm/wgmma.cuh"

namespace tachyon::detail::gemm {

inline constexpr int kProducerRegs = 40;
inline constexpr int kConsumerRegs = 232;  // 128 x 40 + 256 x 232 = 64512 <= 65536
inline constexpr int kConsumers = 2;

template <int BN>
struct StageBytes {
  static constexpr std::uint32_t a = kBlockM * kBlockK * 2;  // 16 KiB
  static constexpr std::uint32_t b = BN * kBlockK * 2;
};

// The producer thread: fills the ring for every tile this CTA computes.
// Where everything lives in shared memory, and who this CTA is in its cluster. Each role
// derives it itself after its setmaxnreg: a value held across the register re-partition
// would be spilled by ptxas.
template <int BN>
struct CtaContext {
  unsigned char* sA;
  unsigned char* sB;
  unsigned char* sEpi;
  std::uint64_t* full;
  std::uint64_t* empty;
  std::uint32_t stages, cta_rank, cluster_size;
  int cluster_id, num_clusters;

  __device__ __forceinline__ CtaContext(const GemmParams& p, unsigned char* smem_raw) {
    // Pointer arithmetic on the __shared__ array (not an integer round trip) keeps the
    // compiler aware that every derived pointer is shared memory: STS, not generic ST.
    const std::uint32_t misalign = smem_addr(smem_raw) & 1023u;
    unsigned char* smem = smem_raw + ((1024u - misalign) & 1023u);
    stages = static_cast<std::uint32_t>(p.stages);
    sA = smem;
    sB = sA + stages * StageBytes<BN>::a;
    sEpi = sB + stages * StageBytes<BN>::b;
    full = reinterpret_cast<std::uint64_t*>(sEpi + kEpilogueBytes);
    empty = full + kMaxStages;
    cta_rank = cuda::ptx::get_sreg_cluster_ctarank();
    cluster_size = cuda::ptx::get_sreg_cluster_nctarank();
    cluster_id = static_cast<int>(cuda::ptx::get_sreg_clusterid_x());
    num_clusters = static_cast<int>(cuda::ptx::get_sreg_nclusterid_x());
  }
};

template <int BN, bool kBKMajor>
__device__ __forceinline__ void gemm_producer(const GemmParams& p, unsigned char* smem_raw) {
  constexpr std::uint32_t kA = StageBytes<BN>::a, kB = StageBytes<BN>::b;
  const CtaContext<BN> ctx(p, smem_raw);
  unsigned char* const sA = ctx.sA;
  unsigned char* const sB = ctx.sB;
  std::uint64_t* const full = ctx.full;
  std::uint64_t* const empty = ctx.empty;
  const std::uint32_t stages = ctx.stages, cta_rank = ctx.cta_rank, cluster_size = ctx.cluster_size;
  const int cluster_id = ctx.cluster_id, num_clusters = ctx.num_clusters;
  const std::uint16_t cluster_mask = static_cast<std::uint16_t>((1u << cluster_size) - 1u);
  RingState ring;
  const int num_units = p.sched.num_units();
  for (int unit = cluster_id; unit < num_units; unit += num_clusters) {
    int tm, tn;
    p.sched.tile_coords(unit, static_cast<int>(cta_rank), &tm, &tn);
    const int m0 = tm * kBlockM, n0 = tn * BN;
    for (int kb = 0; kb < p.k_blocks; ++kb) {
      // Wait until every consumer of every CTA in the cluster released the slot: the
      // multicast below writes into the peers' copies of it too.
      mbar_wait(&empty[ring.stage], ring.phase ^ 1u);
      std::uint64_t* bar = &full[ring.stage];
      mbar_arrive_expect_tx(bar, kA + kB);
      const int k0 = kb * kBlockK;
      {
        const std::int32_t coords[2] = {k0, m0};
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, sA + ring.stage * kA, &p.a,
                                        coords, bar);
      }
      unsigned char* b_stage = sB + ring.stage * kB;
      if constexpr (kBKMajor) {
        // This CTA loads rows [rank * rows, (rank + 1) * rows) of the block_n x 64 B tile.
        const int rows = BN / static_cast<int>(cluster_size);
        const std::int32_t coords[2] = {k0, n0 + static_cast<int>(cta_rank) * rows};
        unsigned char* dst = b_stage + cta_rank * static_cast<std::uint32_t>(rows) * 128u;
        if (cluster_size > 1)
          cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, &p.b, coords, bar,
                                          cluster_mask);
        else
          cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, &p.b, coords, bar);
      } else {
        // (K, N) storage: 64-column boxes of 64 k-rows, this CTA's share of the block_n / 64.
        const int boxes = (BN / 64) / static_cast<int>(cluster_size);
        for (int i = 0; i < boxes; ++i) {
          const int nb = static_cast<int>(cta_rank) * boxes + i;
          const std::int32_t coords[2] = {n0 + nb * 64, k0};
          unsigned char* dst = b_stage + static_cast<std::uint32_t>(nb) * 8192u;
          if (cluster_size > 1)
            cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, &p.b, coords, bar,
                                            cluster_mask);
          else
            cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, &p.b, coords,
                                            bar);
        }
      }
      ring.advance(stages);
    }
  }
}

template <class OutT, int BN>
__device__ __forceinline__ void gemm_epilogue(float (&acc)[BN / 2], const GemmParams& p, unsigned char* bufs,
                                              int row0, int col0, int tid, TileBias<BN>& tb,
                                              std::uint32_t barrier_id) {
  if (p.epi.tma_store)
    epilogue_tma_store<OutT, BN>(acc, p.epi, &p.d, bufs, row0, col0, tb, barrier_id);
  else
    epilogue_direct<OutT, BN>(acc, p.epi, row0, col0, tid);
}

// One consumer warpgroup (wgi = 0 or 1): rows [64 wgi, 64 wgi + 64) of every tile.
template <class InT, class OutT, int BN, bool kBKMajor>
__device__ __forceinline__ void gemm_consumer(const GemmParams& p, unsigned char* smem_raw) {
  constexpr std::uint32_t kA = StageBytes<BN>::a, kB = StageBytes<BN>::b;
  const CtaContext<BN> ctx(p, smem_raw);
  unsigned char* const sA = ctx.sA;
  unsigned char* const sB = ctx.sB;
  std::uint64_t* const full = ctx.full;
  std::uint64_t* const empty = ctx.empty;
  const std::uint32_t stages = ctx.stages, cta_rank = ctx.cta_rank, cluster_size = ctx.cluster_size;
  const int cluster_id = ctx.cluster_id, num_clusters = ctx.num_clusters;
  const int wgi = static_cast<int>(threadIdx.x) / 128 - 1, tid = static_cast<int>(threadIdx.x) % 128;
  unsigned char* bufs = ctx.sEpi + wgi * 16384;
  const std::uint32_t barrier_id = 1u + static_cast<std::uint32_t>(wgi);
  float acc[BN / 2];
  TileBias<BN> tb = {};  // BN / 32 registers, live through the mainloop
  const bool tile_bias = p.epi.tma_store && p.epi.bias != nullptr;
  RingState ring;
  const int num_units = p.sched.num_units();
  for (int unit = cluster_id; unit < num_units; unit += num_clusters) {
    int tm, tn;
    p.sched.tile_coords(unit, static_cast<int>(cta_rank), &tm, &tn);
    // The epilogue's bias, requested before the first MMA of the tile: the loads complete
    // under the mainloop instead of costing a global round trip after the last k-block.
    if (tile_bias) load_tile_bias<BN>(p.epi, tn * BN, tid % 32, tb);
    std::uint32_t prev_stage = 0;
    for (int kb = 0; kb < p.k_blocks; ++kb) {
      mbar_wait(&full[ring.stage], ring.phase);
      const std::uint32_t a_addr = smem_addr(sA + ring.stage * kA) + static_cast<std::uint32_t>(wgi) * 64u * 128u;
      const std::uint32_t b_addr = smem_addr(sB + ring.stage * kB);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kBlockK / 16; ++kk) {
        const std::uint64_t da = smem_desc_sw128(a_addr + kk * 32u, 16u, 1024u);
        const std::uint64_t db = kBKMajor ? smem_desc_sw128(b_addr + kk * 32u, 16u, 1024u)
                                          : smem_desc_sw128(b_addr + kk * 2048u, 8192u, 1024u);
        Wgmma<BN, InT, !kBKMajor>::mma(acc, da, db, (kb > 0 || kk > 0) ? 1 : 0);
      }
      wgmma_commit();
      // This k-block's MMAs stay in flight; the previous k-block's have finished reading
      // their slot, which goes back to the producers of the cluster.
      wgmma_wait<1>();
      if (kb > 0 && tid < static_cast<int>(cluster_size)) mbar_arrive_cluster(&empty[prev_stage], tid);
      prev_stage = ring.stage;
      ring.advance(stages);
    }
    wgmma_wait<0>();
    if (tid < static_cast<int>(cluster_size)) mbar_arrive_cluster(&empty[prev_stage], tid);

    const int row0 = tm * kBlockM + 64 * wgi, col0 = tn * BN;
    gemm_epilogue<OutT, BN>(acc, p, bufs, row0, col0, tid, tb, barrier_id);
  }
  // Global writes of the last TMA stores complete before the CTA retires (lane 0 of every
  // warp may have issued some).
  if (tid % 32 == 0) cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<0>{});
}

// The output dtype is a template parameter: a runtime switch would put three unrolled
// epilogues in every kernel (5x the compile time, and spills).
template <class InT, class OutT, int BN, bool kBKMajor>
__global__ void __launch_bounds__(kThreads, 1) gemm_tma_kernel(const __grid_constant__ GemmParams p) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char smem_raw[];
  if (threadIdx.x == 0) {
    const CtaContext<BN> ctx(p, smem_raw);
    for (std::uint32_t s = 0; s < ctx.stages; ++s) {
      mbar_init(&ctx.full[s], 1);                                // the producer's arrive_expect_tx
      mbar_init(&ctx.empty[s], kConsumers * ctx.cluster_size);  // every consumer of the cluster
    }
    mbar_init_fence();
  }
  // Every CTA's barriers exist before any peer multicasts into it or arrives on them.
  cluster_sync();

  if (threadIdx.x < 128) {
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) gemm_producer<BN, kBKMajor>(p, smem_raw);
  } else {
    setmaxnreg_inc<kConsumerRegs>();
    gemm_consumer<InT, OutT, BN, kBKMajor>(p, smem_raw);
  }
  // No CTA leaves while a peer may still arrive on its barriers.
  cluster_sync();
#elif defined(__CUDA_ARCH__)
  __trap();  // built for an architecture without wgmma/TMA multicast: the host never launches it
#endif
}

}  // namespace tachyon::detail::gemm

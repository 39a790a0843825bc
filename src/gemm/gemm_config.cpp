#include "gemm/gemm_config.h"

#include <algorithm>

#include "core/host_device.h"

namespace tachyon::detail::gemm {

namespace {

// Relative MMA throughput of a CTA tile 128 x block_n. Narrower tiles re-read the A tile from
// shared memory for fewer columns and spend a larger share of each k-block waiting on the
// barrier; 128 x 256 with two consumer warpgroups is the shape that reaches peak.
double tile_efficiency(int block_n) {
  switch (block_n) {
    case 256: return 1.0;
    case 128: return 0.88;
    default: return 0.70;
  }
}

// Two CTAs per cluster (B multicast) when there are at least two tile rows to pair and an odd
// count does not leave a large share of idle partners.
int pick_cluster(int tiles_m, int block_n, bool b_k_major) {
  if (tiles_m < 2) return 1;
  if (!b_k_major && block_n < 128) return 1;  // each CTA multicasts whole 64-column boxes
  if (tiles_m % 2 != 0 && tiles_m < 8) return 1;
  return 2;
}

struct Candidate {
  int block_n;
  bool swap;
};

}  // namespace

std::size_t gemm_smem_bytes(int block_n, int stages) {
  const std::size_t stage = static_cast<std::size_t>(kBlockM + block_n) * kBlockK * 2;
  return kAlignSlack + static_cast<std::size_t>(stages) * stage + kEpilogueBytes + kBarrierBytes;
}

int gemm_max_stages(int block_n, std::size_t smem_per_block) {
  int s = 0;
  while (s < kMaxStages && gemm_smem_bytes(block_n, s + 1) <= smem_per_block) ++s;
  return s >= 2 ? s : 0;
}

int gemm_persistent_ctas(std::int64_t units, int cluster_m, int max_clusters) {
  if (units <= 0) return 0;
  max_clusters = std::max(1, max_clusters);
  const std::int64_t waves = ceil_div(units, max_clusters);
  const std::int64_t clusters = ceil_div(units, waves);
  return static_cast<int>(clusters) * cluster_m;
}

std::string GemmConfig::str() const {
  if (path == GemmPath::fallback) return "fallback";
  return "tma " + std::to_string(block_m) + "x" + std::to_string(block_n) + "x" + std::to_string(block_k) + " s" +
         std::to_string(stages) + " c" + std::to_string(cluster_m) + " g" + std::to_string(raster_group) + (snake ? " snake" : "") + " ctas" +
         std::to_string(ctas) + (swap_ab ? " swap" : "") + (tma_store ? " tma-store" : " direct-store");
}

GemmConfig choose_gemm_config(const GemmProblem& p, const GemmOverrides& o) {
  GemmConfig cfg;
  cfg.kernel_m = p.m;
  cfg.kernel_n = p.n;
  // TMA cannot describe the operands (row stride or base not 16-byte aligned), or there is
  // nothing to multiply: the fallback kernel takes any layout.
  if (p.k == 0 || !p.a_tma || !p.b_tma || p.m <= 0 || p.n <= 0) {
    cfg.path = GemmPath::fallback;
    return cfg;
  }

  // Candidates: tile widths 256 / 128 / 64 (64 only with K-major B, the variant that is built),
  // and the swapped problem D^T = B A^T when M is small enough that a 128-row tile would be
  // mostly empty. Each is scored by its busiest SM's work: waves x tile area / efficiency.
  Candidate cands[6];
  int count = 0;
  for (int bn : {256, 128, 64}) {
    if (o.block_n != 0 && bn != o.block_n) continue;
    if (bn == 64 && !p.b_k_major) continue;
    cands[count++] = {bn, false};
    if (p.b_k_major && p.m <= 64) cands[count++] = {bn, true};
  }
  if (count == 0) cands[count++] = {256, false};

  double best_cost = 0;
  bool have = false;
  for (int i = 0; i < count; ++i) {
    const Candidate& c = cands[i];
    const std::int64_t km = c.swap ? p.n : p.m, kn = c.swap ? p.m : p.n;
    const int tiles_m = static_cast<int>(ceil_div(km, kBlockM));
    const int tiles_n = static_cast<int>(ceil_div(kn, c.block_n));
    int cluster = pick_cluster(tiles_m, c.block_n, p.b_k_major);
    if (o.cluster_m == 1 || o.cluster_m == 2) cluster = o.cluster_m;
    if (!p.b_k_major && c.block_n / 64 < cluster) cluster = 1;
    const std::int64_t units = ceil_div(static_cast<std::int64_t>(tiles_m), cluster) * tiles_n;
    const int max_clusters = std::max(1, p.sm_count / cluster);
    const std::int64_t waves = ceil_div(units, max_clusters);
    const double cost = static_cast<double>(waves) * kBlockM * c.block_n / tile_efficiency(c.block_n);
    // Strictly better only: ties keep the earlier (wider, unswapped) candidate.
    if (!have || cost < best_cost * (1 - 1e-9)) {
      have = true;
      best_cost = cost;
      cfg.block_n = c.block_n;
      cfg.swap_ab = c.swap;
      cfg.cluster_m = cluster;
      cfg.kernel_m = km;
      cfg.kernel_n = kn;
      cfg.tiles_m = tiles_m;
      cfg.tiles_n = tiles_n;
      cfg.units = static_cast<int>(units);
    }
  }

  cfg.stages = gemm_max_stages(cfg.block_n, p.smem_per_block);
  if (cfg.stages == 0) {
    cfg.path = GemmPath::fallback;
    cfg.kernel_m = p.m;
    cfg.kernel_n = p.n;
    return cfg;
  }
  if (o.stages >= 2) cfg.stages = std::min(cfg.stages, o.stages);
  cfg.smem_bytes = gemm_smem_bytes(cfg.block_n, cfg.stages);
  // A transposed output cannot go through the row-major TMA store tile; it is written with
  // direct (bounds-checked) stores, as is any output TMA cannot describe.
  cfg.tma_store = p.d_tma && !cfg.swap_ab;

  const int units_m = static_cast<int>(ceil_div(cfg.tiles_m, cfg.cluster_m));
  cfg.raster_group = std::max(1, std::min(o.raster_group > 0 ? o.raster_group : 8, units_m));
  if (o.order != 0) cfg.snake = o.order == 1;
  const int max_clusters = std::max(1, p.sm_count / cfg.cluster_m);
  cfg.ctas = gemm_persistent_ctas(cfg.units, cfg.cluster_m, max_clusters);
  if (o.ctas > 0) {
    const int want = std::max(cfg.cluster_m, o.ctas - o.ctas % cfg.cluster_m);
    cfg.ctas = std::min(want, cfg.units * cfg.cluster_m);
  }
  return cfg;
}

}  // namespace tachyon::detail::gemm

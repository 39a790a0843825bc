#pragma once
// Persistent static tile scheduler: which output tile each CTA computes, in which order.
//
// The output is cut into CTA tiles of block_m x block_n. A cluster of `cluster_m` CTAs
// stacked along M works on one "unit" of cluster_m x 1 tiles (its CTAs share the B tile
// through TMA multicast). Clusters take units round-robin: cluster c computes units c,
// c + clusters, c + 2 clusters, ... so every CTA of a cluster walks the same sequence,
// which the multicast needs.
//
// Raster order: units are numbered in groups of `group` unit-rows (along M). Inside a
// group the order runs down M first, then across N (optionally serpentine: `snake`), so the clusters resident at one time
// cover a compact group x (clusters / group) block of the output: they share A rows and B
// columns in L2 instead of streaming all of B for every row of A.
//
// Plain integer code, usable on the host (tests) and the device.
#include <cstdint>

#include "core/host_device.h"

namespace tachyon::detail::gemm {

struct TileScheduler {
  int units_m = 1;  // unit rows: ceil(tiles_m / cluster_m)
  int units_n = 1;  // unit columns: tiles_n
  int group = 8;    // unit rows per raster group (>= 1)
  int cluster_m = 1;
  // Serpentine walk: odd unit columns of a group run up its rows, odd groups run right to
  // left, so consecutive units also share A rows (or B columns) at the seams.
  int snake = 0;

  TACHYON_HD int num_units() const { return units_m * units_n; }

  // Unit index -> (unit row, unit column).
  TACHYON_HD void unit_coords(int unit, int* um, int* un) const {
    const int per_group = group * units_n;
    const int g = unit / per_group;
    const int first = g * group;
    const int rows = units_m - first < group ? units_m - first : group;
    const int r = unit - g * per_group;
    int row = r % rows, col = r / rows;
    if (snake) {
      if (col & 1) row = rows - 1 - row;
      if (g & 1) col = units_n - 1 - col;
    }
    *um = first + row;
    *un = col;
  }

  // Unit index and the CTA's rank in its cluster -> (tile row, tile column).
  TACHYON_HD void tile_coords(int unit, int cta_rank, int* tm, int* tn) const {
    int um, un;
    unit_coords(unit, &um, &un);
    *tm = um * cluster_m + cta_rank;
    *tn = un;
  }
};

}  // namespace tachyon::detail::gemm

#pragma once
// Measurement switches for the row kernels' special builds and layouts: each is a choice the
// plan makes where a measurement once showed a win over the general path. Setting
// TACHYON_DISABLE_VARIANTS=name[,name...] (read once per process) turns the named ones off,
// so that one benchmark run times each against the general path (scripts/variant-sweep.sh);
// a variant whose win stays under 2 % everywhere is deleted (issue #27's rule). For
// measurement only: every variant computes the same results as the general path.
#include <cstdint>
#include <string>

namespace tachyon::detail {

enum class Variant : unsigned {
  whole,                // norm forward: the whole-chunk builds (off: the typed build)
  whole_cluster,        // norm forward: LayerNorm's bounded build for cluster rows
  full_tile,            // norm forward: the forms without row-end tests, rows that fill the tile
  fused_grouped,        // fused residual forward: the grouped residual loads and their layouts
  load_balancing,       // 16-CTA forward rows: the load-balancing cluster scheduling policy
  fwd_stage,            // norm forward: weight and bias staged in shared memory (off: read through L1)
  four_item_rows,       // row layout: 257..512-chunk rows on 4 items x 128 threads for kernels past 64 registers
  bwd_typed,            // norm backward: the typed row loop (off: the run-time-dtype loop)
  bwd_l2_prefetch,      // norm backward: the next row's L2 prefetch
  bwd_typed_dresidual,  // RMSNorm backward: dresidual on the typed loop
  bwd_layouts,          // norm backward: LayerNorm's 16-bit layouts apart from choose_row_config
  bwd_packed_layout,    // norm backward: LayerNorm's packed 4-chunk layout (off: the 2-chunk one on twice the cluster)
  bwd_narrow_dy,        // RMSNorm backward: bf16 dy beside fp32 rows on the typed loop
  bwd_framed,           // norm backward: rows of one dtype off the 16-byte grid, in their frame on the typed loop (off: run-time-dtype loop)
  fwd_framed,           // norm forward: rows of one dtype off the 16-byte grid on the whole build, in their frame (off: the typed build)
  fwd_framed_four,      // norm forward: framed one-CTA rows on the 4-chunk tile (off: choose_row_config's 8-chunk layouts)
  fwd_framed_one_cta,   // norm forward: framed rows of 2049..4096 chunks on one CTA of 8 chunks a thread (off: clusters)
  fwd_framed_wide,      // norm forward: framed rows with an fp32 weight and bias beside 16-bit x (off: the typed build)
  fwd_four_slots,       // norm forward: whole one-CTA rows on the 4-chunk tile where it fills the CTA and 8 chunks cannot
  four_item_exact,      // row layout: 384-chunk rows on one 96-thread team of 4 chunks, the tile filled (off: 2 x 128)
  bwd_four_warps,       // norm backward: 16-bit one-CTA rows on the 4-chunk tile where it holds 1.5x the warps (off: framed rows, any more)
  bwd_cluster_cap,      // norm backward: LayerNorm's 16-bit 2-chunk cluster layout on at most 4 CTAs (off: 16)
  bwd_packed_balanced,  // norm backward: LayerNorm's packed layout with its CTAs' threads balanced to fill them (off: 512)
  bwd_pair_cluster,     // norm backward: 16-bit one-CTA 2-chunk rows under 16 warps an SM on a 2-CTA cluster where it holds 1.5x the warps
  bwd_short_two_chunk,  // norm backward: 16-bit short rows (several a CTA) on the 2-chunk tile (off: the 4-chunk tile)
  ce_narrow,            // cross-entropy forward: 256-thread CTAs (clusters of up to 8) where the layout leaves two CTAs an SM (off: as choose_row_config)
  count
};

const char* variant_name(Variant v);

// The variants a TACHYON_DISABLE_VARIANTS value turns off, one bit each; throws
// tachyon::Error naming an unknown name (a typo would otherwise measure nothing).
std::uint32_t parse_disabled_variants(const std::string& list);

// False where the environment turned `v` off. The variable is read once.
bool variant_enabled(Variant v);

}  // namespace tachyon::detail

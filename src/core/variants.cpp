#include "core/variants.h"

#include <algorithm>
#include <cstdlib>

#include "tachyon/error.h"

namespace tachyon::detail {

namespace {
constexpr const char* kNames[] = {"whole",          "whole_cluster",   "full_tile",           "fused_grouped",
                                  "load_balancing", "fwd_stage",       "four_item_rows",      "bwd_typed",
                                  "bwd_l2_prefetch", "bwd_typed_dresidual", "bwd_layouts",      "bwd_packed_layout",
                                  "bwd_narrow_dy",   "bwd_framed",          "fwd_framed",
                                  "fwd_framed_four", "fwd_framed_one_cta", "fwd_framed_wide", "fwd_four_slots",
                                  "four_item_exact", "bwd_four_warps",      "bwd_cluster_cap",
                                  "bwd_packed_balanced", "bwd_pair_cluster", "bwd_short_two_chunk",
                                  "ce_narrow"};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<unsigned>(Variant::count), "a name per variant");
}  // namespace

const char* variant_name(Variant v) { return kNames[static_cast<unsigned>(v)]; }

std::uint32_t parse_disabled_variants(const std::string& list) {
  std::uint32_t mask = 0;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, end - start);
    if (!name.empty()) {
      unsigned i = 0;
      while (i < static_cast<unsigned>(Variant::count) && name != kNames[i]) ++i;
      if (i == static_cast<unsigned>(Variant::count)) {
        std::string known;
        for (const char* k : kNames) known += std::string(known.empty() ? "" : ", ") + k;
        throw Error("TACHYON_DISABLE_VARIANTS: unknown variant '" + name + "' (known: " + known + ")");
      }
      mask |= 1u << i;
    }
    start = end + 1;
  }
  return mask;
}

bool variant_enabled(Variant v) {
  static const std::uint32_t disabled = [] {
    const char* env = std::getenv("TACHYON_DISABLE_VARIANTS");
    return env ? parse_disabled_variants(env) : 0u;
  }();
  return (disabled >> static_cast<unsigned>(v) & 1u) == 0;
}

}  // namespace tachyon::detail

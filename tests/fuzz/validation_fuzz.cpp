// libFuzzer target over the validation layer (issue #26): random ranks, shapes, strides,
// pointers, dtypes, scalars, enums and workspaces for every public op, on the CPU, against
// the library's host sources linked with stub CUDA entry points (cuda_stubs.cpp).
//
// Each input decodes to one call. An independent model of the API's rules (tensor.h and the
// family headers) judges it valid, invalid, or undecidable (overlaps of strided views it
// cannot settle exactly). The call must then:
//  - never crash, hang, trip a sanitizer, or throw anything but tachyon::Error;
//  - reach CUDA only when the model says valid (and not when it says the call is empty);
//  - when it fails validation, say "<op>: <argument>: ..." with an argument of that op, and
//    be invalid by the model (a conservative overlap rejection of views the model proves
//    disjoint is counted, not a finding);
//  - when it returns without CUDA, be valid and empty (or a size query that needs no device).
// A finding prints the call and aborts (libFuzzer keeps the input).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "softmax/softmax_params.h"  // kCountParts: the cross-entropy workspace layout
#include "tachyon/tachyon.h"

extern "C" int tachyon_fuzz_cuda_calls;  // cuda_stubs.cpp

extern "C" {
// Outcome counts, for the driver's summary.
long long tachyon_fuzz_stats[8];
}

namespace {

using namespace tachyon;
using i64 = std::int64_t;
using u64 = std::uint64_t;
using i128 = __int128;

enum Stat { kRejected, kReachedCuda, kNoOp, kConservative, kUndecided, kRuns };

// ---- input decoding: every choice reads bytes; an exhausted input reads zeros, and choice 0
// is always the ordinary, valid one -----------------------------------------------------------

struct Gen {
  const std::uint8_t* p;
  std::size_t n;
  std::uint8_t u8() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  u64 u64v() {
    u64 v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | u8();
    return v;
  }
  int pick(int k) { return u8() % k; }
};

constexpr i64 kLimit = (1LL << 31) - 65;
constexpr i64 kI64Max = INT64_MAX;

const i64 kInts[] = {0,          1,          2,         3,           7,          8,         16,
                     63,         64,         65,        1000,        4096,       kLimit,    kLimit + 1,
                     1LL << 31,  1LL << 32,  (1LL << 32) + 1, 1LL << 40, 1LL << 62, kI64Max,   -1,
                     -2,         -64,        INT64_MIN, kI64Max / 3, 3037000500LL /* ~sqrt(2^63) */};

i64 any_int(Gen& g) {
  const int m = g.pick(40);
  if (m < static_cast<int>(sizeof(kInts) / sizeof(kInts[0]))) return kInts[m];
  return static_cast<i64>(g.u64v());
}

// A dimension: mostly small, sometimes a limit or an overflow.
i64 gen_dim(Gen& g) {
  static const i64 small[] = {8, 1, 2, 3, 4, 16, 64, 0, 5, 65, 127, 256};
  const int m = g.pick(24);
  if (m < 12) return small[m];
  if (m < 20) return 1 + g.pick(200);
  return any_int(g) & kI64Max;  // non-negative
}

DType gen_dtype(Gen& g, DType want) {
  const int m = g.pick(20);
  if (m < 16) return want;
  if (m == 19) return static_cast<DType>(g.u8());  // maybe not a DType at all
  return static_cast<DType>(g.pick(7));
}

float gen_float(Gen& g, float typical) {
  switch (g.pick(20)) {
    case 12: return 0.f;
    case 13: return NAN;
    case 14: return INFINITY;
    case 15: return -INFINITY;
    case 16: return -1.f;
    case 17: return 2.f;
    case 18: {
      const std::uint32_t bits = static_cast<std::uint32_t>(g.u64v());
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case 19: return 0.5f;
    default: return typical;
  }
}

bool known(DType d) { return static_cast<unsigned>(d) <= static_cast<unsigned>(DType::i64); }
i64 esize(DType d) { return known(d) ? static_cast<i64>(dtype_size(d)) : 1; }

// Pointers: argument k lives in its own arena ((k + 1) << 40) unless the input makes it alias
// an argument already made (overlaps), or null, misaligned, or at the top of the address space.
struct Ptrs {
  std::vector<std::uintptr_t> made;
  void* make(Gen& g, int k, DType dt) {
    const std::uintptr_t base = (static_cast<std::uintptr_t>(k) + 1) << 40;
    const std::uintptr_t es = static_cast<std::uintptr_t>(esize(dt));
    std::uintptr_t p = base;
    const int m = g.pick(32);
    if (m >= 18 && m < 26 && !made.empty()) {
      const std::uintptr_t other = made[g.pick(static_cast<int>(made.size()))];
      static const std::intptr_t offsets[] = {0, 0, 2, 4, 8, 16, -4, -16, 64, 128, 256, -256, 1024, 4096, -4096, 1 << 20};
      const std::intptr_t off = m == 25 ? static_cast<std::intptr_t>(g.u8()) * 4 : offsets[g.pick(16)];
      p = other + static_cast<std::uintptr_t>(off);
    } else if (m == 26) {
      p = 0;
    } else if (m == 27) {
      p = base + 1;
    } else if (m == 28) {
      p = ~static_cast<std::uintptr_t>(0) - (static_cast<std::uintptr_t>(g.u8()) << 8) - 15;
      p &= ~static_cast<std::uintptr_t>(15);
    } else if (m == 29) {
      p = static_cast<std::uintptr_t>(g.u64v());
    } else if (m == 30) {
      p = base + es * static_cast<std::uintptr_t>(g.u8());
    }
    made.push_back(p);
    return reinterpret_cast<void*>(p);
  }
};

TensorView make(void* data, DType dt, int rank, const i64* shape, const i64* stride) {
  TensorView t;
  t.data = data;
  t.dtype = dt;
  t.rank = rank;
  for (int d = 0; d < rank && d < kMaxRank; ++d) {
    t.shape[d] = shape[d];
    t.stride[d] = stride[d];
  }
  return t;
}

TensorView mk(void* data, DType dt, std::initializer_list<i64> shape, std::initializer_list<i64> stride) {
  return make(data, dt, static_cast<int>(shape.size()), shape.begin(), stride.begin());
}

i64 wrap_add(i64 a, i64 b) { return static_cast<i64>(static_cast<u64>(a) + static_cast<u64>(b)); }
i64 wrap_mul(i64 a, i64 b) { return static_cast<i64>(static_cast<u64>(a) * static_cast<u64>(b)); }

// An (M, N) row operand, in any of the forms a caller might pass (size-1 dimensions, split
// leading dimensions, padded rows) or broken in one way or another.
TensorView gen_matrix(Gen& g, Ptrs& ptrs, int k, i64 M, i64 N, DType want, bool optional) {
  const int form = g.pick(32);
  if (optional && form >= 26) return {};
  const DType dt = gen_dtype(g, want);
  void* data = ptrs.make(g, k, dt);
  static const i64 pads[] = {0, 0, 0, 1, 8, 64, -1, 3};
  const i64 rs = wrap_add(N, pads[g.pick(8)]);
  const i64 odd = any_int(g);
  switch (form) {
    case 12: {  // one row as 1-D
      const i64 s[] = {N}, st[] = {1};
      return M == 1 ? make(data, dt, 1, s, st) : mk(data, dt, {M, N}, {rs, 1});
    }
    case 13: return mk(data, dt, {1, M, N}, {odd, rs, 1});
    case 14: return mk(data, dt, {M, 1, N}, {rs, odd, 1});
    case 15:
      if (M % 2 == 0)
        return mk(data, dt, {2, M / 2, 1, N}, {wrap_mul(M / 2, rs), rs, odd, 1});
      return mk(data, dt, {M, N}, {rs, 1});
    case 16: {  // anything
      const int rank = g.pick(8) - 1;
      i64 s[4], st[4];
      for (int d = 0; d < 4; ++d) s[d] = g.pick(3) == 0 ? any_int(g) : gen_dim(g), st[d] = any_int(g);
      return make(data, dt, rank, s, st);
    }
    case 17: return mk(data, dt, {M, N}, {odd, 1});
    case 18: return mk(data, dt, {M, N}, {rs, odd});
    case 19: {
      const i64 m = g.pick(2) ? M : any_int(g), n = g.pick(2) ? N : any_int(g);
      return mk(data, dt, {m, n}, {rs, 1});
    }
    case 20: return mk(data, dt, {M, N}, {1, M});  // column-major
    case 21: {                                                                     // rank out of range
      TensorView t = mk(data, dt, {M, N}, {rs, 1});
      t.rank = g.pick(2) ? 5 : -static_cast<int>(g.u8());
      return t;
    }
    case 22: return make(data, dt, 0, nullptr, nullptr);
    default: return mk(data, dt, {M, N}, {rs, 1});
  }
}

// A vector of n elements (weights, row statistics, targets, losses).
TensorView gen_vector(Gen& g, Ptrs& ptrs, int k, i64 n, DType want, bool optional) {
  const int form = g.pick(24);
  if (optional && form >= 16) return {};
  const DType dt = gen_dtype(g, want);
  void* data = ptrs.make(g, k, dt);
  const i64 odd = any_int(g);
  switch (form) {
    case 8: return n == 1 ? make(data, dt, 0, nullptr, nullptr) : mk(data, dt, {n}, {1});
    case 9: return mk(data, dt, {1, n}, {odd, 1});
    case 10: return mk(data, dt, {n}, {odd});
    case 11: return mk(data, dt, {g.pick(2) ? wrap_add(n, 1) : any_int(g)}, {1});
    case 12: {
      const int rank = g.pick(8) - 1;
      i64 s[4], st[4];
      for (int d = 0; d < 4; ++d) s[d] = g.pick(2) ? any_int(g) : gen_dim(g), st[d] = any_int(g);
      return make(data, dt, rank, s, st);
    }
    case 13: return mk(data, dt, {n, 1}, {1, 1});
    default: return mk(data, dt, {n}, {1});
  }
}

struct Workspace {
  void* ptr = nullptr;
  std::size_t bytes = 0;
};

Workspace gen_workspace(Gen& g, Ptrs& ptrs, int k, std::size_t typical) {
  Workspace w;
  const int m = g.pick(16);
  if (m == 15) return w;
  w.ptr = ptrs.make(g, k, DType::f32);
  if (m == 14) w.ptr = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(w.ptr) + 8);
  switch (g.pick(12)) {
    case 8: w.bytes = 0; break;
    case 9: w.bytes = typical > 0 ? typical - 1 : 0; break;
    case 10: w.bytes = static_cast<std::size_t>(g.u64v()); break;
    case 11: w.bytes = static_cast<std::size_t>(g.u8()) * 16; break;
    default: w.bytes = typical == 0 ? (1u << 20) : typical;
  }
  return w;
}

// ---- the model -----------------------------------------------------------------------------

enum class Verdict { valid, invalid, undecided };

// A view as rows of bytes, once judged valid.
struct Mem {
  bool any = false;  // present and non-empty
  std::uintptr_t start = 0;
  DType dtype = DType::f32;
  i64 rows = 0, cols = 0, row_stride = 0;  // elements
  i64 es = 1;
  i128 row_bytes() const { return static_cast<i128>(row_stride) * es; }
  i128 span() const {  // saturated far above any valid span (2^63)
    const i128 elems = static_cast<i128>(rows - 1) * row_stride + cols;
    return elems > (static_cast<i128>(1) << 100) ? static_cast<i128>(1) << 100 : elems * es;
  }
};

struct Model {
  bool invalid = false, undecided = false;
  void bad() { invalid = true; }
  Verdict verdict() const { return invalid ? Verdict::invalid : undecided ? Verdict::undecided : Verdict::valid; }
};

bool present(const TensorView& t) { return t.data != nullptr || t.rank != 0; }

// Element count by the rules: rank in lo..4, dtype known, extents >= 0, the product taken left
// to right never above INT64_MAX. Returns false when broken; rows = product of all but the last.
bool extents(const TensorView& t, int lo, i64& n, i64& rows) {
  if (t.rank < lo || t.rank > kMaxRank || !known(t.dtype)) return false;
  i128 p = 1;
  rows = 1;
  for (int d = 0; d < t.rank; ++d) {
    if (t.shape[d] < 0) return false;
    p *= t.shape[d];
    if (p > kI64Max) return false;
    if (d == t.rank - 2) rows = static_cast<i64>(p);
  }
  n = static_cast<i64>(p);
  return true;
}

bool span_ok(std::uintptr_t start, i128 span) {
  return span <= kI64Max && static_cast<i128>(start) + span < (static_cast<i128>(1) << 64);  // one past the end representable
}

// A row operand (tensor.h's rules): sets `m` when valid and non-empty.
bool model_rows(const TensorView& t, i64 max_cols, Mem& m) {
  m = Mem{};
  if (!present(t)) return false;
  i64 n, rows;
  if (!extents(t, 1, n, rows)) return false;
  if (n == 0) return true;
  const i64 cols = t.shape[t.rank - 1], es = esize(t.dtype);
  const auto start = reinterpret_cast<std::uintptr_t>(t.data);
  if (start == 0 || start % static_cast<std::uintptr_t>(es) != 0) return false;
  if (cols > 1 && t.stride[t.rank - 1] != 1) return false;
  if (cols > max_cols) return false;
  int inner = -1;  // the leading dimensions of extent > 1 collapse; size-1 ones are ignored
  i64 rs = cols;
  for (int d = t.rank - 2; d >= 0; --d) {
    if (t.shape[d] == 1) continue;
    if (inner < 0) rs = t.stride[d];
    else if (static_cast<i128>(t.stride[d]) != static_cast<i128>(t.stride[inner]) * t.shape[inner]) return false;
    inner = d;
  }
  if (rows > 1 && rs < cols) return false;
  m = {true, start, t.dtype, rows, cols, rs, es};
  return span_ok(start, m.span());
}

// A vector of n elements: rank 0..4, only the last extent other than 1, stride 1 when n > 1.
bool model_vector(const TensorView& t, i64 n, Mem& m) {
  m = Mem{};
  if (!present(t)) return false;
  i64 count, rows;
  if (!extents(t, 0, count, rows)) return false;
  if (count != n) return false;
  for (int d = 0; d + 1 < t.rank; ++d)
    if (t.shape[d] != 1) return false;
  if (n == 0) return true;
  if (n > 1 && t.stride[t.rank - 1] != 1) return false;
  const auto start = reinterpret_cast<std::uintptr_t>(t.data);
  const i64 es = esize(t.dtype);
  if (start == 0 || start % static_cast<std::uintptr_t>(es) != 0) return false;
  m = {true, start, t.dtype, 1, n, n, es};
  return span_ok(start, m.span());
}

bool is_float(DType d) { return d == DType::f32 || d == DType::f16 || d == DType::bf16; }

bool same_shape(const TensorView& a, const TensorView& b) {
  if (a.rank != b.rank || a.rank < 0 || a.rank > kMaxRank) return false;
  for (int d = 0; d < a.rank; ++d)
    if (a.shape[d] != b.shape[d]) return false;
  return true;
}

enum class Overlap { no, yes, maybe };

// Whether two byte-row sets share a byte: exact for few rows, one-row sets and equal strides
// whose phases separate them; otherwise undecided.
Overlap overlap(const Mem& a, const Mem& b) {
  if (!a.any || !b.any) return Overlap::no;
  const i128 a0 = a.start, b0 = b.start;
  if (a0 + a.span() <= b0 || b0 + b.span() <= a0) return Overlap::no;
  auto row_hits = [](i128 x0, i128 xlen, const Mem& r) {  // [x0, x0 + xlen) against the rows of r
    const i128 s = r.row_bytes(), len = static_cast<i128>(r.cols) * r.es, r0 = r.start;
    if (r.rows == 1) return x0 < r0 + len && r0 < x0 + xlen;
    // rows i with r0 + i s < x0 + xlen and r0 + i s + len > x0
    i128 lo = x0 - r0 - len + 1;  // i s >= lo
    i128 ilo = lo <= 0 ? 0 : (lo + s - 1) / s;
    i128 hi = x0 + xlen - 1 - r0;  // i s <= hi
    if (hi < 0) return false;
    i128 ihi = hi / s;
    if (ihi > r.rows - 1) ihi = r.rows - 1;
    return ilo <= ihi;
  };
  if (a.rows == 1) return row_hits(a0, static_cast<i128>(a.cols) * a.es, b) ? Overlap::yes : Overlap::no;
  if (b.rows == 1) return row_hits(b0, static_cast<i128>(b.cols) * b.es, a) ? Overlap::yes : Overlap::no;
  if (a.rows <= 64) {
    for (i64 i = 0; i < a.rows; ++i)
      if (row_hits(a0 + a.row_bytes() * i, static_cast<i128>(a.cols) * a.es, b)) return Overlap::yes;
    return Overlap::no;
  }
  if (b.rows <= 64) {
    for (i64 i = 0; i < b.rows; ++i)
      if (row_hits(b0 + b.row_bytes() * i, static_cast<i128>(b.cols) * b.es, a)) return Overlap::yes;
    return Overlap::no;
  }
  if (a.row_bytes() == b.row_bytes()) {  // one phase for every row pair
    const i128 s = a.row_bytes();
    const i128 phase = (((b0 - a0) % s) + s) % s;
    const i128 la = static_cast<i128>(a.cols) * a.es, lb = static_cast<i128>(b.cols) * b.es;
    if (phase >= la && phase + lb <= s) return Overlap::no;
  }
  return Overlap::maybe;
}

bool identical(const Mem& a, const Mem& b) {
  return a.start == b.start && a.dtype == b.dtype && a.rows == b.rows && a.cols == b.cols &&
         (a.rows == 1 || a.row_stride == b.row_stride);
}

struct Arg {
  const char* name;
  Mem mem;
  bool output;
};

// Every output against every other argument; `same_ok` pairs may be identical.
void model_overlaps(Model& md, const std::vector<Arg>& args,
                    const std::vector<std::pair<const char*, const char*>>& same_ok) {
  for (std::size_t o = 0; o < args.size(); ++o) {
    if (!args[o].output) continue;
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (i == o || (args[i].output && i > o)) continue;
      bool allowed = false;
      for (const auto& [x, y] : same_ok)
        allowed = allowed || (!std::strcmp(x, args[o].name) && !std::strcmp(y, args[i].name));
      if (allowed && args[o].mem.any && args[i].mem.any && identical(args[o].mem, args[i].mem)) continue;
      const Overlap v = overlap(args[o].mem, args[i].mem);
      if (v == Overlap::yes) md.bad();
      if (v == Overlap::maybe) md.undecided = true;
    }
  }
}

Mem workspace_mem(const Workspace& w) {
  Mem m;
  m.any = w.ptr != nullptr && w.bytes > 0;
  m.start = reinterpret_cast<std::uintptr_t>(w.ptr);
  m.dtype = DType::f8_e4m3;
  m.rows = 1;
  m.cols = static_cast<i64>(w.bytes);
  m.row_stride = m.cols;
  m.es = 1;
  return m;
}

// A workspace a call needs `need` (> 0) bytes of: present, 16-byte aligned, large enough, in
// the address space.
bool model_workspace(const Workspace& w, std::size_t need) {
  const auto p = reinterpret_cast<std::uintptr_t>(w.ptr);
  return p != 0 && p % 16 == 0 && w.bytes >= need && w.bytes <= static_cast<std::size_t>(kI64Max) &&
         static_cast<i128>(p) + w.bytes < (static_cast<i128>(1) << 64);
}

bool finite(float f) { return std::isfinite(f); }

// ---- the oracle ------------------------------------------------------------------------------

struct Expect {
  Verdict verdict;
  bool launches;  // valid: the call reaches CUDA (else it returns without)
  bool huge = false;  // a plan limit ("too many elements for one launch") may reject it
};

std::string describe(const char* op, const std::vector<std::pair<const char*, const TensorView*>>& views,
                     const std::string& extra) {
  std::string s = std::string("op ") + op + "\n";
  for (const auto& [name, t] : views) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " @%p", t->data);
    s += std::string("  ") + name + ": " + (present(*t) ? t->str() + buf : std::string("absent")) + "\n";
  }
  return s + extra;
}

[[noreturn]] void finding(const char* what, const std::string& call, const std::string& err) {
  std::fprintf(stderr, "\nFINDING: %s\n%s  error: %s\n", what, call.c_str(), err.c_str());
  std::fflush(stderr);
  std::abort();
}

void judge(const char* op, const std::vector<const char*>& arg_names, const Expect& ex,
           const std::function<void()>& call, const std::function<std::string()>& show) {
  ++tachyon_fuzz_stats[kRuns];
  const int before = tachyon_fuzz_cuda_calls;
  std::string err;
  bool threw = false;
  try {
    call();
  } catch (const Error& e) {
    threw = true;
    err = e.what();
  } catch (const std::exception& e) {
    finding("an exception other than tachyon::Error", show(), e.what());
  } catch (...) {
    finding("an exception other than tachyon::Error", show(), "(unknown)");
  }
  const bool cuda = tachyon_fuzz_cuda_calls != before;
  static const bool verbose = std::getenv("TACHYON_FUZZ_VERBOSE") != nullptr;
  if (verbose) {
    static const char* kVerdict[] = {"valid", "invalid", "undecided"};
    std::fprintf(stderr, "%s  model: %s%s; library: %s%s\n", show().c_str(), kVerdict[static_cast<int>(ex.verdict)],
                 ex.launches ? " (launches)" : "", cuda ? "reached CUDA" : threw ? "rejected" : "returned",
                 threw ? (": " + err).c_str() : "");
  }
  if (ex.verdict == Verdict::undecided) ++tachyon_fuzz_stats[kUndecided];
  if (cuda) {
    ++tachyon_fuzz_stats[kReachedCuda];
    if (ex.verdict == Verdict::invalid) finding("reached CUDA with an invalid call", show(), err);
    if (ex.verdict == Verdict::valid && !ex.launches) finding("an empty call reached CUDA", show(), err);
    if (!threw || err.find("CUDA error") == std::string::npos)
      finding("a failed CUDA call was not reported", show(), err);
    return;
  }
  if (!threw) {
    ++tachyon_fuzz_stats[kNoOp];
    if (ex.verdict == Verdict::invalid) finding("an invalid call returned without an error", show(), "");
    if (ex.verdict == Verdict::valid && ex.launches) finding("a valid non-empty call did nothing", show(), "");
    return;
  }
  ++tachyon_fuzz_stats[kRejected];
  // "<op>: <argument>: <what>"
  const std::string head = std::string(op) + ": ";
  bool named = err.compare(0, head.size(), head) == 0;
  if (named) {
    const std::size_t colon = err.find(": ", head.size());
    const std::string arg = colon == std::string::npos ? "" : err.substr(head.size(), colon - head.size());
    named = std::find(arg_names.begin(), arg_names.end(), arg) != arg_names.end();
  }
  if (!named) finding("an error that does not name the op and one of its arguments", show(), err);
  if (err.find("CUDA error") != std::string::npos) finding("a CUDA error without a CUDA call", show(), err);
  if (ex.verdict == Verdict::valid) {
    const bool overlap_msg = err.find("overlaps") != std::string::npos || err.find("same memory") != std::string::npos;
    const bool plan_limit = ex.huge && err.find("too many elements for one launch") != std::string::npos;
    if (overlap_msg) ++tachyon_fuzz_stats[kConservative];
    else if (!plan_limit) finding("a valid call was rejected", show(), err);
  }
}

// ---- the ops ------------------------------------------------------------------------------------

using Views = std::vector<std::pair<const char*, const TensorView*>>;

void fuzz_elementwise(Gen& g, int which) {
  struct Info {
    const char* op;
    int ins, outs;
    const char* names[5];
  };
  static const Info kInfo[] = {
      {"add", 2, 1, {"a", "b", "out"}},        {"mul", 2, 1, {"a", "b", "out"}},
      {"relu", 1, 1, {"x", "out"}},            {"silu", 1, 1, {"x", "out"}},
      {"gelu", 1, 1, {"x", "out"}},            {"swiglu", 2, 1, {"gate", "up", "out"}},
      {"silu_backward", 2, 1, {"dy", "x", "dx"}}, {"gelu_backward", 2, 1, {"dy", "x", "dx"}},
      {"swiglu_backward", 3, 2, {"dy", "gate", "up", "dgate", "dup"}}};
  const Info& info = kInfo[which];
  const int n = info.ins + info.outs;
  const i64 M = gen_dim(g), N = gen_dim(g);
  const DType dt = static_cast<DType>(g.pick(3));
  Ptrs ptrs;
  TensorView t[5];
  for (int i = 0; i < n; ++i) t[i] = gen_matrix(g, ptrs, i, M, N, dt, false);

  Model md;
  Mem mem[5];
  std::vector<Arg> args;
  for (int i = 0; i < n; ++i) {
    if (!is_float(t[i].dtype)) md.bad();
    if (i > 0 && (t[i].dtype != t[0].dtype || !same_shape(t[i], t[0]))) md.bad();
    if (!model_rows(t[i], kI64Max, mem[i])) md.bad();
    args.push_back({info.names[i], mem[i], i >= info.ins});
  }
  std::vector<std::pair<const char*, const char*>> same_ok;
  for (int o = info.ins; o < n; ++o)
    for (int i = 0; i < info.ins; ++i) same_ok.push_back({info.names[o], info.names[i]});
  model_overlaps(md, args, same_ok);
  const bool empty = !mem[0].any;
  Expect ex{md.verdict(), !empty};
  if (!md.invalid && !empty)  // the plan's launch limit may reject these (>= 2^40 bytes an operand)
    ex.huge = static_cast<i128>(mem[0].rows) * mem[0].cols * mem[0].es >= (static_cast<i128>(1) << 40);

  std::vector<const char*> names(info.names, info.names + n);
  auto call = [&] {
    switch (which) {
      case 0: add(t[0], t[1], t[2]); break;
      case 1: mul(t[0], t[1], t[2]); break;
      case 2: relu(t[0], t[1]); break;
      case 3: silu(t[0], t[1]); break;
      case 4: gelu(t[0], t[1]); break;
      case 5: swiglu(t[0], t[1], t[2]); break;
      case 6: silu_backward(t[0], t[1], t[2]); break;
      case 7: gelu_backward(t[0], t[1], t[2]); break;
      default: swiglu_backward(t[0], t[1], t[2], t[3], t[4]); break;
    }
  };
  Views views;
  for (int i = 0; i < n; ++i) views.push_back({info.names[i], &t[i]});
  judge(info.op, names, ex, call, [&] { return describe(info.op, views, ""); });
}

// RMSNorm (layer = false) or LayerNorm forward.
void fuzz_norm_forward(Gen& g, bool layer) {
  const char* op = layer ? "layer_norm_forward" : "rms_norm_forward";
  const i64 M = gen_dim(g), N = gen_dim(g);
  const DType dt = static_cast<DType>(g.pick(3));
  Ptrs ptrs;
  TensorView x = gen_matrix(g, ptrs, 0, M, N, dt, false);
  TensorView y = gen_matrix(g, ptrs, 1, M, N, g.pick(4) ? dt : DType::f32, false);
  TensorView weight = gen_vector(g, ptrs, 2, N, dt, true);
  TensorView bias = layer ? gen_vector(g, ptrs, 3, N, dt, true) : TensorView{};
  TensorView residual = layer ? TensorView{} : gen_matrix(g, ptrs, 4, M, N, dt, true);
  // residual_out: usually present exactly when the residual is.
  const bool out_optional = !(present(residual) && g.pick(8));
  TensorView residual_out = layer ? TensorView{} : gen_matrix(g, ptrs, 5, M, N, dt, out_optional);
  TensorView mean = layer ? gen_vector(g, ptrs, 6, M, DType::f32, true) : TensorView{};
  TensorView rstd = gen_vector(g, ptrs, 7, M, DType::f32, true);
  const float eps = gen_float(g, 1e-5f), offset = layer ? 0.f : gen_float(g, 0.f);

  Model md;
  Mem mx, my, mw, mb, mr, mro, mm, ms;
  if (!is_float(x.dtype) || !model_rows(x, kLimit, mx)) md.bad();
  if (!is_float(y.dtype) || !same_shape(y, x) || !model_rows(y, kLimit, my)) md.bad();
  // The model's M and N are x's, when x is valid.
  i64 xm = 0, xn = 0, xr = 0;
  if (!md.invalid) {
    extents(x, 1, xn, xr);
    xm = xr;
    xn = x.shape[x.rank - 1];
  }
  auto vec = [&](const TensorView& t, i64 n, bool f32_only, Mem& m) {
    if (!present(t)) return;
    if (f32_only ? t.dtype != DType::f32 : !is_float(t.dtype)) md.bad();
    if (!model_vector(t, n, m)) md.bad();
  };
  vec(weight, xn, false, mw);
  vec(bias, xn, false, mb);
  vec(mean, xm, true, mm);
  vec(rstd, xm, true, ms);
  if (!finite(eps) || eps < 0.f || !finite(offset)) md.bad();
  if (present(residual) != present(residual_out)) md.bad();
  if (present(residual)) {
    if (!is_float(residual.dtype) || !same_shape(residual, x) || !model_rows(residual, kLimit, mr)) md.bad();
    if (!is_float(residual_out.dtype) || !same_shape(residual_out, x) || !model_rows(residual_out, kLimit, mro))
      md.bad();
  }
  model_overlaps(md,
                 {{"x", mx, false}, {"weight", mw, false}, {"bias", mb, false}, {"residual", mr, false},
                  {"y", my, true}, {"residual_out", mro, true}, {"mean", mm, true}, {"rstd", ms, true}},
                 {{"y", "x"}, {"y", "residual"}, {"residual_out", "residual"}, {"residual_out", "x"}});
  const Expect ex{md.verdict(), xm > 0 && xn > 0};
  const std::vector<const char*> names = {"x",    "weight", "bias", "residual", "y", "residual_out",
                                          "mean", "rstd",   "eps",  "weight_offset"};
  auto call = [&] {
    if (layer) {
      LayerNormForward a;
      a.x = x, a.weight = weight, a.bias = bias, a.y = y, a.mean = mean, a.rstd = rstd, a.eps = eps;
      layer_norm_forward(a);
    } else {
      RmsNormForward a;
      a.x = x, a.weight = weight, a.residual = residual, a.y = y, a.residual_out = residual_out, a.rstd = rstd;
      a.eps = eps, a.weight_offset = offset;
      rms_norm_forward(a);
    }
  };
  judge(op, names, ex, call, [&] {
    return describe(op, {{"x", &x}, {"weight", &weight}, {"bias", &bias}, {"residual", &residual}, {"y", &y},
                         {"residual_out", &residual_out}, {"mean", &mean}, {"rstd", &rstd}},
                    "  eps " + std::to_string(eps) + " weight_offset " + std::to_string(offset) + "\n");
  });
}

// RMSNorm / LayerNorm backward, or (query) its workspace size query.
void fuzz_norm_backward(Gen& g, bool layer, bool query) {
  const char* op = layer ? "layer_norm_backward" : "rms_norm_backward";
  const i64 M = gen_dim(g), N = gen_dim(g);
  const DType dt = static_cast<DType>(g.pick(3));
  Ptrs ptrs;
  TensorView x = gen_matrix(g, ptrs, 0, M, N, dt, false);
  TensorView dy = gen_matrix(g, ptrs, 1, M, N, g.pick(4) ? dt : static_cast<DType>(g.pick(3)), false);
  TensorView dx = gen_matrix(g, ptrs, 2, M, N, g.pick(4) ? dt : DType::f32, false);
  TensorView weight = gen_vector(g, ptrs, 3, N, g.pick(2) ? dt : DType::f32, true);
  TensorView mean = layer ? gen_vector(g, ptrs, 4, M, DType::f32, g.pick(8) == 0) : TensorView{};
  TensorView rstd = gen_vector(g, ptrs, 5, M, DType::f32, g.pick(8) == 0);
  TensorView dresidual = layer ? TensorView{} : gen_matrix(g, ptrs, 6, M, N, dt, true);
  TensorView dw = gen_vector(g, ptrs, 7, N, DType::f32, true);
  TensorView db = layer ? gen_vector(g, ptrs, 8, N, DType::f32, true) : TensorView{};
  const float offset = layer ? 0.f : gen_float(g, 0.f);
  const int sums_guess = (present(dw) ? 1 : 0) + (present(db) ? 1 : 0);
  // Typically room for 64 row groups of partials.
  const std::size_t typical = static_cast<std::size_t>(std::max<i64>(N, 0) % (1 << 20)) * 4 * 64 * std::max(sums_guess, 1);
  const Workspace ws = gen_workspace(g, ptrs, 9, typical);

  Model md;
  Mem mx, mdy, mdx, mw, mm, ms, mdr, mdw, mdb, mws;
  if (!is_float(x.dtype) || !model_rows(x, kLimit, mx)) md.bad();
  // dy: x's dtype, or any float dtype beside fp32 x (a 16-bit y's gradient).
  const bool dy_dtype_ok = x.dtype == DType::f32 ? is_float(dy.dtype) : dy.dtype == x.dtype;
  if (!dy_dtype_ok || !same_shape(dy, x) || !model_rows(dy, kLimit, mdy)) md.bad();
  if (!is_float(dx.dtype) || !same_shape(dx, x) || !model_rows(dx, kLimit, mdx)) md.bad();
  i64 xm = 0, xn = 0;
  if (!md.invalid) {
    i64 n;
    extents(x, 1, n, xm);
    xn = x.shape[x.rank - 1];
  }
  auto vec = [&](const TensorView& t, i64 n, bool f32_only, bool required, Mem& m) {
    if (!present(t)) {
      if (required) md.bad();
      return;
    }
    if (f32_only ? t.dtype != DType::f32 : !is_float(t.dtype)) md.bad();
    if (!model_vector(t, n, m)) md.bad();
  };
  vec(weight, xn, false, false, mw);
  if (layer) vec(mean, xm, true, true, mm);
  vec(rstd, xm, true, true, ms);
  vec(dw, xn, false, false, mdw);
  vec(db, xn, false, false, mdb);
  if (present(dw) && !present(weight)) md.bad();
  if (!finite(offset)) md.bad();
  if (present(dresidual) && (!is_float(dresidual.dtype) || !same_shape(dresidual, x) || !model_rows(dresidual, kLimit, mdr)))
    md.bad();
  const bool empty = xm == 0 || xn == 0;
  const int sums = (present(dw) ? 1 : 0) + (present(db) ? 1 : 0);
  if (!query && !empty && sums > 0) {
    if (!model_workspace(ws, static_cast<std::size_t>(xn) * 4 * sums)) md.bad();
    mws = workspace_mem(ws);
  }
  model_overlaps(md,
                 {{"x", mx, false}, {"weight", mw, false}, {"mean", mm, false}, {"rstd", ms, false},
                  {"dy", mdy, false}, {"dresidual", mdr, false}, {"dx", mdx, true}, {"dw", mdw, true},
                  {"db", mdb, true}, {"workspace", mws, true}},
                 {{"dx", "dy"}, {"dx", "x"}, {"dx", "dresidual"}});
  const Expect ex{md.verdict(), query ? (!empty && sums > 0) : !empty};
  const std::vector<const char*> names = {"x", "weight", "mean", "rstd", "dy", "dresidual", "dx", "dw", "db",
                                          "weight_offset", "workspace", "workspace_bytes"};
  auto call = [&] {
    std::size_t got = 0;
    if (layer) {
      LayerNormBackward a;
      a.x = x, a.weight = weight, a.mean = mean, a.rstd = rstd, a.dy = dy, a.dx = dx, a.dw = dw, a.db = db;
      a.workspace = ws.ptr, a.workspace_bytes = ws.bytes;
      if (query) got = layer_norm_backward_workspace_bytes(a);
      else layer_norm_backward(a);
    } else {
      RmsNormBackward a;
      a.x = x, a.weight = weight, a.rstd = rstd, a.dy = dy, a.dresidual = dresidual, a.dx = dx, a.dw = dw;
      a.weight_offset = offset, a.workspace = ws.ptr, a.workspace_bytes = ws.bytes;
      if (query) got = rms_norm_backward_workspace_bytes(a);
      else rms_norm_backward(a);
    }
    if (query && got != 0) finding("a workspace size without the device", "", std::to_string(got));
  };
  judge(op, names, ex, call, [&] {
    char buf[96];
    std::snprintf(buf, sizeof buf, "  workspace %p bytes %zu query %d offset %g\n", ws.ptr, ws.bytes, query, offset);
    return describe(op, {{"x", &x}, {"weight", &weight}, {"mean", &mean}, {"rstd", &rstd}, {"dy", &dy},
                         {"dresidual", &dresidual}, {"dx", &dx}, {"dw", &dw}, {"db", &db}},
                    buf);
  });
}

void fuzz_softmax(Gen& g, bool backward) {
  const char* op = backward ? "softmax_backward" : "softmax_forward";
  const i64 M = gen_dim(g), N = gen_dim(g);
  const DType dt = static_cast<DType>(g.pick(3));
  Ptrs ptrs;
  TensorView a = gen_matrix(g, ptrs, 0, M, N, dt, false);                                  // x or y
  TensorView b = gen_matrix(g, ptrs, 1, M, N, g.pick(4) ? dt : DType::f32, false);         // y or dy
  TensorView c = backward ? gen_matrix(g, ptrs, 2, M, N, g.pick(4) ? dt : DType::f32, false) : TensorView{};
  const bool log = g.pick(2);
  Model md;
  Mem ma, mb, mc;
  if (!is_float(a.dtype) || !model_rows(a, kLimit, ma)) md.bad();
  if (backward) {
    if (b.dtype != a.dtype || !same_shape(b, a) || !model_rows(b, kLimit, mb)) md.bad();
    if (!is_float(c.dtype) || !same_shape(c, a) || !model_rows(c, kLimit, mc)) md.bad();
    model_overlaps(md, {{"y", ma, false}, {"dy", mb, false}, {"dx", mc, true}}, {{"dx", "dy"}, {"dx", "y"}});
  } else {
    if (!is_float(b.dtype) || !same_shape(b, a) || !model_rows(b, kLimit, mb)) md.bad();
    model_overlaps(md, {{"x", ma, false}, {"y", mb, true}}, {{"y", "x"}});
  }
  const Expect ex{md.verdict(), ma.any};
  auto call = [&] {
    if (backward) {
      SoftmaxBackward s;
      s.y = a, s.dy = b, s.dx = c, s.log = log;
      softmax_backward(s);
    } else {
      SoftmaxForward s;
      s.x = a, s.y = b, s.log = log;
      softmax_forward(s);
    }
  };
  judge(op, backward ? std::vector<const char*>{"y", "dy", "dx"} : std::vector<const char*>{"x", "y"}, ex, call, [&] {
    return backward ? describe(op, {{"y", &a}, {"dy", &b}, {"dx", &c}}, "")
                    : describe(op, {{"x", &a}, {"y", &b}}, "");
  });
}

constexpr std::size_t kCountBytes = 256 * ((detail::kCountParts * sizeof(int) + 255) / 256);
std::size_t round256(std::size_t b) { return (b + 255) / 256 * 256; }

Reduction gen_reduction(Gen& g) {
  const int m = g.pick(16);
  if (m < 5) return Reduction::mean;
  if (m < 10) return Reduction::none;
  if (m < 15) return Reduction::sum;
  return static_cast<Reduction>(static_cast<int>(g.u8()) - 3);
}

// logits, target: the rules both cross-entropy passes share. Returns M (x's rows) and N.
void model_logits(Model& md, const TensorView& logits, const TensorView& target, Mem& ml, Mem& mt, i64& M, i64& N) {
  M = N = 0;
  if (!is_float(logits.dtype) || !model_rows(logits, kLimit, ml)) {
    md.bad();
    return;
  }
  i64 n;
  extents(logits, 1, n, M);
  N = logits.shape[logits.rank - 1];
  if (M > 0 && N == 0) md.bad();
  if (!present(target) || (target.dtype != DType::i32 && target.dtype != DType::i64) || !model_vector(target, M, mt))
    md.bad();
}

void fuzz_ce_forward(Gen& g, bool query) {
  const char* op = "cross_entropy_forward";
  const i64 M = gen_dim(g), N = gen_dim(g);
  const DType dt = static_cast<DType>(g.pick(3));
  const Reduction red = gen_reduction(g);
  Ptrs ptrs;
  TensorView logits = gen_matrix(g, ptrs, 0, M, N, dt, false);
  TensorView target = gen_vector(g, ptrs, 1, M, g.pick(2) ? DType::i64 : DType::i32, g.pick(16) == 0);
  TensorView loss = gen_vector(g, ptrs, 2, red == Reduction::none ? M : 1, DType::f32, g.pick(16) == 0);
  TensorView lse = gen_vector(g, ptrs, 3, M, DType::f32, true);
  TensorView dlogits = gen_matrix(g, ptrs, 4, M, N, dt, true);
  const float smoothing = gen_float(g, 0.f), grad = gen_float(g, 1.f);
  const std::int64_t ignore = g.pick(4) ? -100 : any_int(g);
  const bool valid_red = red == Reduction::none || red == Reduction::sum || red == Reduction::mean;
  std::size_t need = 0;
  Model md;
  Mem ml, mt, mloss, mlse, mdl, mws;
  i64 xm = 0, xn = 0;
  if (!valid_red) md.bad();
  model_logits(md, logits, target, ml, mt, xm, xn);
  if (!present(loss) || loss.dtype != DType::f32 || !model_vector(loss, red == Reduction::none ? xm : 1, mloss)) md.bad();
  if (present(lse) && (lse.dtype != DType::f32 || !model_vector(lse, xm, mlse))) md.bad();
  if (!finite(smoothing) || smoothing < 0.f || smoothing > 1.f || !finite(grad)) md.bad();
  if (present(dlogits) && (dlogits.dtype != logits.dtype || !same_shape(dlogits, logits) || !model_rows(dlogits, kLimit, mdl)))
    md.bad();
  if (valid_red && !md.invalid) {
    if (red == Reduction::mean) need += kCountBytes;
    if (red != Reduction::none) need += round256(static_cast<std::size_t>(xm) * sizeof(float));
  }
  const Workspace ws = gen_workspace(g, ptrs, 5, need);
  if (!query && need > 0) {
    if (!model_workspace(ws, need)) md.bad();
    mws = workspace_mem(ws);
  }
  model_overlaps(md,
                 {{"logits", ml, false}, {"target", mt, false}, {"loss", mloss, true}, {"lse", mlse, true},
                  {"dlogits", mdl, true}, {"workspace", mws, true}},
                 {{"dlogits", "logits"}});
  const Expect ex{md.verdict(), !query && !(xm == 0 && red == Reduction::none)};
  const std::vector<const char*> names = {"logits", "target", "loss", "lse", "dlogits", "reduction", "label_smoothing",
                                          "grad_output", "workspace", "workspace_bytes"};
  auto call = [&] {
    CrossEntropyForward a;
    a.logits = logits, a.target = target, a.loss = loss, a.lse = lse, a.dlogits = dlogits;
    a.reduction = red, a.ignore_index = ignore, a.label_smoothing = smoothing, a.grad_output = grad;
    a.workspace = ws.ptr, a.workspace_bytes = ws.bytes;
    if (query) {
      const std::size_t got = cross_entropy_forward_workspace_bytes(a);
      if (md.verdict() == Verdict::valid && got != need)
        finding("cross_entropy_forward_workspace_bytes differs from the layout", "", std::to_string(got));
    } else {
      cross_entropy_forward(a);
    }
  };
  judge(op, names, ex, call, [&] {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  reduction %d smoothing %g grad %g workspace %p bytes %zu need %zu query %d\n",
                  static_cast<int>(red), smoothing, grad, ws.ptr, ws.bytes, need, query);
    return describe(op, {{"logits", &logits}, {"target", &target}, {"loss", &loss}, {"lse", &lse}, {"dlogits", &dlogits}},
                    buf);
  });
}

void fuzz_ce_backward(Gen& g, bool query) {
  const char* op = "cross_entropy_backward";
  const i64 M = gen_dim(g), N = gen_dim(g);
  const DType dt = static_cast<DType>(g.pick(3));
  const Reduction red = gen_reduction(g);
  Ptrs ptrs;
  TensorView logits = gen_matrix(g, ptrs, 0, M, N, dt, false);
  TensorView target = gen_vector(g, ptrs, 1, M, g.pick(2) ? DType::i64 : DType::i32, g.pick(16) == 0);
  TensorView lse = gen_vector(g, ptrs, 2, M, DType::f32, g.pick(16) == 0);
  TensorView dloss = gen_vector(g, ptrs, 3, red == Reduction::none ? M : 1, g.pick(2) ? DType::f32 : dt, true);
  TensorView dlogits = gen_matrix(g, ptrs, 4, M, N, dt, g.pick(16) == 0);
  const float smoothing = gen_float(g, 0.f);
  const bool valid_red = red == Reduction::none || red == Reduction::sum || red == Reduction::mean;
  Model md;
  Mem ml, mt, mlse, mdloss, mdl, mws;
  i64 xm = 0, xn = 0;
  if (!valid_red) md.bad();
  model_logits(md, logits, target, ml, mt, xm, xn);
  if (!present(lse) || lse.dtype != DType::f32 || !model_vector(lse, xm, mlse)) md.bad();
  if (present(dloss) && (!is_float(dloss.dtype) || !model_vector(dloss, red == Reduction::none ? xm : 1, mdloss)))
    md.bad();
  if (!finite(smoothing) || smoothing < 0.f || smoothing > 1.f) md.bad();
  if (!present(dlogits) || dlogits.dtype != logits.dtype || !same_shape(dlogits, logits) ||
      !model_rows(dlogits, kLimit, mdl))
    md.bad();
  const std::size_t need = valid_red && red == Reduction::mean ? kCountBytes : 0;
  const Workspace ws = gen_workspace(g, ptrs, 5, need);
  if (!query && need > 0) {
    if (!model_workspace(ws, need)) md.bad();
    mws = workspace_mem(ws);
  }
  model_overlaps(md,
                 {{"logits", ml, false}, {"target", mt, false}, {"lse", mlse, false}, {"dloss", mdloss, false},
                  {"dlogits", mdl, true}, {"workspace", mws, true}},
                 {{"dlogits", "logits"}});
  const Expect ex{md.verdict(), !query && xm > 0};
  const std::vector<const char*> names = {"logits", "target", "lse", "dloss", "dlogits", "reduction", "label_smoothing",
                                          "workspace", "workspace_bytes"};
  auto call = [&] {
    CrossEntropyBackward a;
    a.logits = logits, a.target = target, a.lse = lse, a.dloss = dloss, a.dlogits = dlogits;
    a.reduction = red, a.label_smoothing = smoothing, a.workspace = ws.ptr, a.workspace_bytes = ws.bytes;
    if (query) {
      const std::size_t got = cross_entropy_backward_workspace_bytes(a);
      if (md.verdict() == Verdict::valid && got != need)
        finding("cross_entropy_backward_workspace_bytes differs from the layout", "", std::to_string(got));
    } else {
      cross_entropy_backward(a);
    }
  };
  judge(op, names, ex, call, [&] {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  reduction %d smoothing %g workspace %p bytes %zu query %d\n",
                  static_cast<int>(red), smoothing, ws.ptr, ws.bytes, query);
    return describe(op, {{"logits", &logits}, {"target", &target}, {"lse", &lse}, {"dloss", &dloss}, {"dlogits", &dlogits}},
                    buf);
  });
}

void fuzz_lse_combine(Gen& g) {
  const char* op = "lse_combine";
  const i64 S = gen_dim(g), M = gen_dim(g);
  Ptrs ptrs;
  TensorView partial = gen_matrix(g, ptrs, 0, S, M, DType::f32, false);
  TensorView lse = gen_vector(g, ptrs, 1, M, DType::f32, g.pick(16) == 0);
  Model md;
  Mem mp, ml;
  i64 cols = 0;
  if (partial.dtype != DType::f32 || !model_rows(partial, kLimit, mp)) md.bad();
  else cols = partial.shape[partial.rank - 1];
  if (!present(lse) || lse.dtype != DType::f32 || !model_vector(lse, cols, ml)) md.bad();
  model_overlaps(md, {{"partial", mp, false}, {"lse", ml, true}}, {});
  const Expect ex{md.verdict(), cols > 0};
  auto call = [&] {
    LseCombine a;
    a.partial = partial, a.lse = lse;
    lse_combine(a);
  };
  judge(op, {"partial", "lse"}, ex, call, [&] { return describe(op, {{"partial", &partial}, {"lse", &lse}}, ""); });
}

void fuzz_gemm(Gen& g) {
  const char* op = "gemm";
  const i64 M = gen_dim(g), N = gen_dim(g), K = gen_dim(g);
  const DType in = g.pick(2) ? DType::f16 : DType::bf16;
  const DType out = static_cast<DType>(g.pick(3));
  BLayout layout = g.pick(2) ? BLayout::kn : BLayout::nk;
  if (g.pick(32) == 0) layout = static_cast<BLayout>(g.u8());
  const bool nk = layout == BLayout::nk;
  Ptrs ptrs;
  TensorView a = gen_matrix(g, ptrs, 0, M, K, in, g.pick(32) == 0);
  TensorView b = nk ? gen_matrix(g, ptrs, 1, N, K, in, g.pick(32) == 0) : gen_matrix(g, ptrs, 1, K, N, in, g.pick(32) == 0);
  TensorView d = gen_matrix(g, ptrs, 2, M, N, out, g.pick(32) == 0);
  TensorView c = gen_matrix(g, ptrs, 3, M, N, out, true);
  if (present(c) && g.pick(4) == 0) c = d;
  TensorView bias = gen_vector(g, ptrs, 4, N, static_cast<DType>(g.pick(3)), true);
  const float alpha = gen_float(g, 1.f), beta = gen_float(g, present(c) ? 1.f : 0.f);
  Activation act = static_cast<Activation>(g.pick(4));
  if (g.pick(32) == 0) act = static_cast<Activation>(g.u8());
  Model md;
  Mem ma, mb, md_, mc, mbias;
  i64 m = 0, n = 0, k = 0;
  auto bf = [](DType t) { return t == DType::bf16 || t == DType::f16; };
  if (!present(a) || !bf(a.dtype) || !model_rows(a, kLimit, ma)) md.bad();
  if (!present(b) || !bf(b.dtype) || b.dtype != a.dtype || b.rank != 2 || !model_rows(b, kLimit, mb)) md.bad();
  if (layout != BLayout::nk && layout != BLayout::kn) md.bad();
  if (!md.invalid) {
    i64 cnt;
    extents(a, 1, cnt, m);
    k = a.shape[a.rank - 1];
    n = nk ? b.shape[0] : b.shape[1];
    const i64 bk = nk ? b.shape[1] : b.shape[0];
    if (m > kLimit || n > kLimit || bk != k) md.bad();
  }
  if (!present(d) || !is_float(d.dtype) || !model_rows(d, kLimit, md_)) md.bad();
  if (!md.invalid) {
    i64 cnt, drows;
    extents(d, 1, cnt, drows);
    if (drows != m || d.shape[d.rank - 1] != n) md.bad();
  }
  if (present(c)) {
    if (c.dtype != d.dtype || !model_rows(c, kLimit, mc)) md.bad();
    else {
      i64 cnt, crows;
      extents(c, 1, cnt, crows);
      if (crows != m || c.shape[c.rank - 1] != n) md.bad();
    }
  }
  if (!finite(alpha) || !finite(beta) || (beta != 0.f && !present(c))) md.bad();
  if (present(bias) && (!is_float(bias.dtype) || !model_vector(bias, n, mbias))) md.bad();
  if (static_cast<int>(act) < 0 || static_cast<int>(act) > 3) md.bad();
  model_overlaps(md, {{"a", ma, false}, {"b", mb, false}, {"c", mc, false}, {"bias", mbias, false}, {"d", md_, true}},
                 {{"d", "c"}});
  const Expect ex{md.verdict(), m > 0 && n > 0};
  const std::vector<const char*> names = {"a", "b", "c", "d", "bias", "alpha", "beta", "b_layout", "activation"};
  auto call = [&] {
    GemmArgs ga;
    ga.a = a, ga.b = b, ga.c = c, ga.d = d, ga.bias = bias, ga.b_layout = layout, ga.alpha = alpha, ga.beta = beta;
    ga.activation = act;
    gemm(ga);
  };
  judge(op, names, ex, call, [&] {
    char buf[128];
    std::snprintf(buf, sizeof buf, "  layout %d alpha %g beta %g activation %d\n", static_cast<int>(layout), alpha,
                  beta, static_cast<int>(act));
    return describe(op, {{"a", &a}, {"b", &b}, {"c", &c}, {"d", &d}, {"bias", &bias}}, buf);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Gen g{data, size};
  const int op = g.pick(23);
  if (op < 9) fuzz_elementwise(g, op);
  else if (op == 9) fuzz_norm_forward(g, false);
  else if (op == 10) fuzz_norm_forward(g, true);
  else if (op == 11) fuzz_norm_backward(g, false, false);
  else if (op == 12) fuzz_norm_backward(g, true, false);
  else if (op == 13) fuzz_norm_backward(g, false, true);
  else if (op == 14) fuzz_norm_backward(g, true, true);
  else if (op == 15) fuzz_softmax(g, false);
  else if (op == 16) fuzz_softmax(g, true);
  else if (op == 17) fuzz_ce_forward(g, false);
  else if (op == 18) fuzz_ce_forward(g, true);
  else if (op == 19) fuzz_ce_backward(g, false);
  else if (op == 20) fuzz_ce_backward(g, true);
  else if (op == 21) fuzz_lse_combine(g);
  else fuzz_gemm(g);
  return 0;
}

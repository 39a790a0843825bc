// Every public op against every class of bad argument (issue #26), table-driven: null data,
// dtype (unsupported and not a DType at all), shape, rank, negative extents, overflowing
// extents, inner stride, negative / zero / too small / overflowing row strides, misaligned
// and address-wrapping pointers, every overlapping pair (output, other argument) with the
// in-place pairs the headers allow, scalars out of range or not finite, enum values,
// workspaces null / short / misaligned / wrapping / overlapping, target dtype and length.
// Each bad call must throw a tachyon::Error that names the op and the argument and is not a
// CUDA error: no CUDA call was made (on the GPU-less CI machine any CUDA call fails). Each
// case's unmodified call must pass validation and reach CUDA.
#include <gtest/gtest.h>

#include "common/api_test.h"

#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tachyon/tachyon.h"

namespace tachyon {
namespace {

using test::expect_error;
using test::expect_reaches_cuda;
using test::fake;

// Tensor i of a case lives at its own 16 MiB-aligned fake address.
void* at(int i) { return fake(0x1000000ull * static_cast<std::uintptr_t>(i + 1)); }

struct Slot {
  const char* name;
  TensorView* view;
  bool output;
  DType bad_dtype;         // a dtype this argument does not take
  bool reference = false;  // other arguments' shapes derive from it
};

struct Scalar {
  const char* name;
  float* value;
  std::vector<float> bad;
};

struct OpCase {
  std::string op;
  std::string label;
  std::function<void()> reset;  // back to the valid call
  std::function<void()> call;
  std::vector<Slot> slots;
  std::vector<std::pair<std::string, std::string>> in_place;  // (output, other) that may be the same memory
  std::vector<Scalar> scalars;
  // Other invalid calls: (argument the error must name, mutation of the valid call).
  std::vector<std::pair<const char*, std::function<void()>>> extra;
  void** ws = nullptr;  // the call's workspace, when it takes one
  std::size_t* ws_bytes = nullptr;
};

constexpr float kNaN = NAN, kInf = INFINITY;

// Holds a case's argument struct; the slots point into it, reset() restores it in place.
template <class Args>
std::shared_ptr<Args> holder(OpCase& c, std::function<Args()> make) {
  auto h = std::make_shared<Args>(make());
  c.reset = [h, make] { *h = make(); };
  return h;
}

// ---- the cases ----------------------------------------------------------------------------

struct EwViews {
  TensorView t[5];
};

OpCase elementwise_case(const char* op, std::vector<const char*> ins, std::vector<const char*> outs,
                        std::function<void(const EwViews&)> run) {
  OpCase c;
  c.op = op;
  const int n = static_cast<int>(ins.size() + outs.size());
  auto h = holder<EwViews>(c, [n] {
    EwViews v;
    for (int i = 0; i < n; ++i) v.t[i] = view(at(i), DType::bf16, {8, 64});
    return v;
  });
  c.call = [h, run] { run(*h); };
  int i = 0;
  for (const char* name : ins) c.slots.push_back({name, &h->t[i], false, DType::i32, i == 0}), ++i;
  for (const char* name : outs) c.slots.push_back({name, &h->t[i++], true, DType::i32});
  for (const char* o : outs)
    for (const char* in : ins) c.in_place.push_back({o, in});
  return c;
}

OpCase rms_forward_case() {
  OpCase c;
  c.op = "rms_norm_forward";
  auto h = holder<RmsNormForward>(c, [] {
    RmsNormForward a;
    a.x = view(at(0), DType::bf16, {8, 64});
    a.weight = view(at(1), DType::bf16, {64});
    a.residual = view(at(2), DType::bf16, {8, 64});
    a.y = view(at(3), DType::bf16, {8, 64});
    a.residual_out = view(at(4), DType::bf16, {8, 64});
    a.rstd = view(at(5), DType::f32, {8});
    return a;
  });
  c.call = [h] { rms_norm_forward(*h); };
  c.slots = {{"x", &h->x, false, DType::i32, true},  {"weight", &h->weight, false, DType::i32},
             {"residual", &h->residual, false, DType::i32}, {"y", &h->y, true, DType::i32},
             {"residual_out", &h->residual_out, true, DType::i32}, {"rstd", &h->rstd, true, DType::bf16}};
  c.in_place = {{"y", "x"}, {"y", "residual"}, {"residual_out", "residual"}, {"residual_out", "x"}};
  c.scalars = {{"eps", &h->eps, {kNaN, -1.f, kInf, -kInf}}, {"weight_offset", &h->weight_offset, {kNaN, kInf, -kInf}}};
  c.extra = {{"residual_out", [h] { h->residual_out = {}; }}, {"residual", [h] { h->residual = {}; }}};
  return c;
}

OpCase layer_forward_case() {
  OpCase c;
  c.op = "layer_norm_forward";
  auto h = holder<LayerNormForward>(c, [] {
    LayerNormForward a;
    a.x = view(at(0), DType::f32, {8, 64});
    a.weight = view(at(1), DType::f32, {64});
    a.bias = view(at(2), DType::bf16, {64});
    a.y = view(at(3), DType::f32, {8, 64});
    a.mean = view(at(4), DType::f32, {8});
    a.rstd = view(at(5), DType::f32, {8});
    return a;
  });
  c.call = [h] { layer_norm_forward(*h); };
  c.slots = {{"x", &h->x, false, DType::i64, true}, {"weight", &h->weight, false, DType::i32},
             {"bias", &h->bias, false, DType::f8_e4m3}, {"y", &h->y, true, DType::i32},
             {"mean", &h->mean, true, DType::f16}, {"rstd", &h->rstd, true, DType::bf16}};
  c.in_place = {{"y", "x"}};
  c.scalars = {{"eps", &h->eps, {kNaN, -1e-5f, kInf}}};
  return c;
}

OpCase rms_backward_case() {
  OpCase c;
  c.op = "rms_norm_backward";
  auto h = holder<RmsNormBackward>(c, [] {
    RmsNormBackward a;
    a.x = view(at(0), DType::bf16, {8, 64});
    a.weight = view(at(1), DType::f32, {64});
    a.rstd = view(at(2), DType::f32, {8});
    a.dy = view(at(3), DType::bf16, {8, 64});
    a.dresidual = view(at(4), DType::bf16, {8, 64});
    a.dx = view(at(5), DType::bf16, {8, 64});
    a.dw = view(at(6), DType::f32, {64});
    a.workspace = at(7);
    a.workspace_bytes = 1 << 20;
    return a;
  });
  c.call = [h] { rms_norm_backward(*h); };
  c.slots = {{"x", &h->x, false, DType::i32, true}, {"weight", &h->weight, false, DType::i32},
             {"rstd", &h->rstd, false, DType::f16},  {"dy", &h->dy, false, DType::f32},
             {"dresidual", &h->dresidual, false, DType::i32}, {"dx", &h->dx, true, DType::i32},
             {"dw", &h->dw, true, DType::i64}};
  c.in_place = {{"dx", "dy"}, {"dx", "x"}, {"dx", "dresidual"}};
  c.scalars = {{"weight_offset", &h->weight_offset, {kNaN, kInf}}};
  c.extra = {{"dw", [h] { h->weight = {}; }}, {"rstd", [h] { h->rstd = {}; }}, {"dx", [h] { h->dx = {}; }}};
  c.ws = &h->workspace;
  c.ws_bytes = &h->workspace_bytes;
  return c;
}

OpCase layer_backward_case() {
  OpCase c;
  c.op = "layer_norm_backward";
  auto h = holder<LayerNormBackward>(c, [] {
    LayerNormBackward a;
    a.x = view(at(0), DType::f16, {8, 64});
    a.weight = view(at(1), DType::f16, {64});
    a.mean = view(at(2), DType::f32, {8});
    a.rstd = view(at(3), DType::f32, {8});
    a.dy = view(at(4), DType::f16, {8, 64});
    a.dx = view(at(5), DType::f16, {8, 64});
    a.dw = view(at(6), DType::f16, {64});
    a.db = view(at(7), DType::f32, {64});
    a.workspace = at(8);
    a.workspace_bytes = 1 << 20;
    return a;
  });
  c.call = [h] { layer_norm_backward(*h); };
  c.slots = {{"x", &h->x, false, DType::i32, true}, {"weight", &h->weight, false, DType::i32},
             {"mean", &h->mean, false, DType::bf16}, {"rstd", &h->rstd, false, DType::f16},
             {"dy", &h->dy, false, DType::bf16},     {"dx", &h->dx, true, DType::i32},
             {"dw", &h->dw, true, DType::i32},       {"db", &h->db, true, DType::i64}};
  c.in_place = {{"dx", "dy"}, {"dx", "x"}};
  c.extra = {{"mean", [h] { h->mean = {}; }}, {"rstd", [h] { h->rstd = {}; }}};
  c.ws = &h->workspace;
  c.ws_bytes = &h->workspace_bytes;
  return c;
}

OpCase softmax_forward_case() {
  OpCase c;
  c.op = "softmax_forward";
  auto h = holder<SoftmaxForward>(c, [] {
    SoftmaxForward a;
    a.x = view(at(0), DType::bf16, {8, 64});
    a.y = view(at(1), DType::f32, {8, 64});
    return a;
  });
  c.call = [h] { softmax_forward(*h); };
  c.slots = {{"x", &h->x, false, DType::i32, true}, {"y", &h->y, true, DType::i64}};
  c.in_place = {{"y", "x"}};
  return c;
}

OpCase softmax_backward_case() {
  OpCase c;
  c.op = "softmax_backward";
  auto h = holder<SoftmaxBackward>(c, [] {
    SoftmaxBackward a;
    a.y = view(at(0), DType::f32, {8, 64});
    a.dy = view(at(1), DType::f32, {8, 64});
    a.dx = view(at(2), DType::f32, {8, 64});
    a.log = true;
    return a;
  });
  c.call = [h] { softmax_backward(*h); };
  c.slots = {{"y", &h->y, false, DType::i32, true}, {"dy", &h->dy, false, DType::bf16},
             {"dx", &h->dx, true, DType::i32}};
  c.in_place = {{"dx", "dy"}, {"dx", "y"}};
  return c;
}

OpCase ce_forward_case(Reduction red) {
  OpCase c;
  c.op = "cross_entropy_forward";
  c.label = red == Reduction::none ? "none" : red == Reduction::sum ? "sum" : "mean";
  auto h = holder<CrossEntropyForward>(c, [red] {
    CrossEntropyForward a;
    a.logits = view(at(0), DType::bf16, {8, 64});
    a.target = view(at(1), DType::i64, {8});
    a.loss = red == Reduction::none ? view(at(2), DType::f32, {8}) : view(at(2), DType::f32, {});
    a.lse = view(at(3), DType::f32, {8});
    a.dlogits = view(at(4), DType::bf16, {8, 64});
    a.reduction = red;
    a.label_smoothing = 0.1f;
    if (red != Reduction::none) {
      a.workspace = at(5);
      a.workspace_bytes = 1 << 20;
    }
    return a;
  });
  c.call = [h] { cross_entropy_forward(*h); };
  c.slots = {{"logits", &h->logits, false, DType::i32, true}, {"target", &h->target, false, DType::f32},
             {"loss", &h->loss, true, DType::bf16}, {"lse", &h->lse, true, DType::f16},
             {"dlogits", &h->dlogits, true, DType::f32}};
  c.in_place = {{"dlogits", "logits"}};
  c.scalars = {{"label_smoothing", &h->label_smoothing, {kNaN, -0.1f, 1.5f, kInf}},
               {"grad_output", &h->grad_output, {kNaN, kInf, -kInf}}};
  c.extra = {{"reduction", [h] { h->reduction = static_cast<Reduction>(7); }}, {"loss", [h] { h->loss = {}; }}};
  if (red != Reduction::none) {
    c.ws = &h->workspace;
    c.ws_bytes = &h->workspace_bytes;
  }
  return c;
}

OpCase ce_backward_case(Reduction red) {
  OpCase c;
  c.op = "cross_entropy_backward";
  c.label = red == Reduction::none ? "none" : "mean";
  auto h = holder<CrossEntropyBackward>(c, [red] {
    CrossEntropyBackward a;
    a.logits = view(at(0), DType::f16, {8, 64});
    a.target = view(at(1), DType::i32, {8});
    a.lse = view(at(2), DType::f32, {8});
    a.dloss = red == Reduction::none ? view(at(3), DType::bf16, {8}) : view(at(3), DType::f32, {1});
    a.dlogits = view(at(4), DType::f16, {8, 64});
    a.reduction = red;
    if (red == Reduction::mean) {
      a.workspace = at(5);
      a.workspace_bytes = 1 << 20;
    }
    return a;
  });
  c.call = [h] { cross_entropy_backward(*h); };
  c.slots = {{"logits", &h->logits, false, DType::i32, true}, {"target", &h->target, false, DType::bf16},
             {"lse", &h->lse, false, DType::bf16}, {"dloss", &h->dloss, false, DType::i64},
             {"dlogits", &h->dlogits, true, DType::bf16}};
  c.in_place = {{"dlogits", "logits"}};
  c.scalars = {{"label_smoothing", &h->label_smoothing, {kNaN, -1.f, 2.f, -kInf}}};
  c.extra = {{"reduction", [h] { h->reduction = static_cast<Reduction>(-1); }},
             {"lse", [h] { h->lse = {}; }},
             {"dlogits", [h] { h->dlogits = {}; }}};
  if (red == Reduction::mean) {
    c.ws = &h->workspace;
    c.ws_bytes = &h->workspace_bytes;
  }
  return c;
}

OpCase lse_combine_case() {
  OpCase c;
  c.op = "lse_combine";
  auto h = holder<LseCombine>(c, [] {
    LseCombine a;
    a.partial = view(at(0), DType::f32, {4, 64});
    a.lse = view(at(1), DType::f32, {64});
    return a;
  });
  c.call = [h] { lse_combine(*h); };
  c.slots = {{"partial", &h->partial, false, DType::bf16, true}, {"lse", &h->lse, true, DType::bf16}};
  return c;
}

OpCase gemm_case(BLayout layout) {
  OpCase c;
  c.op = "gemm";
  c.label = layout == BLayout::nk ? "nk" : "kn";
  auto h = holder<GemmArgs>(c, [layout] {
    GemmArgs g;
    g.a = view(at(0), DType::bf16, {4, 16, 48});  // M = 64 rows in two leading dimensions
    g.b = layout == BLayout::nk ? view(at(1), DType::bf16, {32, 48}) : view(at(1), DType::bf16, {48, 32});
    g.b_layout = layout;
    g.c = view(at(2), DType::f32, {64, 32});
    g.bias = view(at(3), DType::bf16, {32});
    g.d = view(at(4), DType::f32, {64, 32});
    g.alpha = 0.5f;
    g.beta = 1.f;
    g.activation = Activation::silu;
    return g;
  });
  c.call = [h] { gemm(*h); };
  c.slots = {{"a", &h->a, false, DType::f32, true}, {"b", &h->b, false, DType::f32, true},
             {"c", &h->c, false, DType::bf16}, {"bias", &h->bias, false, DType::i64},
             {"d", &h->d, true, DType::i32}};
  c.in_place = {{"d", "c"}};
  c.scalars = {{"alpha", &h->alpha, {kNaN, kInf, -kInf}}, {"beta", &h->beta, {kNaN, kInf}}};
  c.extra = {{"activation", [h] { h->activation = static_cast<Activation>(9); }},
             {"b_layout", [h] { h->b_layout = static_cast<BLayout>(5); }},
             {"c", [h] { h->c = {}; }},
             {"a", [h] { h->a = {}; }},
             {"d", [h] { h->d = {}; }}};
  return c;
}

std::vector<OpCase> all_cases() {
  std::vector<OpCase> v;
  v.push_back(elementwise_case("add", {"a", "b"}, {"out"}, [](const EwViews& t) { add(t.t[0], t.t[1], t.t[2]); }));
  v.push_back(elementwise_case("mul", {"a", "b"}, {"out"}, [](const EwViews& t) { mul(t.t[0], t.t[1], t.t[2]); }));
  v.push_back(elementwise_case("relu", {"x"}, {"out"}, [](const EwViews& t) { relu(t.t[0], t.t[1]); }));
  v.push_back(elementwise_case("silu", {"x"}, {"out"}, [](const EwViews& t) { silu(t.t[0], t.t[1]); }));
  v.push_back(elementwise_case("gelu", {"x"}, {"out"}, [](const EwViews& t) { gelu(t.t[0], t.t[1]); }));
  v.push_back(
      elementwise_case("swiglu", {"gate", "up"}, {"out"}, [](const EwViews& t) { swiglu(t.t[0], t.t[1], t.t[2]); }));
  v.push_back(elementwise_case("silu_backward", {"dy", "x"}, {"dx"},
                               [](const EwViews& t) { silu_backward(t.t[0], t.t[1], t.t[2]); }));
  v.push_back(elementwise_case("gelu_backward", {"dy", "x"}, {"dx"},
                               [](const EwViews& t) { gelu_backward(t.t[0], t.t[1], t.t[2]); }));
  v.push_back(elementwise_case("swiglu_backward", {"dy", "gate", "up"}, {"dgate", "dup"}, [](const EwViews& t) {
    swiglu_backward(t.t[0], t.t[1], t.t[2], t.t[3], t.t[4]);
  }));
  v.push_back(rms_forward_case());
  v.push_back(layer_forward_case());
  v.push_back(rms_backward_case());
  v.push_back(layer_backward_case());
  v.push_back(softmax_forward_case());
  v.push_back(softmax_backward_case());
  v.push_back(ce_forward_case(Reduction::none));
  v.push_back(ce_forward_case(Reduction::mean));
  v.push_back(ce_backward_case(Reduction::none));
  v.push_back(ce_backward_case(Reduction::mean));
  v.push_back(lse_combine_case());
  v.push_back(gemm_case(BLayout::nk));
  v.push_back(gemm_case(BLayout::kn));
  return v;
}

// ---- the bad-argument classes ----------------------------------------------------------------

std::int64_t numel_of(const TensorView& t) { return t.numel(); }

// One mutation of a view (applied to the valid call), named for the trace.
struct ViewMutation {
  const char* what;
  std::function<bool(TensorView&, const Slot&)> apply;  // false: does not apply to this slot
};

std::vector<ViewMutation> view_mutations() {
  constexpr std::int64_t k32 = 1LL << 32;
  return {
      {"null data", [](TensorView& t, const Slot&) { t.data = nullptr; return true; }},
      {"unsupported dtype", [](TensorView& t, const Slot& s) { t.dtype = s.bad_dtype; return true; }},
      {"not a DType", [](TensorView& t, const Slot&) { t.dtype = static_cast<DType>(99); return true; }},
      {"rank 5", [](TensorView& t, const Slot&) { t.rank = 5; return true; }},
      {"rank -1", [](TensorView& t, const Slot&) { t.rank = -1; return true; }},
      {"rank INT_MIN", [](TensorView& t, const Slot&) { t.rank = INT_MIN; return true; }},
      {"negative extent", [](TensorView& t, const Slot&) { t.shape[0] = -1; return t.rank >= 1; }},
      {"last extent + 1",
       [](TensorView& t, const Slot& s) {
         if (s.reference || t.rank < 1) return false;
         t.shape[t.rank - 1] += 1;
         return true;
       }},
      {"extents (2^32 + 1) x 2^32",
       [=](TensorView& t, const Slot&) {
         t = view(t.data, t.dtype, {1, 1}, {k32, 1});
         t.shape[0] = k32 + 1;
         t.shape[1] = k32;
         return true;
       }},
      {"extents 2^32 x 2^32",
       [=](TensorView& t, const Slot&) {
         t = view(t.data, t.dtype, {1, 1}, {k32, 1});
         t.shape[0] = k32;
         t.shape[1] = k32;
         return true;
       }},
      {"inner stride 2",
       [](TensorView& t, const Slot&) {
         if (t.rank < 1 || t.shape[t.rank - 1] < 2) return false;
         t.stride[t.rank - 1] = 2;
         return true;
       }},
      {"inner stride -1",
       [](TensorView& t, const Slot&) {
         if (t.rank < 1 || t.shape[t.rank - 1] < 2) return false;
         t.stride[t.rank - 1] = -1;
         return true;
       }},
      {"misaligned data",
       [](TensorView& t, const Slot&) {
         if (dtype_size(t.dtype) == 1) return false;
         t.data = static_cast<char*>(t.data) + 1;
         return true;
       }},
      {"data at the end of the address space",
       [](TensorView& t, const Slot&) {
         if (numel_of(t) * static_cast<std::int64_t>(dtype_size(t.dtype)) <= 256) return false;
         t.data = fake(~static_cast<std::uintptr_t>(0) & ~static_cast<std::uintptr_t>(255));
         return true;
       }},
  };
}

// Row strides of a matrix (rank >= 2, more than one row) that are invalid.
std::vector<std::int64_t> bad_row_strides(std::int64_t cols) {
  return {0, -cols, -1, cols - 1, 1LL << 62, INT64_MAX, INT64_MIN};
}

bool allowed(const OpCase& c, const std::string& out, const std::string& other) {
  for (const auto& [o, i] : c.in_place)
    if (o == out && i == other) return true;
  return false;
}

bool same_layout(const TensorView& a, const TensorView& b) {
  if (a.dtype != b.dtype || a.rank != b.rank) return false;
  for (int d = 0; d < a.rank; ++d)
    if (a.shape[d] != b.shape[d] || (a.shape[d] != 1 && a.stride[d] != b.stride[d])) return false;
  return true;
}

std::string trace(const OpCase& c, const std::string& what) {
  return c.op + (c.label.empty() ? "" : " (" + c.label + ")") + ": " + what;
}

TEST(ValidationTable, EveryValidCallReachesCuda) {
  for (OpCase& c : all_cases()) {
    SCOPED_TRACE(trace(c, "the valid call"));
    c.reset();
    expect_reaches_cuda(c.call);
  }
}

TEST(ValidationTable, BadViews) {
  const auto mutations = view_mutations();
  for (OpCase& c : all_cases()) {
    for (const Slot& s : c.slots) {
      for (const ViewMutation& m : mutations) {
        c.reset();
        if (!m.apply(*s.view, s)) continue;
        SCOPED_TRACE(trace(c, std::string(s.name) + ": " + m.what));
        expect_error(c.call, {c.op.c_str(), s.name});
      }
      // Row strides, for arguments with more than one row.
      c.reset();
      const TensorView base = *s.view;
      if (base.rank >= 2 && base.shape[base.rank - 2] > 1) {
        for (std::int64_t st : bad_row_strides(base.shape[base.rank - 1])) {
          c.reset();
          s.view->stride[s.view->rank - 2] = st;
          SCOPED_TRACE(trace(c, std::string(s.name) + ": row stride " + std::to_string(st)));
          expect_error(c.call, {c.op.c_str(), s.name});
        }
      }
    }
  }
}

TEST(ValidationTable, EveryOverlappingPair) {
  for (OpCase& c : all_cases()) {
    for (const Slot& o : c.slots) {
      if (!o.output) continue;
      for (const Slot& i : c.slots) {
        if (&i == &o) continue;
        c.reset();
        const TensorView other = *i.view;
        const std::int64_t esize = static_cast<std::int64_t>(dtype_size(o.view->dtype));
        if (allowed(c, o.name, i.name)) {
          // Exactly the same memory and layout: accepted (in place).
          if (same_layout(*o.view, other)) {
            SCOPED_TRACE(trace(c, std::string(o.name) + " in place of " + i.name));
            o.view->data = other.data;
            expect_reaches_cuda(c.call);
          }
          // Shifted by one element: rejected.
          c.reset();
          o.view->data = static_cast<char*>(other.data) + esize;
          SCOPED_TRACE(trace(c, std::string(o.name) + " one element into " + i.name));
          expect_error(c.call, {c.op.c_str(), o.name, i.name});
        } else {
          SCOPED_TRACE(trace(c, std::string(o.name) + " at " + i.name));
          o.view->data = other.data;
          expect_error(c.call, {c.op.c_str(), o.name, i.name});
          c.reset();
          // The output's last element on the other's first.
          const std::int64_t span = (numel_of(*o.view) - 1) * esize;
          if (o.view->is_contiguous() && span > 0) {
            o.view->data = static_cast<char*>(other.data) - span;
            SCOPED_TRACE(trace(c, std::string(o.name) + " ending on " + i.name + "'s first element"));
            expect_error(c.call, {c.op.c_str(), o.name, i.name});
          }
        }
      }
      // Against the workspace.
      if (c.ws) {
        c.reset();
        *c.ws = o.view->data;
        SCOPED_TRACE(trace(c, std::string("workspace at ") + o.name));
        expect_error(c.call, {c.op.c_str(), "workspace", o.name});
      }
    }
    // The workspace against the inputs.
    if (c.ws) {
      for (const Slot& i : c.slots) {
        if (i.output) continue;
        c.reset();
        *c.ws = i.view->data;
        SCOPED_TRACE(trace(c, std::string("workspace at ") + i.name));
        expect_error(c.call, {c.op.c_str(), "workspace", i.name});
        c.reset();
        *c.ws_bytes = 1 << 16;  // its last 16 bytes on the input's first
        *c.ws = static_cast<char*>(i.view->data) - static_cast<std::ptrdiff_t>(*c.ws_bytes) + 16;
        SCOPED_TRACE(trace(c, std::string("workspace ending inside ") + i.name));
        expect_error(c.call, {c.op.c_str(), "workspace", i.name});
      }
    }
  }
}

TEST(ValidationTable, ScalarsAndEnums) {
  for (OpCase& c : all_cases()) {
    for (const Scalar& s : c.scalars) {
      for (float bad : s.bad) {
        c.reset();
        *s.value = bad;
        SCOPED_TRACE(trace(c, std::string(s.name) + " = " + std::to_string(bad)));
        expect_error(c.call, {c.op.c_str(), s.name});
      }
    }
    for (const auto& [name, mutate] : c.extra) {
      c.reset();
      mutate();
      SCOPED_TRACE(trace(c, std::string("extra: ") + name));
      expect_error(c.call, {c.op.c_str(), name});
    }
  }
}

TEST(ValidationTable, Workspaces) {
  for (OpCase& c : all_cases()) {
    if (!c.ws) continue;
    SCOPED_TRACE(trace(c, "workspace"));
    c.reset();
    *c.ws = nullptr;
    expect_error(c.call, {c.op.c_str(), "workspace", "required"});
    c.reset();
    *c.ws_bytes = 0;
    expect_error(c.call, {c.op.c_str(), "workspace_bytes"});
    c.reset();
    *c.ws_bytes = 16;
    expect_error(c.call, {c.op.c_str(), "workspace_bytes"});
    c.reset();
    *c.ws = static_cast<char*>(*c.ws) + 8;
    expect_error(c.call, {c.op.c_str(), "workspace", "aligned"});
    c.reset();
    *c.ws = fake(~static_cast<std::uintptr_t>(0) & ~static_cast<std::uintptr_t>(4095));
    expect_error(c.call, {c.op.c_str(), "workspace_bytes", "address space"});
    c.reset();
    *c.ws_bytes = SIZE_MAX;
    expect_error(c.call, {c.op.c_str(), "workspace_bytes"});
  }
}

// Size-1 dimensions constrain nothing (PyTorch's rule), for every op: a view with a size-1
// dimension of any stride in every position is accepted.
TEST(ValidationTable, SizeOneDimensionsAnyStride) {
  for (OpCase& c : all_cases()) {
    c.reset();
    for (const Slot& s : c.slots) {
      TensorView& t = *s.view;
      if (t.rank < 1 || t.rank > 3) continue;
      if (c.op == "gemm" && std::string(s.name) == "b") continue;  // B must be 2-D
      // Insert a size-1 dimension before the last, with a stride nothing could collapse with.
      TensorView u = t;
      u.rank = t.rank + 1;
      u.shape[u.rank - 1] = t.shape[t.rank - 1];
      u.stride[u.rank - 1] = t.stride[t.rank - 1];
      u.shape[u.rank - 2] = 1;
      u.stride[u.rank - 2] = 7777;
      t = u;
    }
    SCOPED_TRACE(trace(c, "size-1 dimensions with odd strides"));
    // Shapes now have one more dimension everywhere, consistently: still valid.
    expect_reaches_cuda(c.call);
  }
}

}  // namespace
}  // namespace tachyon

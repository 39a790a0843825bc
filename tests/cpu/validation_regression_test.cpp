// The validation gaps a probe of the API found (issue #26), one test each: every one failed
// before the fix. Errors must name the op and the argument and come before any CUDA call;
// valid calls must get past validation (on the GPU-less CI machine, to a CUDA error).
#include <gtest/gtest.h>

#include "common/api_test.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "tachyon/tachyon.h"

namespace tachyon {
namespace {

using test::expect_error;
using test::expect_reaches_cuda;
using test::fake;

constexpr std::int64_t k32 = 1LL << 32;

TensorView raw(void* data, DType dt, std::initializer_list<std::int64_t> shape,
               std::initializer_list<std::int64_t> stride) {
  TensorView t;  // built by hand: view() would refuse some of these
  t.data = data;
  t.dtype = dt;
  t.rank = static_cast<int>(shape.size());
  int d = 0;
  for (auto s : shape) t.shape[d++] = s;
  d = 0;
  for (auto s : stride) t.stride[d++] = s;
  return t;
}

// ---- 1. overlaps that were not checked --------------------------------------------------------

RmsNormForward rms() {
  RmsNormForward a;
  a.x = view(fake(0x100000), DType::bf16, {8, 64});
  a.y = view(fake(0x200000), DType::bf16, {8, 64});
  a.weight = view(fake(0x300000), DType::bf16, {64});
  a.rstd = view(fake(0x400000), DType::f32, {8});
  return a;
}

TEST(Issue26Overlaps, RstdAndMeanOutputs) {
  const char* op = "rms_norm_forward";
  auto a = rms();
  a.rstd = view(fake(0x100000 + 64), DType::f32, {8});
  expect_error([&] { rms_norm_forward(a); }, {op, "rstd", "overlaps", "x"});
  a = rms();
  a.rstd = view(fake(0x200000 + 1024 - 16), DType::f32, {8});  // y's last bytes
  expect_error([&] { rms_norm_forward(a); }, {op, "rstd", "overlaps", "y"});
  a = rms();
  a.rstd = view(fake(0x300000), DType::f32, {8});
  expect_error([&] { rms_norm_forward(a); }, {op, "rstd", "weight"});
  LayerNormForward l;
  l.x = view(fake(0x100000), DType::f32, {8, 64});
  l.y = view(fake(0x200000), DType::f32, {8, 64});
  l.mean = view(fake(0x300000), DType::f32, {8});
  l.rstd = l.mean;  // mean == rstd
  expect_error([&] { layer_norm_forward(l); }, {"layer_norm_forward", "rstd", "mean"});
}

TEST(Issue26Overlaps, BackwardWeightGradients) {
  LayerNormBackward l;
  l.x = view(fake(0x100000), DType::f32, {8, 64});
  l.weight = view(fake(0x200000), DType::f32, {64});
  l.mean = view(fake(0x300000), DType::f32, {8});
  l.rstd = view(fake(0x400000), DType::f32, {8});
  l.dy = view(fake(0x500000), DType::f32, {8, 64});
  l.dx = view(fake(0x600000), DType::f32, {8, 64});
  l.dw = view(fake(0x600000 + 256), DType::f32, {64});  // inside dx
  l.db = view(fake(0x800000), DType::f32, {64});
  l.workspace = fake(0x900000);
  l.workspace_bytes = 1 << 20;
  expect_error([&] { layer_norm_backward(l); }, {"layer_norm_backward", "dw", "overlaps", "dx"});
  l.dw = view(fake(0x700000), DType::f32, {64});
  l.db = l.dw;  // dw == db
  expect_error([&] { layer_norm_backward(l); }, {"layer_norm_backward", "db", "dw"});
  l.db = view(fake(0x800000), DType::f32, {64});
  l.dx = view(fake(0x200000), DType::f32, {8, 64});  // dx over the weight
  expect_error([&] { layer_norm_backward(l); }, {"layer_norm_backward", "dx", "weight"});
}

TEST(Issue26Overlaps, Workspaces) {
  RmsNormBackward b;
  b.x = view(fake(0x100000), DType::bf16, {8, 64});
  b.weight = view(fake(0x200000), DType::bf16, {64});
  b.rstd = view(fake(0x300000), DType::f32, {8});
  b.dy = view(fake(0x400000), DType::bf16, {8, 64});
  b.dx = view(fake(0x500000), DType::bf16, {8, 64});
  b.dw = view(fake(0x600000), DType::bf16, {64});
  b.workspace = fake(0x100000);  // over x
  b.workspace_bytes = 1 << 16;
  expect_error([&] { rms_norm_backward(b); }, {"rms_norm_backward", "workspace", "x"});

  CrossEntropyForward c;
  c.logits = view(fake(0x100000), DType::bf16, {8, 64});
  c.target = view(fake(0x200000), DType::i64, {8});
  c.loss = view(fake(0x300000), DType::f32, {1});
  c.reduction = Reduction::mean;
  c.workspace = fake(0x100000 + 256);  // inside the logits
  c.workspace_bytes = cross_entropy_forward_workspace_bytes(c);
  expect_error([&] { cross_entropy_forward(c); }, {"cross_entropy_forward", "workspace", "logits"});
  c.workspace = fake(0x300000);  // over the loss
  expect_error([&] { cross_entropy_forward(c); }, {"cross_entropy_forward", "workspace", "loss"});
}

TEST(Issue26Overlaps, CrossEntropyTarget) {
  const char* op = "cross_entropy_forward";
  auto make = [] {
    CrossEntropyForward a;
    a.logits = view(fake(0x100000), DType::bf16, {8, 64});
    a.target = view(fake(0x200000), DType::i64, {8});
    a.loss = view(fake(0x300000), DType::f32, {8});
    a.reduction = Reduction::none;
    return a;
  };
  auto a = make();
  a.lse = view(fake(0x200000 + 8), DType::f32, {8});
  expect_error([&] { cross_entropy_forward(a); }, {op, "lse", "target"});
  a = make();
  a.loss = view(fake(0x200000), DType::f32, {8});
  expect_error([&] { cross_entropy_forward(a); }, {op, "loss", "target"});
  a = make();
  a.dlogits = view(fake(0x200000 - 128), DType::bf16, {8, 64});
  expect_error([&] { cross_entropy_forward(a); }, {op, "dlogits", "target"});

  CrossEntropyBackward b;
  b.logits = view(fake(0x100000), DType::f32, {8, 64});
  b.target = view(fake(0x200000), DType::i32, {8});
  b.lse = view(fake(0x300000), DType::f32, {8});
  b.dloss = view(fake(0x400000), DType::f32, {8});
  b.dlogits = view(fake(0x400000 - 64), DType::f32, {8, 64});  // over dloss
  b.reduction = Reduction::none;
  expect_error([&] { cross_entropy_backward(b); }, {"cross_entropy_backward", "dlogits", "dloss"});
  b.dlogits = view(fake(0x200000), DType::f32, {8, 64});  // over the target
  expect_error([&] { cross_entropy_backward(b); }, {"cross_entropy_backward", "dlogits", "target"});
}

// A vector in another argument's row padding shares no byte with it: accepted (the overlap
// test is exact when one side is a single row); one element more reaches the next row.
TEST(Issue26Overlaps, VectorInRowPaddingIsNotAnOverlap) {
  LseCombine c;
  c.partial = view(fake(0x100000), DType::f32, {4, 8}, {16, 1});  // 8 values, 8 padding a row
  c.lse = view(fake(0x100000 + 8 * 4), DType::f32, {8});           // row 0's padding
  expect_reaches_cuda([&] { lse_combine(c); });
  c.lse = view(fake(0x100000 + 9 * 4), DType::f32, {8});  // its last element on row 1
  expect_error([&] { lse_combine(c); }, {"lse_combine", "lse", "overlaps", "partial"});
  RmsNormForward r;
  r.x = view(fake(0x100000), DType::bf16, {8, 64}, {128, 1});
  r.y = view(fake(0x200000), DType::bf16, {8, 64});
  r.rstd = view(fake(0x100000 + 7 * 256 + 128), DType::f32, {8});  // the padding after x's last row
  expect_reaches_cuda([&] { rms_norm_forward(r); });
  r.rstd = view(fake(0x100000 + 7 * 256 - 16), DType::f32, {8});  // from row 6's padding into row 7
  expect_error([&] { rms_norm_forward(r); }, {"rms_norm_forward", "rstd", "overlaps", "x"});
}

// ---- 2. integer overflow in view arithmetic -----------------------------------------------------

TEST(Issue26Overflow, NumelIsChecked) {
  auto wraps = raw(fake(0x100000), DType::f32, {k32 + 1, k32}, {k32, 1});
  EXPECT_THROW(wraps.numel(), Error);
  auto zero = raw(fake(0x100000), DType::f32, {k32, k32}, {k32, 1});  // 2^64 wraps to 0
  EXPECT_THROW(zero.numel(), Error);
  EXPECT_THROW(view(fake(0x100000), DType::f32, {k32 + 1, k32}), Error);
  EXPECT_THROW(view(fake(0x100000), DType::f32, {k32, k32}), Error);
  EXPECT_THROW(view(fake(0x100000), DType::f32, {k32, k32}, {k32, 1}), Error);
  EXPECT_EQ(raw(nullptr, DType::f32, {0, k32, k32}, {0, 0, 0}).numel(), 0);  // as PyTorch: left to right
}

TEST(Issue26Overflow, OpsRejectWrappingElementCounts) {
  auto wraps = raw(fake(0x100000), DType::f32, {k32 + 1, k32}, {k32, 1});
  auto out = raw(fake(0x200000), DType::f32, {k32 + 1, k32}, {k32, 1});
  expect_error([&] { relu(wraps, out); }, {"relu", "x", "overflows"});
  // 2^32 x 2^32 = 2^64 wrapped to 0: was a silent no-op.
  auto zero = raw(fake(0x100000), DType::f32, {k32, k32}, {k32, 1});
  auto zout = raw(fake(0x200000), DType::f32, {k32, k32}, {k32, 1});
  expect_error([&] { relu(zero, zout); }, {"relu", "x", "overflows"});
  SoftmaxForward s;
  s.x = zero;
  s.y = zout;
  expect_error([&] { softmax_forward(s); }, {"softmax_forward", "x", "overflows"});
}

TEST(Issue26Overflow, RowStrideThatWrapsIsRejected) {
  // Row 2 at 2 * 2^62 elements * 4 bytes wraps to row 0: passed the rows-must-not-overlap check.
  SoftmaxForward s;
  s.x = view(fake(0x100000), DType::f32, {3, 64});
  s.y = raw(fake(0x200000), DType::f32, {3, 64}, {1LL << 62, 1});
  expect_error([&] { softmax_forward(s); }, {"softmax_forward", "y", "2^63"});
  auto x = view(fake(0x100000), DType::bf16, {3, 64});
  expect_error([&] { add(x, x, raw(fake(0x200000), DType::bf16, {3, 64}, {1LL << 62, 1})); }, {"add", "out"});
  // A span that fits int64 but runs past the end of the address space.
  auto high = view(fake(~static_cast<std::uintptr_t>(0) - 4095), DType::f32, {4, 1024});
  expect_error([&] { relu(high, view(fake(0x100000), DType::f32, {4, 1024})); }, {"relu", "x", "address space"});
}

// ---- 3. ranks out of range ----------------------------------------------------------------------

TEST(Issue26Ranks, VectorRanksAreChecked) {
  auto a = rms();
  a.weight.rank = 5;
  expect_error([&] { rms_norm_forward(a); }, {"rms_norm_forward", "weight", "rank 5"});
  a = rms();
  a.weight.rank = -1;
  expect_error([&] { rms_norm_forward(a); }, {"rms_norm_forward", "weight", "rank -1"});
  a = rms();
  a.rstd = raw(fake(0x400000), DType::f32, {}, {});  // rank 0: one element, not 8
  expect_error([&] { rms_norm_forward(a); }, {"rms_norm_forward", "rstd", "8 elements"});
  // Rank 0 is one element: a reduced loss as PyTorch holds it.
  CrossEntropyForward c;
  c.logits = view(fake(0x100000), DType::bf16, {8, 64});
  c.target = view(fake(0x200000), DType::i64, {8});
  c.loss = view(fake(0x300000), DType::f32, {});
  c.reduction = Reduction::sum;
  c.workspace = fake(0x400000);
  c.workspace_bytes = cross_entropy_forward_workspace_bytes(c);
  expect_reaches_cuda([&] { cross_entropy_forward(c); });
}

TEST(Issue26Ranks, MessagesNeverReadPastTheArrays) {
  auto t = raw(fake(0x100000), DType::f32, {1, 2, 3, 4}, {24, 12, 4, 1});
  t.rank = 5;
  EXPECT_EQ(t.str(), "f32[rank 5]");
  t.rank = -3;
  EXPECT_EQ(t.str(), "f32[rank -3]");
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_THROW(t.numel(), Error);
  auto a = rms();
  a.y.rank = 5;
  try {
    rms_norm_forward(a);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bf16[rank 5]"), std::string::npos) << e.what();
  }
}

// ---- 4. size-1 dimensions do not constrain strides -------------------------------------------------

TEST(Issue26SizeOne, PyTorchStridesOfASizeOneMiddleDimension) {
  auto t = view(fake(0x100000), DType::bf16, {2, 1, 64}, {64, 1, 1});
  EXPECT_TRUE(t.is_contiguous());
  auto o = view(fake(0x200000), DType::bf16, {2, 1, 64}, {64, 64, 1});
  expect_reaches_cuda([&] { relu(t, o); });
  SoftmaxForward s;
  s.x = t;
  s.y = o;
  expect_reaches_cuda([&] { softmax_forward(s); });
  RmsNormForward r;
  r.x = t;
  r.y = o;
  expect_reaches_cuda([&] { rms_norm_forward(r); });
  CrossEntropyForward c;
  c.logits = t;
  c.target = view(fake(0x300000), DType::i64, {1, 2}, {5, 1});  // (1, M): a vector, any stride on the 1
  c.loss = view(fake(0x400000), DType::f32, {2});
  c.reduction = Reduction::none;
  expect_reaches_cuda([&] { cross_entropy_forward(c); });
  GemmArgs g;
  g.a = t;  // (2, 1, 64): M = 2, K = 64
  g.b = view(fake(0x500000), DType::bf16, {16, 64});
  g.d = view(fake(0x600000), DType::f32, {2, 1, 16}, {16, 3, 1});
  expect_reaches_cuda([&] { gemm(g); });
  // Size-1 leading dimensions between others still collapse: (2, 1, 3, 64) strides (192, 5, 64, 1).
  auto u = view(fake(0x100000), DType::f32, {2, 1, 3, 64}, {192, 5, 64, 1});
  expect_reaches_cuda([&] { relu(u, view(fake(0x200000), DType::f32, {2, 1, 3, 64})); });
  // But dimensions of extent > 1 still must collapse.
  auto bad = view(fake(0x100000), DType::f32, {2, 1, 3, 64}, {200, 5, 64, 1});
  expect_error([&] { relu(bad, view(fake(0x200000), DType::f32, {2, 1, 3, 64})); }, {"relu", "x", "collapsed"});
}

// ---- 5. the norm backward validates before it touches the device -------------------------------------

RmsNormBackward rms_backward() {
  RmsNormBackward b;
  b.x = view(fake(0x100000), DType::bf16, {8, 64});
  b.weight = view(fake(0x200000), DType::bf16, {64});
  b.rstd = view(fake(0x300000), DType::f32, {8});
  b.dy = view(fake(0x400000), DType::bf16, {8, 64});
  b.dx = view(fake(0x500000), DType::bf16, {8, 64});
  b.dw = view(fake(0x600000), DType::bf16, {64});
  return b;
}

TEST(Issue26NormBackward, WorkspaceIsCheckedBeforeTheDevice) {
  auto b = rms_backward();
  expect_error([&] { rms_norm_backward(b); }, {"rms_norm_backward", "workspace", "required"});
  b.workspace = fake(0x700000);
  b.workspace_bytes = 16;  // less than one row group's partials: short on any device
  expect_error([&] { rms_norm_backward(b); }, {"rms_norm_backward", "workspace_bytes"});
  b.workspace = fake(0x700008);
  b.workspace_bytes = 1 << 20;
  expect_error([&] { rms_norm_backward(b); }, {"rms_norm_backward", "workspace", "aligned"});
  LayerNormBackward l;
  l.x = view(fake(0x100000), DType::f32, {8, 64});
  l.mean = view(fake(0x200000), DType::f32, {8});
  l.rstd = view(fake(0x300000), DType::f32, {8});
  l.dy = view(fake(0x400000), DType::f32, {8, 64});
  l.dx = view(fake(0x500000), DType::f32, {8, 64});
  l.db = view(fake(0x600000), DType::f32, {64});
  expect_error([&] { layer_norm_backward(l); }, {"layer_norm_backward", "workspace", "required"});
  l.workspace = fake(0x700000);
  l.workspace_bytes = 64 * 4 - 1;
  expect_error([&] { layer_norm_backward(l); }, {"layer_norm_backward", "workspace_bytes"});
  l.workspace_bytes = 1 << 20;
  expect_reaches_cuda([&] { layer_norm_backward(l); });
}

TEST(Issue26NormBackward, WorkspaceQueryValidatesFirstAndNeedsNoDeviceWithoutSums) {
  auto b = rms_backward();
  b.dw = {};
  EXPECT_EQ(rms_norm_backward_workspace_bytes(b), 0u);  // no dw: no workspace, no device
  b.dx = view(fake(0x500000), DType::bf16, {8, 63});
  expect_error([&] { rms_norm_backward_workspace_bytes(b); }, {"rms_norm_backward", "dx", "shape"});
  b = rms_backward();
  b.rstd = {};
  expect_error([&] { rms_norm_backward_workspace_bytes(b); }, {"rms_norm_backward", "rstd", "required"});
  LayerNormBackward l;
  l.x = view(nullptr, DType::f32, {0, 64});
  l.mean = l.rstd = view(nullptr, DType::f32, {0});
  l.dy = l.dx = view(nullptr, DType::f32, {0, 64});
  l.db = view(fake(0x600000), DType::f32, {64});
  EXPECT_EQ(layer_norm_backward_workspace_bytes(l), 0u);  // empty: nothing to sum
  EXPECT_NO_THROW(layer_norm_backward(l));
  // With column sums over a non-empty problem the size depends on the device (norm.h).
  b = rms_backward();
  expect_reaches_cuda([&] { rms_norm_backward_workspace_bytes(b); });
}

// ---- 6. limits, messages and scalars ----------------------------------------------------------------

TEST(Issue26Limits, RowLengthLimitOfTheRowKernels) {
  const std::int64_t limit = (1LL << 31) - 65;  // the headers' 2^31 - 65
  const std::int64_t too_long = 1LL << 31;
  SoftmaxForward s;
  s.x = view(fake(0x100000), DType::bf16, {1, too_long});
  s.y = view(fake(0x200000000), DType::bf16, {1, too_long});
  expect_error([&] { softmax_forward(s); }, {"softmax_forward", "x", "2147483583"});
  RmsNormForward r;
  r.x = s.x;
  r.y = s.y;
  expect_error([&] { rms_norm_forward(r); }, {"rms_norm_forward", "x", "2147483583"});
  CrossEntropyForward c;
  c.logits = s.x;
  c.target = view(fake(0x300000000), DType::i64, {1});
  c.loss = view(fake(0x300001000), DType::f32, {1});
  c.reduction = Reduction::none;
  expect_error([&] { cross_entropy_forward(c); }, {"cross_entropy_forward", "logits", "2147483583"});
  // At the limit: accepted.
  s.x = view(fake(0x100000), DType::bf16, {1, limit});
  s.y = view(fake(0x200000000), DType::bf16, {1, limit});
  expect_reaches_cuda([&] { softmax_forward(s); });
  // Elementwise kernels index with 64 bits: no row limit.
  expect_reaches_cuda([&] {
    relu(view(fake(0x100000), DType::bf16, {1, too_long}), view(fake(0x200000000), DType::bf16, {1, too_long}));
  });
}

TEST(Issue26Limits, GemmSizeErrorsNameTheirArgument) {
  const std::int64_t too_big = 1LL << 31;
  GemmArgs g;
  g.a = view(fake(0x100000), DType::bf16, {64, 48});
  g.b = view(fake(0x200000), DType::bf16, {too_big, 48});  // N from B (N, K)
  g.d = view(fake(0x300000), DType::f32, {64, too_big});
  expect_error([&] { gemm(g); }, {"gemm", "b", "N = 2147483648"});
  g.b_layout = BLayout::kn;  // B (K, N): N is its row length
  g.b = view(fake(0x200000), DType::bf16, {48, too_big});
  expect_error([&] { gemm(g); }, {"gemm", "b", "2147483583"});
  g.b_layout = BLayout::nk;
  g.a = view(fake(0x100000), DType::bf16, {too_big, 8});  // M
  g.b = view(fake(0x200000), DType::bf16, {16, 8});
  g.d = view(fake(0x300000), DType::f32, {too_big, 16});
  expect_error([&] { gemm(g); }, {"gemm", "a", "M = 2147483648"});
  g.a = view(fake(0x100000), DType::bf16, {1, too_big});  // K
  g.b = view(fake(0x200000), DType::bf16, {1, too_big}, {1, 1});
  g.d = view(fake(0x300000), DType::f32, {1, 1});
  expect_error([&] { gemm(g); }, {"gemm", "a", "2147483583"});
  // At the limit: accepted.
  const std::int64_t limit = (1LL << 31) - 65;
  g.a = view(fake(0x100000), DType::bf16, {1, 8});
  g.b = view(fake(0x200000), DType::bf16, {limit, 8});
  g.d = view(fake(0x1000000000), DType::f32, {1, limit});  // past B's 32 GiB
  expect_reaches_cuda([&] { gemm(g); });
}

TEST(Issue26Limits, ScalarsFollowOneRule) {
  GemmArgs g;
  g.a = view(fake(0x100000), DType::bf16, {64, 48});
  g.b = view(fake(0x200000), DType::bf16, {32, 48});
  g.d = view(fake(0x300000), DType::bf16, {64, 32});
  g.alpha = NAN;
  expect_error([&] { gemm(g); }, {"gemm", "alpha", "finite"});
  g.alpha = INFINITY;
  expect_error([&] { gemm(g); }, {"gemm", "alpha", "finite"});
  g.alpha = 1.f;
  g.c = g.d;
  g.beta = NAN;
  expect_error([&] { gemm(g); }, {"gemm", "beta", "finite"});
  g.beta = -INFINITY;
  expect_error([&] { gemm(g); }, {"gemm", "beta", "finite"});
  CrossEntropyForward c;
  c.logits = view(fake(0x100000), DType::bf16, {8, 64});
  c.target = view(fake(0x200000), DType::i64, {8});
  c.loss = view(fake(0x300000), DType::f32, {8});
  c.reduction = Reduction::none;
  c.grad_output = NAN;
  expect_error([&] { cross_entropy_forward(c); }, {"cross_entropy_forward", "grad_output", "finite"});
  auto r = rms();
  r.eps = NAN;
  expect_error([&] { rms_norm_forward(r); }, {"rms_norm_forward", "eps", "finite"});
}

}  // namespace
}  // namespace tachyon

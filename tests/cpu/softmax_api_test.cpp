// Softmax / cross-entropy / lse combine validation on the CPU: every error names the op and
// the argument and is thrown before any CUDA call (these run without a GPU).
#include <gtest/gtest.h>

#include "common/api_test.h"

#include <cmath>
#include <string>

#include "tachyon/cross_entropy.h"
#include "tachyon/error.h"
#include "tachyon/softmax.h"

namespace tachyon {
namespace {

using test::expect_error;
using test::fake;

// ---- softmax --------------------------------------------------------------------------------

SoftmaxForward fwd(DType dt = DType::bf16) {
  SoftmaxForward a;
  a.x = view(fake(0x100000), dt, {8, 64});
  a.y = view(fake(0x200000), dt, {8, 64});
  return a;
}

TEST(SoftmaxApi, ForwardRejectsBadArguments) {
  auto a = fwd();
  a.x.dtype = DType::i32;
  expect_error([&] { softmax_forward(a); }, {"softmax_forward", "x", "i32"});
  a = fwd();
  a.x = {};
  expect_error([&] { softmax_forward(a); }, {"softmax_forward", "x", "absent"});
  a = fwd();
  a.y = {};
  expect_error([&] { softmax_forward(a); }, {"softmax_forward", "y"});
  a = fwd();
  a.y = view(fake(0x200000), DType::bf16, {8, 65});
  expect_error([&] { softmax_forward(a); }, {"softmax_forward", "y", "shape"});
  a = fwd();
  a.y.dtype = DType::i64;
  expect_error([&] { softmax_forward(a); }, {"softmax_forward", "y", "i64"});
  a = fwd();
  a.x = view(nullptr, DType::bf16, {8, 64});
  expect_error([&] { softmax_forward(a); }, {"softmax_forward", "x", "null"});
  a = fwd();
  a.x = view(fake(0x100000), DType::bf16, {8, 64}, {64, 2});
  expect_error([&] { softmax_forward(a); }, {"softmax_forward", "x", "contiguous"});
  a = fwd();
  a.x = view(fake(0x100001), DType::bf16, {8, 64});
  expect_error([&] { softmax_forward(a); }, {"softmax_forward", "x", "aligned"});
  a = fwd();
  a.y = view(fake(0x100000 + 2), DType::bf16, {8, 64});  // overlaps x, shifted by one element
  expect_error([&] { softmax_forward(a); }, {"softmax_forward", "y", "overlaps", "x"});
  a = fwd();
  a.y = view(fake(0x100000), DType::f32, {8, 64});  // same address, other dtype: not in place
  expect_error([&] { softmax_forward(a); }, {"softmax_forward", "y", "x"});
  a = fwd();
  a.x = view(fake(0x100000), DType::bf16, {8, 64}, {32, 1});  // rows overlap
  expect_error([&] { softmax_forward(a); }, {"softmax_forward", "x", "stride"});
}

TEST(SoftmaxApi, BackwardRejectsBadArguments) {
  SoftmaxBackward b;
  b.y = view(fake(0x100000), DType::bf16, {8, 64});
  b.dy = view(fake(0x200000), DType::f32, {8, 64});
  b.dx = view(fake(0x300000), DType::bf16, {8, 64});
  expect_error([&] { softmax_backward(b); }, {"softmax_backward", "dy", "dtype"});
  b.dy.dtype = DType::bf16;
  b.dx = view(fake(0x300000), DType::bf16, {8, 63});
  expect_error([&] { softmax_backward(b); }, {"softmax_backward", "dx", "shape"});
  b.dx = {};
  expect_error([&] { softmax_backward(b); }, {"softmax_backward", "dx"});
  b.dx = view(fake(0x100000 + 64), DType::bf16, {8, 64});
  expect_error([&] { softmax_backward(b); }, {"softmax_backward", "dx", "overlaps", "y"});
  b.dx = view(fake(0x200000 + 64), DType::bf16, {8, 64});
  expect_error([&] { softmax_backward(b); }, {"softmax_backward", "dx", "overlaps", "dy"});
  b.y.dtype = DType::i32;
  expect_error([&] { softmax_backward(b); }, {"softmax_backward", "y", "i32"});
}

TEST(SoftmaxApi, EmptyIsNoOpWithoutDevice) {
  SoftmaxForward a;
  a.x = view(nullptr, DType::bf16, {0, 64});
  a.y = view(nullptr, DType::bf16, {0, 64});
  EXPECT_NO_THROW(softmax_forward(a));
  SoftmaxBackward b;
  b.y = b.dy = b.dx = view(nullptr, DType::f32, {16, 0});
  EXPECT_NO_THROW(softmax_backward(b));
}

// ---- cross-entropy --------------------------------------------------------------------------

CrossEntropyForward ce(Reduction red = Reduction::none) {
  CrossEntropyForward a;
  a.logits = view(fake(0x100000), DType::bf16, {8, 64});
  a.target = view(fake(0x200000), DType::i64, {8});
  a.loss = view(fake(0x300000), DType::f32, {red == Reduction::none ? 8 : 1});
  a.reduction = red;
  return a;
}

TEST(CrossEntropyApi, ForwardRejectsBadArguments) {
  const char* op = "cross_entropy_forward";
  auto a = ce();
  a.logits.dtype = DType::i32;
  expect_error([&] { cross_entropy_forward(a); }, {op, "logits", "i32"});
  a = ce();
  a.logits = view(fake(0x100000), DType::bf16, {8, 0});
  expect_error([&] { cross_entropy_forward(a); }, {op, "logits", "no classes"});
  a = ce();
  a.target.dtype = DType::f32;
  expect_error([&] { cross_entropy_forward(a); }, {op, "target", "f32", "i32, i64"});
  a = ce();
  a.target = view(fake(0x200000), DType::i32, {7});
  expect_error([&] { cross_entropy_forward(a); }, {op, "target", "8"});
  a = ce();
  a.target = view(fake(0x200000), DType::i32, {8}, {2});
  expect_error([&] { cross_entropy_forward(a); }, {op, "target", "contiguous"});
  a = ce();
  a.loss = {};
  expect_error([&] { cross_entropy_forward(a); }, {op, "loss", "required"});
  a = ce();
  a.loss.dtype = DType::bf16;
  expect_error([&] { cross_entropy_forward(a); }, {op, "loss", "bf16"});
  a = ce(Reduction::mean);
  a.loss = view(fake(0x300000), DType::f32, {8});  // mean: one element
  expect_error([&] { cross_entropy_forward(a); }, {op, "loss", "1 elements"});
  a = ce();
  a.loss = view(fake(0x300000), DType::f32, {1});  // none: M elements
  expect_error([&] { cross_entropy_forward(a); }, {op, "loss", "8 elements"});
  a = ce();
  a.lse = view(fake(0x400000), DType::f32, {9});
  expect_error([&] { cross_entropy_forward(a); }, {op, "lse", "8"});
  a = ce();
  a.lse = view(fake(0x400000), DType::f16, {8});
  expect_error([&] { cross_entropy_forward(a); }, {op, "lse", "f16"});
  a = ce();
  a.label_smoothing = 1.5f;
  expect_error([&] { cross_entropy_forward(a); }, {op, "label_smoothing"});
  a = ce();
  a.label_smoothing = -0.1f;
  expect_error([&] { cross_entropy_forward(a); }, {op, "label_smoothing"});
  a = ce();
  a.grad_output = INFINITY;
  expect_error([&] { cross_entropy_forward(a); }, {op, "grad_output"});
  a = ce();
  a.reduction = static_cast<Reduction>(7);
  expect_error([&] { cross_entropy_forward(a); }, {op, "reduction"});
  a = ce();
  a.dlogits = view(fake(0x500000), DType::f32, {8, 64});
  expect_error([&] { cross_entropy_forward(a); }, {op, "dlogits", "dtype"});
  a = ce();
  a.dlogits = view(fake(0x500000), DType::bf16, {8, 32});
  expect_error([&] { cross_entropy_forward(a); }, {op, "dlogits", "shape"});
  a = ce();
  a.dlogits = view(fake(0x100000 + 2), DType::bf16, {8, 64});
  expect_error([&] { cross_entropy_forward(a); }, {op, "dlogits", "overlaps", "logits"});
  a = ce();
  a.lse = view(fake(0x300000 + 4), DType::f32, {8});
  expect_error([&] { cross_entropy_forward(a); }, {op, "lse", "overlaps", "loss"});
  a = ce();
  a.loss = view(fake(0x100000 + 16), DType::f32, {8});
  expect_error([&] { cross_entropy_forward(a); }, {op, "loss", "overlaps", "logits"});
}

TEST(CrossEntropyApi, ForwardWorkspace) {
  auto a = ce();
  EXPECT_EQ(cross_entropy_forward_workspace_bytes(a), 0u);
  a = ce(Reduction::sum);
  const std::size_t sum_bytes = cross_entropy_forward_workspace_bytes(a);
  EXPECT_GE(sum_bytes, 8 * sizeof(float));
  a = ce(Reduction::mean);
  const std::size_t mean_bytes = cross_entropy_forward_workspace_bytes(a);
  EXPECT_GT(mean_bytes, sum_bytes);
  expect_error([&] { cross_entropy_forward(a); }, {"cross_entropy_forward", "workspace", "required"});
  a.workspace = fake(0x600000);
  a.workspace_bytes = mean_bytes - 1;
  expect_error([&] { cross_entropy_forward(a); }, {"cross_entropy_forward", "workspace_bytes"});
  a.workspace = fake(0x600008);
  a.workspace_bytes = mean_bytes;
  expect_error([&] { cross_entropy_forward(a); }, {"cross_entropy_forward", "workspace", "aligned"});
}

TEST(CrossEntropyApi, BackwardRejectsBadArguments) {
  const char* op = "cross_entropy_backward";
  auto make = [] {
    CrossEntropyBackward b;
    b.logits = view(fake(0x100000), DType::f32, {8, 64});
    b.target = view(fake(0x200000), DType::i32, {8});
    b.lse = view(fake(0x300000), DType::f32, {8});
    b.dlogits = view(fake(0x400000), DType::f32, {8, 64});
    b.reduction = Reduction::none;
    return b;
  };
  auto b = make();
  b.lse = {};
  expect_error([&] { cross_entropy_backward(b); }, {op, "lse", "required"});
  b = make();
  b.lse = view(fake(0x300000), DType::f32, {7});
  expect_error([&] { cross_entropy_backward(b); }, {op, "lse", "8"});
  b = make();
  b.dlogits = {};
  expect_error([&] { cross_entropy_backward(b); }, {op, "dlogits", "required"});
  b = make();
  b.dlogits.dtype = DType::bf16;
  expect_error([&] { cross_entropy_backward(b); }, {op, "dlogits", "dtype"});
  b = make();
  b.dloss = view(fake(0x500000), DType::f32, {1});  // none: per row
  expect_error([&] { cross_entropy_backward(b); }, {op, "dloss", "8"});
  b = make();
  b.dloss = view(fake(0x500000), DType::i64, {8});
  expect_error([&] { cross_entropy_backward(b); }, {op, "dloss", "i64"});
  b = make();
  b.target.dtype = DType::bf16;
  expect_error([&] { cross_entropy_backward(b); }, {op, "target", "bf16"});
  b = make();
  b.label_smoothing = NAN;
  expect_error([&] { cross_entropy_backward(b); }, {op, "label_smoothing"});
  b = make();
  b.dlogits = view(fake(0x100000 + 4), DType::f32, {8, 64});
  expect_error([&] { cross_entropy_backward(b); }, {op, "dlogits", "overlaps", "logits"});
  b = make();
  b.reduction = Reduction::mean;
  EXPECT_GT(cross_entropy_backward_workspace_bytes(b), 0u);
  expect_error([&] { cross_entropy_backward(b); }, {op, "workspace", "required"});
  b.reduction = Reduction::sum;
  EXPECT_EQ(cross_entropy_backward_workspace_bytes(b), 0u);
}

TEST(CrossEntropyApi, LseCombineRejectsBadArguments) {
  LseCombine c;
  c.partial = view(fake(0x100000), DType::bf16, {4, 64});
  c.lse = view(fake(0x200000), DType::f32, {64});
  expect_error([&] { lse_combine(c); }, {"lse_combine", "partial", "bf16"});
  c.partial.dtype = DType::f32;
  c.lse = view(fake(0x200000), DType::f32, {63});
  expect_error([&] { lse_combine(c); }, {"lse_combine", "lse", "64"});
  c.lse = {};
  expect_error([&] { lse_combine(c); }, {"lse_combine", "lse", "required"});
  c.lse = view(fake(0x100000 + 64), DType::f32, {64});
  expect_error([&] { lse_combine(c); }, {"lse_combine", "lse", "overlaps", "partial"});
}

TEST(CrossEntropyApi, EmptyIsNoOpWithoutDevice) {
  CrossEntropyForward a;
  a.logits = view(nullptr, DType::bf16, {0, 64});
  a.target = view(nullptr, DType::i64, {0});
  a.loss = view(nullptr, DType::f32, {0});
  a.reduction = Reduction::none;
  EXPECT_NO_THROW(cross_entropy_forward(a));
  CrossEntropyBackward b;
  b.logits = b.dlogits = view(nullptr, DType::f32, {0, 10});
  b.target = view(nullptr, DType::i32, {0});
  b.lse = view(nullptr, DType::f32, {0});
  b.reduction = Reduction::sum;
  EXPECT_NO_THROW(cross_entropy_backward(b));
  LseCombine c;
  c.partial = view(nullptr, DType::f32, {4, 0});
  c.lse = view(nullptr, DType::f32, {0});
  EXPECT_NO_THROW(lse_combine(c));
}

}  // namespace
}  // namespace tachyon

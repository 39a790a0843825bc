// RMSNorm / LayerNorm validation on the CPU: every error names the op and the argument and
// is thrown before any CUDA call.
#include <gtest/gtest.h>

#include "common/api_test.h"

#include <string>

#include "tachyon/error.h"
#include "tachyon/norm.h"

namespace tachyon {
namespace {

using test::expect_error;
using test::fake;

RmsNormForward rms(DType dt = DType::bf16) {
  RmsNormForward a;
  a.x = view(fake(0x100000), dt, {8, 64});
  a.y = view(fake(0x200000), dt, {8, 64});
  a.weight = view(fake(0x300000), dt, {64});
  return a;
}

TEST(NormApi, RmsForwardRejectsBadArguments) {
  auto a = rms();
  a.x.dtype = DType::i32;
  expect_error([&] { rms_norm_forward(a); }, {"rms_norm_forward", "x", "i32"});
  a = rms();
  a.y = view(fake(0x200000), DType::bf16, {8, 65});
  expect_error([&] { rms_norm_forward(a); }, {"rms_norm_forward", "y", "shape"});
  a = rms();
  a.weight = view(fake(0x300000), DType::bf16, {63});
  expect_error([&] { rms_norm_forward(a); }, {"rms_norm_forward", "weight", "64"});
  a = rms();
  a.rstd = view(fake(0x400000), DType::bf16, {8});
  expect_error([&] { rms_norm_forward(a); }, {"rms_norm_forward", "rstd", "bf16"});
  a = rms();
  a.rstd = view(fake(0x400000), DType::f32, {7});
  expect_error([&] { rms_norm_forward(a); }, {"rms_norm_forward", "rstd", "8"});
  a = rms();
  a.eps = -1.f;
  expect_error([&] { rms_norm_forward(a); }, {"rms_norm_forward", "eps"});
  a = rms();
  a.residual = view(fake(0x500000), DType::f32, {8, 64});
  expect_error([&] { rms_norm_forward(a); }, {"rms_norm_forward", "residual_out", "required"});
  a = rms();
  a.x = view(nullptr, DType::bf16, {8, 64});
  expect_error([&] { rms_norm_forward(a); }, {"rms_norm_forward", "x", "null"});
  a = rms();
  a.x = view(fake(0x100000), DType::bf16, {8, 64}, {64, 2});
  expect_error([&] { rms_norm_forward(a); }, {"rms_norm_forward", "x", "contiguous"});
  a = rms();
  a.y = view(fake(0x100000 + 2), DType::bf16, {8, 64});  // overlaps x, shifted by one element
  expect_error([&] { rms_norm_forward(a); }, {"rms_norm_forward", "y", "overlaps", "x"});
}

TEST(NormApi, ResidualOutMayNotAliasY) {
  auto a = rms();
  a.residual = view(fake(0x500000), DType::bf16, {8, 64});
  a.residual_out = a.y;
  expect_error([&] { rms_norm_forward(a); }, {"rms_norm_forward", "y", "residual_out"});
}

TEST(NormApi, OutputsMayNotOverlapWeightOrBias) {
  auto a = rms();
  a.weight = view(fake(0x200000 + 64), DType::bf16, {64});  // inside y's first row
  expect_error([&] { rms_norm_forward(a); }, {"rms_norm_forward", "y", "overlaps", "weight"});
  LayerNormForward l;
  l.x = view(fake(0x100000), DType::bf16, {8, 64});
  l.y = view(fake(0x200000), DType::bf16, {8, 64});
  l.bias = view(fake(0x200000 + 128 * 7), DType::bf16, {64});  // y's last row
  expect_error([&] { layer_norm_forward(l); }, {"layer_norm_forward", "y", "overlaps", "bias"});
}

TEST(NormApi, LayerNormRejectsBadArguments) {
  LayerNormForward a;
  a.x = view(fake(0x100000), DType::f32, {4, 32});
  a.y = view(fake(0x200000), DType::f32, {4, 32});
  a.bias = view(fake(0x300000), DType::f32, {31});
  expect_error([&] { layer_norm_forward(a); }, {"layer_norm_forward", "bias"});
  a.bias = {};
  a.mean = view(fake(0x300000), DType::f32, {5});
  expect_error([&] { layer_norm_forward(a); }, {"layer_norm_forward", "mean"});
}

TEST(NormApi, BackwardRejectsBadArguments) {
  RmsNormBackward b;
  b.x = view(fake(0x100000), DType::bf16, {8, 64});
  b.dy = view(fake(0x200000), DType::f32, {8, 64});
  b.dx = view(fake(0x300000), DType::bf16, {8, 64});
  b.rstd = view(fake(0x400000), DType::f32, {8});
  expect_error([&] { rms_norm_backward(b); }, {"rms_norm_backward", "dy", "dtype"});
  b.dy.dtype = DType::bf16;
  b.rstd = {};
  expect_error([&] { rms_norm_backward(b); }, {"rms_norm_backward", "rstd", "required"});
  b.rstd = view(fake(0x400000), DType::f32, {8});
  b.dw = view(fake(0x500000), DType::f32, {64});
  expect_error([&] { rms_norm_backward(b); }, {"rms_norm_backward", "dw", "no weight"});
  LayerNormBackward l;
  l.x = view(fake(0x100000), DType::f32, {8, 64});
  l.dy = view(fake(0x200000), DType::f32, {8, 64});
  l.dx = view(fake(0x300000), DType::f32, {8, 64});
  l.rstd = view(fake(0x400000), DType::f32, {8});
  expect_error([&] { layer_norm_backward(l); }, {"layer_norm_backward", "mean", "required"});
}

TEST(NormApi, EmptyIsNoOpWithoutDevice) {
  RmsNormForward a;
  a.x = view(nullptr, DType::bf16, {0, 64});
  a.y = view(nullptr, DType::bf16, {0, 64});
  EXPECT_NO_THROW(rms_norm_forward(a));
}

}  // namespace
}  // namespace tachyon

// GEMM API contract on the CPU: every validation error is thrown before any CUDA call and
// names the op and the argument; empty problems are a no-op without a device.
#include <gtest/gtest.h>

#include "common/api_test.h"

#include <string>

#include "tachyon/error.h"
#include "tachyon/gemm.h"

namespace tachyon {
namespace {

using test::expect_error;
using test::fake;

// A valid 64 x 32 x 48 problem on fake, disjoint addresses.
GemmArgs valid() {
  GemmArgs g;
  g.a = view(fake(0x100000), DType::bf16, {64, 48});
  g.b = view(fake(0x200000), DType::bf16, {32, 48});
  g.d = view(fake(0x300000), DType::bf16, {64, 32});
  return g;
}

TEST(GemmApi, RejectsInputDtypes) {
  GemmArgs g = valid();
  g.a.dtype = DType::f32;
  expect_error([&] { gemm(g); }, {"gemm", "a", "f32"});
  g = valid();
  g.b.dtype = DType::f16;
  expect_error([&] { gemm(g); }, {"gemm", "b", "dtype"});
  g = valid();
  g.d.dtype = DType::i32;
  expect_error([&] { gemm(g); }, {"gemm", "d", "i32"});
}

TEST(GemmApi, RejectsMismatchedK) {
  GemmArgs g = valid();
  g.b = view(fake(0x200000), DType::bf16, {32, 40});
  expect_error([&] { gemm(g); }, {"gemm", "b", "K = 40", "48"});
  g = valid();
  g.b_layout = BLayout::kn;  // (32, 48) read as (K, N): K = 32
  expect_error([&] { gemm(g); }, {"gemm", "b", "(K, N)"});
}

TEST(GemmApi, RejectsWrongOutputShape) {
  GemmArgs g = valid();
  g.d = view(fake(0x300000), DType::bf16, {64, 33});
  expect_error([&] { gemm(g); }, {"gemm", "d", "(M, N) = (64, 32)"});
}

TEST(GemmApi, RejectsBThatIsNot2D) {
  GemmArgs g = valid();
  g.b = view(fake(0x200000), DType::bf16, {2, 16, 48});
  expect_error([&] { gemm(g); }, {"gemm", "b", "2-D"});
}

TEST(GemmApi, RejectsNonContiguousInnerDimension) {
  GemmArgs g = valid();
  g.a = view(fake(0x100000), DType::bf16, {64, 48}, {1, 64});  // column-major A
  expect_error([&] { gemm(g); }, {"gemm", "a", "contiguous"});
}

TEST(GemmApi, RejectsMissingCWithBeta) {
  GemmArgs g = valid();
  g.beta = 0.5f;
  expect_error([&] { gemm(g); }, {"gemm", "c", "beta"});
}

TEST(GemmApi, RejectsBadC) {
  GemmArgs g = valid();
  g.beta = 1.f;
  g.c = view(fake(0x400000), DType::f32, {64, 32});
  expect_error([&] { gemm(g); }, {"gemm", "c", "dtype"});
  g.c = view(fake(0x400000), DType::bf16, {64, 31});
  expect_error([&] { gemm(g); }, {"gemm", "c", "shape"});
}

TEST(GemmApi, RejectsBadBias) {
  GemmArgs g = valid();
  g.bias = view(fake(0x500000), DType::f32, {31});
  expect_error([&] { gemm(g); }, {"gemm", "bias", "32"});
  g.bias = view(fake(0x500000), DType::i64, {32});
  expect_error([&] { gemm(g); }, {"gemm", "bias", "i64"});
  g.bias = view(fake(0x500000), DType::f32, {32}, {2});
  expect_error([&] { gemm(g); }, {"gemm", "bias", "contiguous"});
}

TEST(GemmApi, RejectsOverlaps) {
  GemmArgs g = valid();
  g.d = view(fake(0x100000 + 64), DType::bf16, {64, 32});  // inside A
  expect_error([&] { gemm(g); }, {"gemm", "d", "overlaps", "a"});
  g = valid();
  g.d = view(fake(0x200000), DType::bf16, {64, 32});
  expect_error([&] { gemm(g); }, {"gemm", "d", "b"});
  g = valid();
  g.beta = 1.f;
  g.c = view(fake(0x300000 + 2), DType::bf16, {64, 32});  // shifted by one element
  expect_error([&] { gemm(g); }, {"gemm", "d", "overlaps", "c"});
  g = valid();
  g.bias = view(fake(0x300000), DType::bf16, {32});
  expect_error([&] { gemm(g); }, {"gemm", "d", "bias"});
}

TEST(GemmApi, RejectsNullAndMisalignedData) {
  GemmArgs g = valid();
  g.a.data = nullptr;
  expect_error([&] { gemm(g); }, {"gemm", "a", "null"});
  g = valid();
  g.b.data = fake(0x200001);
  expect_error([&] { gemm(g); }, {"gemm", "b", "aligned"});
}

TEST(GemmApi, RejectsInvalidEnums) {
  GemmArgs g = valid();
  g.activation = static_cast<Activation>(9);
  expect_error([&] { gemm(g); }, {"gemm", "activation"});
  g = valid();
  g.b_layout = static_cast<BLayout>(5);
  expect_error([&] { gemm(g); }, {"gemm", "b_layout"});
}

TEST(GemmApi, RejectsAbsentOperands) {
  GemmArgs g = valid();
  g.b = TensorView{};
  expect_error([&] { gemm(g); }, {"gemm", "b", "absent"});
}

TEST(GemmApi, EmptyIsNoOpWithoutDevice) {
  GemmArgs g;
  g.a = view(nullptr, DType::bf16, {0, 48});
  g.b = view(fake(0x200000), DType::bf16, {32, 48});
  g.d = view(nullptr, DType::f32, {0, 32});
  EXPECT_NO_THROW(gemm(g));
  g.a = view(fake(0x100000), DType::bf16, {64, 48});
  g.b = view(nullptr, DType::bf16, {0, 48});
  g.d = view(nullptr, DType::f32, {64, 0});
  EXPECT_NO_THROW(gemm(g));
}

TEST(GemmApi, InPlaceCIsAccepted) {
  // C == D is valid: the call gets past validation and fails only for want of a device
  // (or on the fake pointers), never with a validation message.
  GemmArgs g = valid();
  g.beta = 1.f;
  g.c = g.d;
  try {
    gemm(g);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("overlaps"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("same memory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tachyon

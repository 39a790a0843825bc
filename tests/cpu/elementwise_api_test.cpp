// Elementwise API contract on the CPU: every validation error is thrown before any CUDA
// call, names the op and the argument; the launch plan covers every element.
#include <gtest/gtest.h>

#include "common/api_test.h"

#include <string>

#include "elementwise/elementwise_plan.h"
#include "tachyon/elementwise.h"
#include "tachyon/error.h"

namespace tachyon {
namespace {

using test::expect_error;
using test::fake;

TEST(ElementwiseApi, RejectsDtypeMismatch) {
  auto a = view(fake(0x10000), DType::f32, {8});
  auto b = view(fake(0x20000), DType::bf16, {8});
  auto o = view(fake(0x30000), DType::f32, {8});
  expect_error([&] { add(a, b, o); }, {"add", "b", "dtype"});
  expect_error([&] { add(a, a, b); }, {"add", "out", "dtype"});
}

TEST(ElementwiseApi, RejectsUnsupportedDtype) {
  auto a = view(fake(0x10000), DType::i32, {8});
  expect_error([&] { relu(a, a); }, {"relu", "x", "i32"});
}

TEST(ElementwiseApi, RejectsShapeMismatch) {
  auto a = view(fake(0x10000), DType::f16, {4, 8});
  auto b = view(fake(0x20000), DType::f16, {4, 9});
  auto o = view(fake(0x30000), DType::f16, {4, 8});
  expect_error([&] { mul(a, b, o); }, {"mul", "b", "shape"});
  expect_error([&] { swiglu(a, a, b); }, {"swiglu", "out", "shape"});
}

TEST(ElementwiseApi, RejectsNullWithElements) {
  auto a = view(nullptr, DType::f32, {8});
  auto o = view(fake(0x30000), DType::f32, {8});
  expect_error([&] { silu(a, o); }, {"silu", "x", "null"});
}

TEST(ElementwiseApi, RejectsNonContiguousInner) {
  auto a = view(fake(0x10000), DType::f32, {4, 8}, {16, 2});
  auto o = view(fake(0x30000), DType::f32, {4, 8});
  expect_error([&] { gelu(a, o); }, {"gelu", "x", "contiguous"});
}

TEST(ElementwiseApi, RejectsOverlappingRows) {
  auto a = view(fake(0x10000), DType::f32, {4, 8}, {4, 1});  // rows overlap each other
  auto o = view(fake(0x30000), DType::f32, {4, 8});
  expect_error([&] { relu(a, o); }, {"relu", "x", "row stride"});
}

TEST(ElementwiseApi, RejectsPartialOverlapButAllowsInPlace) {
  auto a = view(fake(0x10000), DType::f32, {64});
  auto o = view(fake(0x10004), DType::f32, {64});
  expect_error([&] { relu(a, o); }, {"relu", "out", "overlaps", "x"});
  // Two column blocks of one buffer interleave without overlapping: accepted up to the launch,
  // which fails on the fake pointers only with a CUDA error (or no device), never a validation one.
  auto left = view(fake(0x10000), DType::f32, {4, 8}, {16, 1});
  auto right = view(fake(0x10000 + 8 * 4), DType::f32, {4, 8}, {16, 1});
  try {
    relu(left, right);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("overlaps"), std::string::npos) << e.what();
  }
}

TEST(ElementwiseApi, RejectsMisalignedElement) {
  auto a = view(fake(0x10001), DType::f32, {8});
  auto o = view(fake(0x30000), DType::f32, {8});
  expect_error([&] { relu(a, o); }, {"relu", "x", "aligned"});
}

TEST(ElementwiseApi, EmptyIsNoOpWithoutDevice) {
  EXPECT_NO_THROW(add(view(nullptr, DType::bf16, {0}), view(nullptr, DType::bf16, {0}),
                      view(nullptr, DType::bf16, {0})));
  EXPECT_NO_THROW(relu(view(nullptr, DType::f32, {3, 0}), view(nullptr, DType::f32, {3, 0})));
}

TEST(ElementwisePlan, CoversEveryElementOfEveryFrame) {
  for (int vec : {4, 8})
    for (std::int64_t rows : {1, 3, 1000})
      for (std::int64_t cols : {1, 7, 8, 9, 4095, 4097, 100000})
        for (int off = 0; off < vec; ++off) {
          auto p = detail::plan_elementwise(rows, cols, vec, off);
          // The last column must fall in the last chunk of the frame: (cols - 1 + off) / vec.
          EXPECT_GE(p.chunks_per_row * vec, cols + off);
          EXPECT_LT((p.chunks_per_row - 1) * vec, cols + off);
          EXPECT_EQ(p.total_chunks, rows * p.chunks_per_row);
          EXPECT_GE(p.blocks * p.threads * p.chunks_per_thread, p.total_chunks);
          EXPECT_LE(p.threads, 1024);
        }
}

TEST(TensorView, ContiguityAndStrings) {
  auto t = view(fake(0x1000), DType::bf16, {2, 3, 4});
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.stride[0], 12);
  auto s = matrix(fake(0x1000), DType::f32, 4, 5, 8);
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_EQ(s.str(), "f32[4, 5] stride [8, 1]");
  EXPECT_THROW(view(fake(0x1000), DType::f32, {1, 2, 3, 4, 5}), Error);
  EXPECT_THROW(view(fake(0x1000), DType::f32, {-1}), Error);
}

}  // namespace
}  // namespace tachyon

// Elementwise API contract on the CPU: every validation error is thrown before any CUDA
// call, names the op and the argument; the launch plan covers every element.
#include <gtest/gtest.h>

#include "common/api_test.h"

#include <cstdint>
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

// ---- backward passes: silu_backward(dy, x, dx), gelu_backward(dy, x, dx),
// swiglu_backward(dy, gate, up, dgate, dup) ----------------------------------------------

TEST(ElementwiseBackwardApi, RejectsNullWithElements) {
  auto t = [](std::uintptr_t addr) { return view(fake(addr), DType::bf16, {4, 8}); };
  auto null = view(nullptr, DType::bf16, {4, 8});
  expect_error([&] { silu_backward(null, t(0x20000), t(0x30000)); }, {"silu_backward", "dy", "null"});
  expect_error([&] { gelu_backward(t(0x10000), null, t(0x30000)); }, {"gelu_backward", "x", "null"});
  expect_error([&] { silu_backward(t(0x10000), t(0x20000), null); }, {"silu_backward", "dx", "null"});
  expect_error([&] { swiglu_backward(t(0x10000), null, t(0x20000), t(0x30000), t(0x40000)); },
               {"swiglu_backward", "gate", "null"});
  expect_error([&] { swiglu_backward(t(0x10000), t(0x20000), null, t(0x30000), t(0x40000)); },
               {"swiglu_backward", "up", "null"});
  expect_error([&] { swiglu_backward(t(0x10000), t(0x20000), t(0x30000), null, t(0x40000)); },
               {"swiglu_backward", "dgate", "null"});
  expect_error([&] { swiglu_backward(t(0x10000), t(0x20000), t(0x30000), t(0x40000), null); },
               {"swiglu_backward", "dup", "null"});
}

TEST(ElementwiseBackwardApi, RejectsDtypeMismatch) {
  auto f32 = [](std::uintptr_t addr) { return view(fake(addr), DType::f32, {8}); };
  auto bf = view(fake(0x50000), DType::bf16, {8});
  expect_error([&] { silu_backward(view(fake(0x10000), DType::i32, {8}), f32(0x20000), f32(0x30000)); },
               {"silu_backward", "dy", "i32"});
  expect_error([&] { silu_backward(f32(0x10000), bf, f32(0x30000)); }, {"silu_backward", "x", "dtype"});
  expect_error([&] { gelu_backward(f32(0x10000), f32(0x20000), bf); }, {"gelu_backward", "dx", "dtype"});
  expect_error([&] { swiglu_backward(f32(0x10000), f32(0x20000), bf, f32(0x30000), f32(0x40000)); },
               {"swiglu_backward", "up", "dtype"});
  expect_error([&] { swiglu_backward(f32(0x10000), f32(0x20000), f32(0x30000), bf, f32(0x40000)); },
               {"swiglu_backward", "dgate", "dtype"});
  expect_error([&] { swiglu_backward(f32(0x10000), f32(0x20000), f32(0x30000), f32(0x40000), bf); },
               {"swiglu_backward", "dup", "dtype"});
}

TEST(ElementwiseBackwardApi, RejectsShapeMismatch) {
  auto t = [](std::uintptr_t addr) { return view(fake(addr), DType::f16, {4, 8}); };
  auto wide = view(fake(0x50000), DType::f16, {4, 9});
  expect_error([&] { gelu_backward(t(0x10000), wide, t(0x30000)); }, {"gelu_backward", "x", "shape"});
  expect_error([&] { silu_backward(t(0x10000), t(0x20000), wide); }, {"silu_backward", "dx", "shape"});
  expect_error([&] { swiglu_backward(t(0x10000), wide, t(0x20000), t(0x30000), t(0x40000)); },
               {"swiglu_backward", "gate", "shape"});
  expect_error([&] { swiglu_backward(t(0x10000), t(0x20000), t(0x30000), wide, t(0x40000)); },
               {"swiglu_backward", "dgate", "shape"});
  expect_error([&] { swiglu_backward(t(0x10000), t(0x20000), t(0x30000), t(0x40000), wide); },
               {"swiglu_backward", "dup", "shape"});
}

TEST(ElementwiseBackwardApi, RejectsGradientOverlappingAnInput) {
  auto t = [](std::uintptr_t addr) { return view(fake(addr), DType::f32, {64}); };
  // Shifted by one element: overlap, not in place.
  expect_error([&] { silu_backward(t(0x10000), t(0x20000), t(0x10004)); }, {"silu_backward", "dx", "overlaps", "dy"});
  expect_error([&] { gelu_backward(t(0x10000), t(0x20000), t(0x1fffc)); }, {"gelu_backward", "dx", "overlaps", "x"});
  expect_error([&] { swiglu_backward(t(0x10000), t(0x20000), t(0x30000), t(0x30004), t(0x40000)); },
               {"swiglu_backward", "dgate", "overlaps", "up"});
  expect_error([&] { swiglu_backward(t(0x10000), t(0x20000), t(0x30000), t(0x40000), t(0x20008)); },
               {"swiglu_backward", "dup", "overlaps", "gate"});
  expect_error([&] { swiglu_backward(t(0x10000), t(0x20000), t(0x30000), t(0x40000), t(0x0fff0)); },
               {"swiglu_backward", "dup", "overlaps", "dy"});
  // The same memory with another layout is not in place either.
  auto dy = view(fake(0x10000), DType::f32, {8, 8});
  auto x = view(fake(0x20000), DType::f32, {8, 8});
  auto dx = matrix(fake(0x10000), DType::f32, 8, 8, 16);
  expect_error([&] { silu_backward(dy, x, dx); }, {"silu_backward", "dx", "dy"});
}

TEST(ElementwiseBackwardApi, RejectsGradientsOverlappingEachOther) {
  auto t = [](std::uintptr_t addr) { return view(fake(addr), DType::bf16, {4, 8}); };
  const auto dy = t(0x10000), gate = t(0x20000), up = t(0x30000);
  expect_error([&] { swiglu_backward(dy, gate, up, t(0x40000), t(0x40000)); },
               {"swiglu_backward", "dup", "same memory", "dgate"});
  expect_error([&] { swiglu_backward(dy, gate, up, t(0x40000), t(0x40002)); },
               {"swiglu_backward", "dup", "overlaps", "dgate"});
  // Each would be a valid in-place write on its own; both over the same input is not.
  expect_error([&] { swiglu_backward(dy, gate, up, dy, dy); }, {"swiglu_backward", "dup", "dgate"});
  expect_error([&] { swiglu_backward(dy, gate, up, gate, gate); }, {"swiglu_backward", "dup", "dgate"});
}

// In place is accepted: with 2^44 elements the call gets past every overlap check and stops
// at the last host-side check (too many elements for one launch), before any CUDA call.
TEST(ElementwiseBackwardApi, AllowsInPlace) {
  constexpr std::int64_t kHuge = std::int64_t{1} << 44;
  auto t = [](int slot) {  // 2^46 bytes each, 2^48 apart
    return view(fake((std::uintptr_t{1} << 47) | (static_cast<std::uintptr_t>(slot) << 48)), DType::f32, {kHuge});
  };
  const auto dy = t(1), x = t(2), up = t(3), other = t(4);
  expect_error([&] { silu_backward(dy, x, dy); }, {"silu_backward", "dx", "too many elements"});
  expect_error([&] { silu_backward(dy, x, x); }, {"silu_backward", "dx", "too many elements"});
  expect_error([&] { gelu_backward(dy, x, dy); }, {"gelu_backward", "dx", "too many elements"});
  expect_error([&] { gelu_backward(dy, x, x); }, {"gelu_backward", "dx", "too many elements"});
  const auto& gate = x;
  expect_error([&] { swiglu_backward(dy, gate, up, gate, up); }, {"swiglu_backward", "dgate", "too many elements"});
  expect_error([&] { swiglu_backward(dy, gate, up, dy, up); }, {"swiglu_backward", "dgate", "too many elements"});
  expect_error([&] { swiglu_backward(dy, gate, up, gate, dy); }, {"swiglu_backward", "dgate", "too many elements"});
  expect_error([&] { swiglu_backward(dy, gate, up, other, dy); }, {"swiglu_backward", "dgate", "too many elements"});
}

TEST(ElementwiseBackwardApi, EmptyIsNoOpWithoutDevice) {
  const auto e = view(nullptr, DType::f16, {0});
  EXPECT_NO_THROW(silu_backward(e, e, e));
  EXPECT_NO_THROW(gelu_backward(e, e, e));
  EXPECT_NO_THROW(swiglu_backward(e, e, e, e, e));
  const auto m = view(nullptr, DType::f32, {5, 0});
  EXPECT_NO_THROW(swiglu_backward(m, m, m, m, m));
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

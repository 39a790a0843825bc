// Elementwise ops against the fp64 reference: every op x dtype x size, NaN/Inf inputs,
// poisoned outputs, misaligned base pointers, strided rows, in place, and > 2^31 elements.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "common/compare.h"
#include "common/device_fill.h"
#include "common/gpu.h"
#include "common/host_tensor.h"
#include "common/reference.h"
#include "tachyon/elementwise.h"
#include "tachyon/error.h"

namespace tachyon::test {
namespace {

// ---- the specification, as tables -----------------------------------------------------
struct OpCase {
  const char* name;
  int arity;
  std::function<void(const TensorView*, const TensorView&, cudaStream_t)> run;
  std::function<double(double, double)> ref;
};

const std::vector<OpCase>& ops() {
  static const std::vector<OpCase> table = {
      {"add", 2, [](auto in, auto& o, auto s) { add(in[0], in[1], o, s); }, ref::add},
      {"mul", 2, [](auto in, auto& o, auto s) { mul(in[0], in[1], o, s); }, ref::mul},
      {"relu", 1, [](auto in, auto& o, auto s) { relu(in[0], o, s); }, [](double x, double) { return ref::relu(x); }},
      {"silu", 1, [](auto in, auto& o, auto s) { silu(in[0], o, s); }, [](double x, double) { return ref::silu(x); }},
      {"gelu", 1, [](auto in, auto& o, auto s) { gelu(in[0], o, s); }, [](double x, double) { return ref::gelu_tanh(x); }},
      {"swiglu", 2, [](auto in, auto& o, auto s) { swiglu(in[0], in[1], o, s); }, ref::swiglu},
  };
  return table;
}

const DType kDtypes[] = {DType::f32, DType::f16, DType::bf16};
const std::int64_t kSizes[] = {1, 2, 7, 8, 4095, 4096, 4097, 1000003};

struct Layout {
  std::int64_t rows, cols, stride;
  int offset[3];  // per input a, b and output: base pointer offset in elements
};

// Runs one op on fresh random inputs (with NaN, +Inf, -Inf planted) and compares.
void check_op(const OpCase& op, DType dtype, const Layout& L, std::uint64_t seed) {
  SCOPED_TRACE(std::string(op.name) + " " + dtype_name(dtype) + " rows=" + std::to_string(L.rows) +
               " cols=" + std::to_string(L.cols) + " stride=" + std::to_string(L.stride));
  const std::int64_t n = L.rows * L.cols;
  std::vector<double> host[2];
  DeviceMatrix* dev[2] = {nullptr, nullptr};
  std::vector<std::unique_ptr<DeviceMatrix>> owned;
  TensorView in[2];
  for (int a = 0; a < op.arity; ++a) {
    host[a] = random_values(dtype, n, seed * 7 + a, 2.0);
    if (n > 3) {  // special values at varied positions
      host[a][(seed + a) % n] = NAN;
      host[a][(seed * 3 + a + 1) % n] = INFINITY;
      host[a][(seed * 5 + a + 2) % n] = -INFINITY;
    }
    owned.push_back(std::make_unique<DeviceMatrix>(dtype, L.rows, L.cols, L.stride, L.offset[a]));
    dev[a] = owned.back().get();
    dev[a]->upload(host[a]);
    in[a] = L.rows == 1 ? dev[a]->vector() : dev[a]->view();
  }
  DeviceMatrix out(dtype, L.rows, L.cols, L.stride, L.offset[2]);
  TensorView out_view = L.rows == 1 ? out.vector() : out.view();
  op.run(in, out_view, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<double> want(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    want[i] = op.ref(host[0][i], op.arity == 2 ? host[1][i] : 0.0);
  EXPECT_TRUE(all_close(out.download(), want, dtype, op.name));
}

class ElementwiseGpu : public ::testing::Test {
 protected:
  void SetUp() override { TACHYON_REQUIRE_GPU(); }
};

TEST_F(ElementwiseGpu, EveryOpDtypeAndSize) {
  std::uint64_t seed = 1;
  for (const auto& op : ops())
    for (DType dt : kDtypes)
      for (std::int64_t n : kSizes) check_op(op, dt, {1, n, n, {0, 0, 0}}, seed++);
}

TEST_F(ElementwiseGpu, MisalignedBasePointers) {
  std::uint64_t seed = 100;
  for (const auto& op : ops())
    for (DType dt : kDtypes) {
      check_op(op, dt, {1, 4097, 4097, {1, 1, 1}}, seed++);  // same misalignment everywhere
      check_op(op, dt, {1, 1000, 1000, {1, 0, 3}}, seed++);  // different for each tensor
    }
}

TEST_F(ElementwiseGpu, StridedRows) {
  std::uint64_t seed = 200;
  for (const auto& op : ops())
    for (DType dt : kDtypes) {
      check_op(op, dt, {37, 1000, 1003, {0, 0, 0}}, seed++);  // rows start at varying offsets
      check_op(op, dt, {5, 64, 128, {0, 0, 0}}, seed++);      // aligned, padded rows
      check_op(op, dt, {199, 7, 9, {1, 2, 0}}, seed++);
    }
}

TEST_F(ElementwiseGpu, InPlace) {
  for (DType dt : kDtypes) {
    const std::int64_t n = 10007;
    auto x = random_values(dt, n, 5, 2.0), y = random_values(dt, n, 6, 2.0);
    DeviceMatrix a(dt, 1, n), b(dt, 1, n);
    a.upload(x);
    b.upload(y);
    add(a.vector(), b.vector(), a.vector());
    silu(b.vector(), b.vector());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<double> want_a(n), want_b(n);
    for (std::int64_t i = 0; i < n; ++i) {
      want_a[i] = ref::add(x[i], y[i]);
      want_b[i] = ref::silu(y[i]);
    }
    EXPECT_TRUE(all_close(a.download(), want_a, dt, "add in place"));
    EXPECT_TRUE(all_close(b.download(), want_b, dt, "silu in place"));
  }
}

TEST_F(ElementwiseGpu, EmptyIsNoOp) {
  DeviceMatrix out(DType::bf16, 1, 4);
  add(view(nullptr, DType::bf16, {0}), view(nullptr, DType::bf16, {0}), view(nullptr, DType::bf16, {0}));
  relu(view(nullptr, DType::f32, {0, 5}), view(nullptr, DType::f32, {0, 5}));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// Checks positions [lo, hi) of a large flat result against the device pattern.
void check_pattern_range(const TensorView& out, std::int64_t lo, std::int64_t hi,
                         const std::function<double(double)>& f) {
  std::size_t es = dtype_size(out.dtype);
  std::vector<unsigned char> bytes(static_cast<std::size_t>(hi - lo) * es);
  ASSERT_EQ(cudaMemcpy(bytes.data(), static_cast<char*>(out.data) + lo * es, bytes.size(), cudaMemcpyDeviceToHost),
            cudaSuccess);
  auto got = decode(out.dtype, bytes);
  std::vector<double> want(got.size());
  for (std::int64_t i = lo; i < hi; ++i) want[i - lo] = round_to(out.dtype, f(pattern_value(i)));
  EXPECT_TRUE(all_close(got, want, out.dtype, "range " + std::to_string(lo) + ".." + std::to_string(hi)));
}

// The seed's shape (32768 x 32768, 2 GiB per bf16 operand) and a tensor past 2^31 elements.
TEST_F(ElementwiseGpu, HugeTensors) {
  if (quick_mode()) GTEST_SKIP() << "TACHYON_TEST_QUICK: huge shapes skipped";
  const std::int64_t sizes[] = {32768LL * 32768LL, (1LL << 31) + 9};
  for (std::int64_t n : sizes) {
    std::size_t free_b = 0, total_b = 0;
    ASSERT_EQ(cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
    if (free_b < static_cast<std::size_t>(n) * 2 * 3 + (1u << 30)) GTEST_SKIP() << "not enough device memory";
    DeviceMatrix a(DType::bf16, 1, n), b(DType::bf16, 1, n), o(DType::bf16, 1, n);
    fill_pattern(a.vector());
    fill_pattern(b.vector());
    add(a.vector(), b.vector(), o.vector());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::int64_t w = 1 << 20;
    check_pattern_range(o.vector(), 0, w, [](double x) { return 2 * x; });
    check_pattern_range(o.vector(), n / 2 - w / 2, n / 2 + w / 2, [](double x) { return 2 * x; });
    if (n > (1LL << 31))  // around the 2^31 element boundary, where 32-bit indexing would wrap
      check_pattern_range(o.vector(), (1LL << 31) - w / 2, std::min<std::int64_t>(n, (1LL << 31) + w / 2),
                          [](double x) { return 2 * x; });
    check_pattern_range(o.vector(), n - w, n, [](double x) { return 2 * x; });
  }
}

TEST_F(ElementwiseGpu, RejectsBeforeLaunch) {
  DeviceMatrix a(DType::f32, 1, 16), o(DType::f32, 1, 16);
  a.upload(std::vector<double>(16, 1.0));
  // Partial overlap: out shifted by one element against a.
  TensorView shifted = view(static_cast<float*>(a.data()) + 1, DType::f32, {15});
  TensorView a15 = view(a.data(), DType::f32, {15});
  EXPECT_THROW(relu(a15, shifted), Error);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto got = a.download();
  for (double v : got) EXPECT_EQ(v, 1.0);  // nothing written
}

}  // namespace
}  // namespace tachyon::test

// Elementwise ops against the fp64 reference: every op x dtype x size, NaN/Inf inputs,
// poisoned outputs, misaligned base pointers, strided rows, in place, and > 2^31 elements;
// the same for the backward passes (one or two gradients each).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
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

// ---- the backward passes, as a table ---------------------------------------------------
// Inputs are dy first, then the forward's inputs; one or two gradients. Each gradient is
// checked with the dtype's tolerance plus a floor of kGradFloor times the magnitude of the
// terms it sums (ref::*_scale): near a zero of the derivative the sum cancels, and fp32
// math is accurate there to a few ulps of the terms, not of the result.
constexpr double kGradFloor = 1e-6;

struct GradCase {
  const char* name;
  int arity;    // inputs, dy first
  int outputs;  // gradients
  std::function<void(const TensorView*, const TensorView*, cudaStream_t)> run;
  // Gradient o at one element (v: the arity input values): its value and its scale.
  std::function<double(const double*, int)> ref, scale;
};

const std::vector<GradCase>& grad_ops() {
  static const std::vector<GradCase> table = {
      {"silu_backward", 2, 1, [](auto in, auto out, auto s) { silu_backward(in[0], in[1], out[0], s); },
       [](const double* v, int) { return ref::silu_backward(v[0], v[1]); },
       [](const double* v, int) { return ref::silu_backward_scale(v[0], v[1]); }},
      {"gelu_backward", 2, 1, [](auto in, auto out, auto s) { gelu_backward(in[0], in[1], out[0], s); },
       [](const double* v, int) { return ref::gelu_tanh_backward(v[0], v[1]); },
       [](const double* v, int) { return ref::gelu_tanh_backward_scale(v[0], v[1]); }},
      {"swiglu_backward", 3, 2,
       [](auto in, auto out, auto s) { swiglu_backward(in[0], in[1], in[2], out[0], out[1], s); },
       [](const double* v, int o) {
         return o == 0 ? ref::swiglu_backward_gate(v[0], v[1], v[2]) : ref::swiglu_backward_up(v[0], v[1], v[2]);
       },
       [](const double* v, int o) {  // dup is a product: no cancellation, no floor
         return o == 0 ? ref::swiglu_backward_gate_scale(v[0], v[1], v[2]) : 0.0;
       }},
  };
  return table;
}

struct GradLayout {
  std::int64_t rows, cols, stride;
  int in_offset[3];   // per input: base pointer offset in elements
  int out_offset[2];  // per output
  int alias[2] = {-1, -1};  // per output: the input it is written over (in place), or -1
};

// Runs one backward on fresh random inputs (with NaN, +Inf, -Inf planted) and compares
// every gradient.
void check_grad(const GradCase& op, DType dtype, const GradLayout& L, std::uint64_t seed) {
  SCOPED_TRACE(std::string(op.name) + " " + dtype_name(dtype) + " rows=" + std::to_string(L.rows) +
               " cols=" + std::to_string(L.cols) + " stride=" + std::to_string(L.stride) + " alias=" +
               std::to_string(L.alias[0]) + "," + std::to_string(L.alias[1]));
  const std::int64_t n = L.rows * L.cols;
  const bool vector_shaped = L.rows == 1 && L.stride == L.cols;  // else 2-D, one row included
  std::vector<double> host[3];
  std::unique_ptr<DeviceMatrix> in_dev[3], out_dev[2];
  TensorView in[3], out[2];
  for (int a = 0; a < op.arity; ++a) {
    host[a] = random_values(dtype, n, seed * 7 + a, 2.0);
    if (n > 3) {  // special values at varied positions
      host[a][(seed + a) % n] = NAN;
      host[a][(seed * 3 + a + 1) % n] = INFINITY;
      host[a][(seed * 5 + a + 2) % n] = -INFINITY;
    }
    in_dev[a] = std::make_unique<DeviceMatrix>(dtype, L.rows, L.cols, L.stride, L.in_offset[a]);
    in_dev[a]->upload(host[a]);
    in[a] = vector_shaped ? in_dev[a]->vector() : in_dev[a]->view();
  }
  const DeviceMatrix* result[2] = {nullptr, nullptr};
  for (int o = 0; o < op.outputs; ++o) {
    if (L.alias[o] >= 0) {
      result[o] = in_dev[L.alias[o]].get();
      out[o] = in[L.alias[o]];
    } else {
      out_dev[o] = std::make_unique<DeviceMatrix>(dtype, L.rows, L.cols, L.stride, L.out_offset[o]);
      result[o] = out_dev[o].get();
      out[o] = vector_shaped ? out_dev[o]->vector() : out_dev[o]->view();
    }
  }
  op.run(in, out, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (int o = 0; o < op.outputs; ++o) {
    std::vector<double> want(static_cast<std::size_t>(n)), floor(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      const double v[3] = {host[0][i], host[1][i], op.arity == 3 ? host[2][i] : 0.0};
      want[i] = op.ref(v, o);
      floor[i] = kGradFloor * op.scale(v, o);
    }
    EXPECT_TRUE(all_close(result[o]->download(), want, dtype, tolerance_for(dtype), floor,
                          std::string(op.name) + " output " + std::to_string(o)));
  }
}

TEST_F(ElementwiseGpu, BackwardEveryOpDtypeAndSize) {
  std::uint64_t seed = 300;
  for (const auto& op : grad_ops())
    for (DType dt : kDtypes)
      for (std::int64_t n : kSizes) check_grad(op, dt, {1, n, n, {0, 0, 0}, {0, 0}}, seed++);
}

// The kernel's chunks sit in the first output's frame: inputs and the second output aligned
// differently from it take the narrow path, and must still be right.
TEST_F(ElementwiseGpu, BackwardMisalignedBasePointers) {
  std::uint64_t seed = 400;
  for (const auto& op : grad_ops())
    for (DType dt : kDtypes) {
      check_grad(op, dt, {1, 4097, 4097, {1, 1, 1}, {1, 1}}, seed++);  // same misalignment everywhere
      check_grad(op, dt, {1, 1000, 1000, {1, 0, 3}, {2, 5}}, seed++);  // different for each tensor
      check_grad(op, dt, {1, 1000, 1000, {0, 0, 0}, {0, 1}}, seed++);  // only the second output off
      check_grad(op, dt, {1, 1001, 1001, {3, 3, 3}, {3, 0}}, seed++);  // only the second output aligned
    }
}

TEST_F(ElementwiseGpu, BackwardStridedRows) {
  std::uint64_t seed = 500;
  for (const auto& op : grad_ops())
    for (DType dt : kDtypes) {
      check_grad(op, dt, {37, 1000, 1003, {0, 0, 0}, {0, 0}}, seed++);  // rows start at varying offsets
      check_grad(op, dt, {5, 64, 128, {0, 0, 0}, {0, 0}}, seed++);      // aligned, padded rows
      check_grad(op, dt, {199, 7, 9, {1, 2, 3}, {0, 1}}, seed++);
      check_grad(op, dt, {33, 513, 520, {0, 1, 0}, {1, 6}}, seed++);    // outputs' rows in different frames
      check_grad(op, dt, {1, 4097, 4100, {0, 1, 2}, {3, 0}}, seed++);   // M = 1 as a 2-D view
    }
}

// Each gradient written over one of the inputs it reads, dense and strided, misaligned too.
TEST_F(ElementwiseGpu, BackwardInPlace) {
  std::uint64_t seed = 600;
  const auto& table = grad_ops();
  for (DType dt : kDtypes)
    for (const GradLayout& base : {GradLayout{1, 10007, 10007, {0, 0, 0}, {0, 0}},
                                   GradLayout{1, 4097, 4097, {1, 3, 2}, {0, 0}},
                                   GradLayout{37, 1000, 1003, {0, 1, 2}, {0, 0}}}) {
      for (int which = 0; which < 2; ++which) {  // dx over dy, then over x
        GradLayout L = base;
        L.alias[0] = which;
        check_grad(table[0], dt, L, seed++);
        check_grad(table[1], dt, L, seed++);
      }
      // swiglu_backward: (dgate, dup) over (gate, up), (dy, up), (gate, dy), (up, gate).
      for (auto alias : {std::pair{1, 2}, std::pair{0, 2}, std::pair{1, 0}, std::pair{2, 1}}) {
        GradLayout L = base;
        L.alias[0] = alias.first;
        L.alias[1] = alias.second;
        check_grad(table[2], dt, L, seed++);
      }
      GradLayout L = base;  // only dup in place
      L.alias[1] = 2;
      check_grad(table[2], dt, L, seed++);
    }
}

// Every combination of special and ordinary values, against PyTorch's results: x = +-Inf gives
// NaN (Inf times a zero sigmoid term), dy = +-Inf gives +-Inf wherever the derivative is not 0.
TEST_F(ElementwiseGpu, BackwardNanInfPropagation) {
  const double specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.5, -1.5, 6.0, -6.0, 0.25};
  for (const auto& op : grad_ops())
    for (DType dt : kDtypes) {
      std::vector<double> cols[3];
      for (double a : specials)
        for (double b : specials)
          for (double c : op.arity == 3 ? std::vector<double>(std::begin(specials), std::end(specials))
                                        : std::vector<double>{0.0}) {
            cols[0].push_back(a);
            cols[1].push_back(b);
            cols[2].push_back(c);
          }
      const auto n = static_cast<std::int64_t>(cols[0].size());
      SCOPED_TRACE(std::string(op.name) + " " + dtype_name(dt));
      std::unique_ptr<DeviceMatrix> in_dev[3], out_dev[2];
      TensorView in[3], out[2];
      for (int a = 0; a < op.arity; ++a) {
        in_dev[a] = std::make_unique<DeviceMatrix>(dt, 1, n);
        in_dev[a]->upload(cols[a]);
        in[a] = in_dev[a]->vector();
      }
      for (int o = 0; o < op.outputs; ++o) {
        out_dev[o] = std::make_unique<DeviceMatrix>(dt, 1, n);
        out[o] = out_dev[o]->vector();
      }
      op.run(in, out, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      for (int o = 0; o < op.outputs; ++o) {
        std::vector<double> want(static_cast<std::size_t>(n)), floor(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) {
          const double v[3] = {cols[0][i], cols[1][i], cols[2][i]};
          want[i] = op.ref(v, o);
          floor[i] = kGradFloor * op.scale(v, o);
        }
        EXPECT_TRUE(all_close(out_dev[o]->download(), want, dt, tolerance_for(dt), floor,
                              std::string(op.name) + " output " + std::to_string(o)));
      }
    }
}

TEST_F(ElementwiseGpu, BackwardEmptyIsNoOp) {
  const TensorView e = view(nullptr, DType::bf16, {0, 7});
  silu_backward(e, e, e);
  gelu_backward(e, e, e);
  swiglu_backward(e, e, e, e, e);
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

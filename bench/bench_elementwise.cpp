// Elementwise benchmarks. Bytes: every input read once, the output written once.
#include "harness.h"
#include "tachyon/elementwise.h"

namespace tachyon::bench {
namespace {

using Fn = void (*)(const TensorView* in, const TensorView& out, cudaStream_t);

Result run(Device& dev, DType dt, const Shape& sh, int arity, Fn fn) {
  const std::int64_t rows = sh.dims[0], cols = sh.dims.size() > 1 ? sh.dims[1] : 1;
  const std::size_t bytes = static_cast<std::size_t>(rows * cols) * dtype_size(dt);
  const int sets = dev.rotation_sets(static_cast<double>(bytes) * (arity + 1));
  Buffers bufs;
  void* in[2] = {nullptr, nullptr};
  for (int a = 0; a < arity; ++a) in[a] = bufs.add(bytes, dt, sets);
  void* out = bufs.add(bytes, dt, sets);
  Result r;
  r.ms = dev.median_ms(
      [&](int s) {
        TensorView v[2];
        for (int a = 0; a < arity; ++a) v[a] = view(bufs.get(in[a], s), dt, {rows, cols});
        fn(v, view(bufs.get(out, s), dt, {rows, cols}), dev.stream());
      },
      sets);
  r.bytes = static_cast<double>(bytes) * (arity + 1);
  return r;
}

// The seed's shape (32768^2) for 16-bit dtypes; 16384^2 for fp32 = 1 GiB per input.
const std::vector<Shape> kShapes = {{{32768, 32768}}, {{16384, 16384}}};

Case make(const char* op, int arity, Fn fn, bool all_dtypes) {
  Case c;
  c.family = "elementwise";
  c.op = op;
  c.dtypes = all_dtypes ? std::vector<DType>{DType::f16, DType::bf16, DType::f32} : std::vector<DType>{DType::bf16};
  c.shapes = kShapes;
  c.applies = [](DType dt, const Shape& sh) { return (dt == DType::f32) == (sh.dims[0] == 16384); };
  c.run = [arity, fn](Device& d, DType dt, const Shape& sh) { return run(d, dt, sh, arity, fn); };
  return c;
}

Register add_case(make("add", 2, [](const TensorView* i, const TensorView& o, cudaStream_t s) { add(i[0], i[1], o, s); }, true));
Register mul_case(make("mul", 2, [](const TensorView* i, const TensorView& o, cudaStream_t s) { mul(i[0], i[1], o, s); }, false));
Register relu_case(make("relu", 1, [](const TensorView* i, const TensorView& o, cudaStream_t s) { relu(i[0], o, s); }, false));
Register silu_case(make("silu", 1, [](const TensorView* i, const TensorView& o, cudaStream_t s) { silu(i[0], o, s); }, false));
Register gelu_case(make("gelu", 1, [](const TensorView* i, const TensorView& o, cudaStream_t s) { gelu(i[0], o, s); }, true));
Register swiglu_case(make("swiglu", 2, [](const TensorView* i, const TensorView& o, cudaStream_t s) { swiglu(i[0], i[1], o, s); }, true));

}  // namespace
}  // namespace tachyon::bench

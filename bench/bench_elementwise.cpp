// Elementwise benchmarks. Bytes: every input read once, the output written once.
#include "harness.h"
#include "tachyon/elementwise.h"

namespace tachyon::bench {
namespace {

using Fn = void (*)(const TensorView* in, const TensorView* out, cudaStream_t);

Result run(Device& dev, DType dt, const Shape& sh, int inputs, int outputs, Fn fn) {
  const std::int64_t rows = sh.dims[0], cols = sh.dims.size() > 1 ? sh.dims[1] : 1;
  const std::size_t bytes = static_cast<std::size_t>(rows * cols) * dtype_size(dt);
  const int sets = dev.rotation_sets(static_cast<double>(bytes) * (inputs + outputs));
  Buffers bufs;
  void* buf[5] = {};
  for (int a = 0; a < inputs + outputs; ++a) buf[a] = bufs.add(bytes, dt, sets);
  Result r;
  r.ms = dev.median_ms(
      [&](int s) {
        TensorView v[5];
        for (int a = 0; a < inputs + outputs; ++a) v[a] = view(bufs.get(buf[a], s), dt, {rows, cols});
        fn(v, v + inputs, dev.stream());
      },
      sets);
  r.bytes = static_cast<double>(bytes) * (inputs + outputs);
  return r;
}

// The seed's shape (32768^2) for 16-bit dtypes; 16384^2 for fp32 = 1 GiB per input.
const std::vector<Shape> kShapes = {{{32768, 32768}}, {{16384, 16384}}};

Case make(const char* op, int inputs, int outputs, Fn fn, bool all_dtypes) {
  Case c;
  c.family = "elementwise";
  c.op = op;
  c.dtypes = all_dtypes ? std::vector<DType>{DType::f16, DType::bf16, DType::f32} : std::vector<DType>{DType::bf16};
  c.shapes = kShapes;
  c.applies = [](DType dt, const Shape& sh) { return (dt == DType::f32) == (sh.dims[0] == 16384); };
  c.run = [inputs, outputs, fn](Device& d, DType dt, const Shape& sh) { return run(d, dt, sh, inputs, outputs, fn); };
  return c;
}

using V = const TensorView*;
Register add_case(make("add", 2, 1, [](V i, V o, cudaStream_t s) { add(i[0], i[1], o[0], s); }, true));
Register mul_case(make("mul", 2, 1, [](V i, V o, cudaStream_t s) { mul(i[0], i[1], o[0], s); }, false));
Register relu_case(make("relu", 1, 1, [](V i, V o, cudaStream_t s) { relu(i[0], o[0], s); }, false));
Register silu_case(make("silu", 1, 1, [](V i, V o, cudaStream_t s) { silu(i[0], o[0], s); }, false));
Register gelu_case(make("gelu", 1, 1, [](V i, V o, cudaStream_t s) { gelu(i[0], o[0], s); }, true));
Register swiglu_case(make("swiglu", 2, 1, [](V i, V o, cudaStream_t s) { swiglu(i[0], i[1], o[0], s); }, true));
// The backwards: (dy, x) -> dx; swiglu's (dy, gate, up) -> (dgate, dup).
Register silu_bwd_case(make("silu_backward", 2, 1, [](V i, V o, cudaStream_t s) { silu_backward(i[0], i[1], o[0], s); }, false));
Register gelu_bwd_case(make("gelu_backward", 2, 1, [](V i, V o, cudaStream_t s) { gelu_backward(i[0], i[1], o[0], s); }, true));
Register swiglu_bwd_case(make("swiglu_backward", 3, 2,
                              [](V i, V o, cudaStream_t s) { swiglu_backward(i[0], i[1], i[2], o[0], o[1], s); }, true));

}  // namespace
}  // namespace tachyon::bench

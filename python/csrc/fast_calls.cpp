// The Python entry points of the functional API: one pybind11 function per operator that
// calls the operator through torch's dispatcher from C++ (so autograd, FakeTensor, autocast
// and every other dispatch key behave exactly as for torch.ops.tachyon.*), without
// torch.ops' schema-driven argument parsing in Python, which measured 1-7 us a call for
// operators with several optional and scalar arguments (docs/python.md). torch.compile traces
// the torch.ops path instead (python/tachyon/functional.py).
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/utils/pybind.h>

#include <optional>
#include <tuple>

namespace {

using at::Tensor;
using OptTensor = std::optional<Tensor>;
using T3 = std::tuple<Tensor, Tensor, Tensor>;

template <class Sig>
c10::TypedOperatorHandle<Sig> handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "tachyon: the torch operators (torch.ops.tachyon) and their fast Python entry points";
  namespace py = pybind11;
  using Unary = Tensor(const Tensor&);
  using Binary = Tensor(const Tensor&, const Tensor&);
  static const auto silu = handle<Unary>("tachyon::silu");
  static const auto gelu = handle<Unary>("tachyon::gelu");
  static const auto relu = handle<Unary>("tachyon::relu");
  static const auto swiglu = handle<Binary>("tachyon::swiglu");
  static const auto add = handle<Binary>("tachyon::add");
  static const auto mul = handle<Binary>("tachyon::mul");
  static const auto rms_norm = handle<T3(const Tensor&, const OptTensor&, const OptTensor&, double, double)>("tachyon::rms_norm");
  static const auto layer_norm = handle<T3(const Tensor&, const OptTensor&, const OptTensor&, double)>("tachyon::layer_norm");
  static const auto softmax = handle<Tensor(const Tensor&, bool)>("tachyon::softmax");
  static const auto cross_entropy =
      handle<T3(const Tensor&, const Tensor&, int64_t, int64_t, double, bool, double)>("tachyon::cross_entropy");
  static const auto gemm = handle<Tensor(const Tensor&, const Tensor&, const OptTensor&, const OptTensor&, double, double,
                                         int64_t, bool, std::optional<at::ScalarType>)>("tachyon::gemm");

  m.def("silu", [](const Tensor& x) { return silu.call(x); });
  m.def("gelu", [](const Tensor& x) { return gelu.call(x); });
  m.def("relu", [](const Tensor& x) { return relu.call(x); });
  m.def("swiglu", [](const Tensor& g, const Tensor& u) { return swiglu.call(g, u); });
  m.def("add", [](const Tensor& a, const Tensor& b) { return add.call(a, b); });
  m.def("mul", [](const Tensor& a, const Tensor& b) { return mul.call(a, b); });
  // rms_norm returns y alone without a residual, (y, h) with one: what the functional API returns.
  m.def("rms_norm", [](const Tensor& x, const OptTensor& w, const OptTensor& r, double eps, double offset) -> py::object {
    auto [y, h, rstd] = rms_norm.call(x, w, r, eps, offset);
    if (!r) return py::cast(y);
    return py::make_tuple(y, h);
  });
  m.def("layer_norm", [](const Tensor& x, const OptTensor& w, const OptTensor& b, double eps) {
    return std::get<0>(layer_norm.call(x, w, b, eps));
  });
  m.def("softmax", [](const Tensor& x, bool log) { return softmax.call(x, log); });
  m.def("cross_entropy", [](const Tensor& logits, const Tensor& target, int64_t reduction, int64_t ignore_index,
                            double smoothing) {
    return std::get<0>(cross_entropy.call(logits, target, reduction, ignore_index, smoothing, false, 1.0));
  });
  m.def("linear", [](const Tensor& x, const Tensor& w, const OptTensor& b, int64_t activation) {
    return gemm.call(x, w, b, std::nullopt, 1.0, 0.0, activation, false, std::nullopt);
  });
}

// tachyon._C: the Python module. Loading it registers the torch operators (library.cpp and the
// ops_*.cpp / autograd.cpp registrations in this same shared object); its functions are the
// functional API's eager entry points. Each calls its operator through torch's dispatcher from
// C++ -- so autograd, FakeTensor, autocast and every other dispatch key behave exactly as for
// torch.ops.tachyon.* -- but parses its few arguments itself (CPython's vectorcall) instead of
// going through torch.ops' schema-driven parsing, which costs 1-7 us a call for operators with
// optional and scalar arguments (docs/python.md). Errors become Python exceptions here:
// tachyon::Error as tachyon.Error with the same message. torch.compile traces the torch.ops
// path instead (python/tachyon/functional.py).
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

#include <optional>
#include <tuple>

#include "tachyon/error.h"

namespace {

using at::Tensor;
using OptTensor = std::optional<Tensor>;
using T3 = std::tuple<Tensor, Tensor, Tensor>;

PyObject* g_error_type = nullptr;  // tachyon.Error, set by the package at import

template <class Sig>
c10::TypedOperatorHandle<Sig> handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}

// Argument parsing: a failed conversion raises TypeError naming the function and position.
struct BadArgument {};
[[noreturn]] void bad(const char* fn, Py_ssize_t i, const char* want) {
  PyErr_Format(PyExc_TypeError, "tachyon.%s: argument %zd must be %s", fn, i + 1, want);
  throw BadArgument{};
}
const Tensor& tensor(const char* fn, PyObject* const* a, Py_ssize_t i) {
  if (!THPVariable_Check(a[i])) bad(fn, i, "a Tensor");
  return THPVariable_Unpack(a[i]);
}
OptTensor opt_tensor(const char* fn, PyObject* const* a, Py_ssize_t i) {
  if (a[i] == Py_None) return std::nullopt;
  return tensor(fn, a, i);
}
double real(const char* fn, PyObject* const* a, Py_ssize_t i) {
  const double v = PyFloat_AsDouble(a[i]);
  if (v == -1.0 && PyErr_Occurred()) bad(fn, i, "a number");
  return v;
}
int64_t integer(const char* fn, PyObject* const* a, Py_ssize_t i) {
  const long long v = PyLong_AsLongLong(a[i]);
  if (v == -1 && PyErr_Occurred()) bad(fn, i, "an int");
  return v;
}
bool flag(const char* fn, PyObject* const* a, Py_ssize_t i) {
  const int v = PyObject_IsTrue(a[i]);
  if (v < 0) bad(fn, i, "a bool");
  return v != 0;
}

// Runs one call: checks the argument count, turns C++ exceptions into Python ones.
template <class F>
PyObject* call(const char* fn, Py_ssize_t nargs, Py_ssize_t want, F&& body) {
  if (nargs != want) {
    PyErr_Format(PyExc_TypeError, "tachyon.%s takes %zd arguments (%zd given)", fn, want, nargs);
    return nullptr;
  }
  try {
    return body();
  } catch (const BadArgument&) {
  } catch (const tachyon::Error& e) {
    PyErr_SetString(g_error_type ? g_error_type : PyExc_RuntimeError, e.what());
  } catch (python_error& e) {
    e.restore();
  } catch (const c10::Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyObject* wrap(const Tensor& t) { return THPVariable_Wrap(t); }

using Unary = Tensor(const Tensor&);
using Binary = Tensor(const Tensor&, const Tensor&);

template <const char* kName, const char* kOp>
PyObject* unary(PyObject*, PyObject* const* a, Py_ssize_t n) {
  static const auto op = handle<Unary>(kOp);
  return call(kName, n, 1, [&] { return wrap(op.call(tensor(kName, a, 0))); });
}
template <const char* kName, const char* kOp>
PyObject* binary(PyObject*, PyObject* const* a, Py_ssize_t n) {
  static const auto op = handle<Binary>(kOp);
  return call(kName, n, 2, [&] { return wrap(op.call(tensor(kName, a, 0), tensor(kName, a, 1))); });
}
constexpr char kSilu[] = "silu", kSiluOp[] = "tachyon::silu", kGelu[] = "gelu", kGeluOp[] = "tachyon::gelu",
               kRelu[] = "relu", kReluOp[] = "tachyon::relu", kSwiglu[] = "swiglu", kSwigluOp[] = "tachyon::swiglu",
               kAdd[] = "add", kAddOp[] = "tachyon::add", kMul[] = "mul", kMulOp[] = "tachyon::mul";

// rms_norm(x, weight, residual, eps, weight_offset) -> y, or (y, h) with a residual.
PyObject* rms_norm(PyObject*, PyObject* const* a, Py_ssize_t n) {
  static const auto op =
      handle<T3(const Tensor&, const OptTensor&, const OptTensor&, double, double)>("tachyon::rms_norm");
  const char* fn = "rms_norm";
  return call(fn, n, 5, [&]() -> PyObject* {
    const Tensor& x = tensor(fn, a, 0);
    const OptTensor weight = opt_tensor(fn, a, 1), residual = opt_tensor(fn, a, 2);
    auto [y, h, rstd] = op.call(x, weight, residual, real(fn, a, 3), real(fn, a, 4));
    if (!residual) return wrap(y);
    // PyTuple_SET_ITEM steals the new references wrap returns (PyTuple_Pack would add its own,
    // leaking both outputs on every call).
    PyObject* out = PyTuple_New(2);
    if (out == nullptr) return nullptr;
    PyTuple_SET_ITEM(out, 0, wrap(y));
    PyTuple_SET_ITEM(out, 1, wrap(h));
    return out;
  });
}

// layer_norm(x, weight, bias, eps) -> y
PyObject* layer_norm(PyObject*, PyObject* const* a, Py_ssize_t n) {
  static const auto op = handle<T3(const Tensor&, const OptTensor&, const OptTensor&, double)>("tachyon::layer_norm");
  const char* fn = "layer_norm";
  return call(fn, n, 4, [&] {
    return wrap(std::get<0>(op.call(tensor(fn, a, 0), opt_tensor(fn, a, 1), opt_tensor(fn, a, 2), real(fn, a, 3))));
  });
}

// softmax(x, log) -> y
PyObject* softmax(PyObject*, PyObject* const* a, Py_ssize_t n) {
  static const auto op = handle<Tensor(const Tensor&, bool)>("tachyon::softmax");
  const char* fn = "softmax";
  return call(fn, n, 2, [&] { return wrap(op.call(tensor(fn, a, 0), flag(fn, a, 1))); });
}

// cross_entropy(logits, target, reduction, ignore_index, label_smoothing) -> loss
PyObject* cross_entropy(PyObject*, PyObject* const* a, Py_ssize_t n) {
  static const auto op =
      handle<T3(const Tensor&, const Tensor&, int64_t, int64_t, double, bool, double)>("tachyon::cross_entropy");
  const char* fn = "cross_entropy";
  return call(fn, n, 5, [&] {
    return wrap(std::get<0>(op.call(tensor(fn, a, 0), tensor(fn, a, 1), integer(fn, a, 2), integer(fn, a, 3),
                                    real(fn, a, 4), false, 1.0)));
  });
}

// linear(x, weight, bias, activation) -> y
PyObject* linear(PyObject*, PyObject* const* a, Py_ssize_t n) {
  static const auto op = handle<Tensor(const Tensor&, const Tensor&, const OptTensor&, const OptTensor&, double, double,
                                       int64_t, bool, std::optional<at::ScalarType>)>("tachyon::gemm");
  const char* fn = "linear";
  return call(fn, n, 4, [&] {
    return wrap(op.call(tensor(fn, a, 0), tensor(fn, a, 1), opt_tensor(fn, a, 2), std::nullopt, 1.0, 0.0,
                        integer(fn, a, 3), false, std::nullopt));
  });
}

PyObject* set_error_type(PyObject*, PyObject* type) {
  if (!PyType_Check(type) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type),
                                               reinterpret_cast<PyTypeObject*>(PyExc_RuntimeError))) {
    PyErr_SetString(PyExc_TypeError, "tachyon._C._set_error_type: expects a RuntimeError subclass");
    return nullptr;
  }
  Py_INCREF(type);
  Py_XDECREF(g_error_type);
  g_error_type = type;
  Py_RETURN_NONE;
}

#define FAST(name, fn, doc) {name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fn)), METH_FASTCALL, doc}
PyMethodDef g_methods[] = {
    FAST("silu", (unary<kSilu, kSiluOp>), "silu(x)"),
    FAST("gelu", (unary<kGelu, kGeluOp>), "gelu(x), tanh approximation"),
    FAST("relu", (unary<kRelu, kReluOp>), "relu(x)"),
    FAST("swiglu", (binary<kSwiglu, kSwigluOp>), "swiglu(gate, up)"),
    FAST("add", (binary<kAdd, kAddOp>), "add(a, b)"),
    FAST("mul", (binary<kMul, kMulOp>), "mul(a, b)"),
    FAST("rms_norm", rms_norm, "rms_norm(x, weight, residual, eps, weight_offset)"),
    FAST("layer_norm", layer_norm, "layer_norm(x, weight, bias, eps)"),
    FAST("softmax", softmax, "softmax(x, log)"),
    FAST("cross_entropy", cross_entropy, "cross_entropy(logits, target, reduction, ignore_index, label_smoothing)"),
    FAST("linear", linear, "linear(x, weight, bias, activation)"),
    {"_set_error_type", set_error_type, METH_O, "the exception class raised for tachyon::Error"},
    {nullptr, nullptr, 0, nullptr}};
#undef FAST

PyModuleDef g_module = {PyModuleDef_HEAD_INIT, "_C",
                        "tachyon: the torch operators (torch.ops.tachyon) and the functional API's eager entry points",
                        -1, g_methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__C() { return PyModule_Create(&g_module); }

#include "common/host_tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace tachyon::test {

namespace {
std::uint16_t float_to_bf16_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return 0x7FC0;
  u += 0x7FFFu + ((u >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}
float bf16_bits_to_float(std::uint16_t b) {
  std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
std::uint16_t float_to_f16_bits(double v) {
  _Float16 h = static_cast<_Float16>(v);
  std::uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
double f16_bits_to_double(std::uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return static_cast<double>(h);
}
}  // namespace

double round_to(DType dtype, double v) {
  switch (dtype) {
    case DType::f32: return static_cast<double>(static_cast<float>(v));
    case DType::f16: return f16_bits_to_double(float_to_f16_bits(v));
    case DType::bf16: return bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(v)));
    default: return v;
  }
}

double ulp(DType dtype, double v) {
  int mant = dtype == DType::f32 ? 23 : dtype == DType::f16 ? 10 : dtype == DType::bf16 ? 7 : 52;
  int min_exp = dtype == DType::f32 ? -126 : dtype == DType::f16 ? -14 : dtype == DType::bf16 ? -126 : -1022;
  double a = std::fabs(v);
  int e = a > 0 ? std::ilogb(a) : min_exp;
  if (e < min_exp) e = min_exp;
  return std::ldexp(1.0, e - mant);
}

std::vector<unsigned char> encode(DType dtype, const std::vector<double>& values) {
  std::size_t es = dtype_size(dtype);
  std::vector<unsigned char> out(values.size() * es);
  for (std::size_t i = 0; i < values.size(); ++i) {
    unsigned char* p = out.data() + i * es;
    switch (dtype) {
      case DType::f32: { float f = static_cast<float>(values[i]); std::memcpy(p, &f, 4); break; }
      case DType::f16: { std::uint16_t b = float_to_f16_bits(values[i]); std::memcpy(p, &b, 2); break; }
      case DType::bf16: { std::uint16_t b = float_to_bf16_bits(static_cast<float>(values[i])); std::memcpy(p, &b, 2); break; }
      case DType::i32: { std::int32_t x = static_cast<std::int32_t>(values[i]); std::memcpy(p, &x, 4); break; }
      case DType::i64: { std::int64_t x = static_cast<std::int64_t>(values[i]); std::memcpy(p, &x, 8); break; }
      default: throw std::runtime_error("encode: unsupported dtype");
    }
  }
  return out;
}

std::vector<double> decode(DType dtype, const std::vector<unsigned char>& bytes) {
  std::size_t es = dtype_size(dtype);
  std::vector<double> out(bytes.size() / es);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const unsigned char* p = bytes.data() + i * es;
    switch (dtype) {
      case DType::f32: { float f; std::memcpy(&f, p, 4); out[i] = f; break; }
      case DType::f16: { std::uint16_t b; std::memcpy(&b, p, 2); out[i] = f16_bits_to_double(b); break; }
      case DType::bf16: { std::uint16_t b; std::memcpy(&b, p, 2); out[i] = bf16_bits_to_float(b); break; }
      case DType::i32: { std::int32_t x; std::memcpy(&x, p, 4); out[i] = x; break; }
      case DType::i64: { std::int64_t x; std::memcpy(&x, p, 8); out[i] = static_cast<double>(x); break; }
      default: throw std::runtime_error("decode: unsupported dtype");
    }
  }
  return out;
}

std::vector<double> random_values(DType dtype, std::int64_t n, std::uint64_t seed, double scale) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = round_to(dtype, dist(gen));
  return v;
}

DeviceMatrix::DeviceMatrix(DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t stride, int offset)
    : dtype_(dtype), rows_(rows), cols_(cols), stride_(stride < 0 ? cols : stride), offset_(offset) {
  std::size_t es = dtype_size(dtype);
  std::int64_t elems = rows * cols == 0 ? 0 : (rows - 1) * stride_ + cols;
  bytes_ = static_cast<std::size_t>(offset + elems) * es;
  if (bytes_ == 0) return;
  if (cudaMalloc(reinterpret_cast<void**>(&base_), bytes_) != cudaSuccess) throw std::runtime_error("DeviceMatrix: cudaMalloc failed");
  data_ = base_ + static_cast<std::size_t>(offset) * es;
  poison();
}

DeviceMatrix::~DeviceMatrix() {
  if (base_) cudaFree(base_);
}

void DeviceMatrix::poison() {
  if (bytes_ && cudaMemset(base_, kPoisonByte, bytes_) != cudaSuccess)
    throw std::runtime_error("DeviceMatrix: cudaMemset failed");
}

void DeviceMatrix::upload(const std::vector<double>& dense) {
  if (static_cast<std::int64_t>(dense.size()) != rows_ * cols_) throw std::runtime_error("upload: size mismatch");
  if (rows_ * cols_ == 0) return;
  std::size_t es = dtype_size(dtype_);
  auto bytes = encode(dtype_, dense);
  if (cudaMemcpy2D(data_, stride_ * es, bytes.data(), cols_ * es, cols_ * es, rows_, cudaMemcpyHostToDevice) !=
      cudaSuccess)
    throw std::runtime_error("upload: cudaMemcpy2D failed");
}

std::vector<double> DeviceMatrix::download() const {
  std::size_t es = dtype_size(dtype_);
  std::vector<unsigned char> bytes(static_cast<std::size_t>(rows_ * cols_) * es);
  if (rows_ * cols_ == 0) return {};
  if (cudaMemcpy2D(bytes.data(), cols_ * es, data_, stride_ * es, cols_ * es, rows_, cudaMemcpyDeviceToHost) !=
      cudaSuccess)
    throw std::runtime_error("download: cudaMemcpy2D failed");
  return decode(dtype_, bytes);
}

TensorView DeviceMatrix::view() const { return matrix(data_, dtype_, rows_, cols_, stride_); }
TensorView DeviceMatrix::vector() const { return tachyon::view(data_, dtype_, {cols_}); }

}  // namespace tachyon::test

// RMSNorm / LayerNorm benchmarks over Quack's sweep (../shared/targets.md). Bytes are the
// fewest a correct kernel moves: forward x + y (+ weight, bias once); fused residual
// x + residual + y + residual_out; backward x + dy + weight + dx (dw partials not counted).
// The *_f32_weight cases keep the weight and bias (and dw, db) in fp32 beside 16-bit rows, as
// mixed-precision training does. rms_norm_bwd_residual adds dresidual (the gradient
// through the fused residual's residual_out): x + dy + dresidual + weight + dx, the kernels'
// runtime-dtype (untyped) loop. rms_norm_fwd_residual_f32_stream keeps the residual stream
// (residual, residual_out) in fp32 beside 16-bit x and y and an fp32 weight: autocast's pre-norm block;
// rms_norm_bwd_residual_f32_stream is its backward: fp32 h, dresidual and dx beside 16-bit dy.
#include "harness.h"
#include "tachyon/norm.h"

namespace tachyon::bench {
namespace {


enum class Kind { rms_fwd, ln_fwd, rms_fwd_residual, rms_bwd, rms_bwd_residual, ln_bwd };

Result run(Device& dev, DType dt, const Shape& sh, Kind kind, bool f32_weight, bool f32_stream = false) {
  const std::int64_t M = sh.dims[0], N = sh.dims[1];
  const double es = static_cast<double>(dtype_size(dt));
  const DType wt = f32_weight ? DType::f32 : dt;  // weight, dw, db
  const std::size_t mat = static_cast<std::size_t>(M * N) * dtype_size(dt);
  const std::size_t vec = static_cast<std::size_t>(N) * dtype_size(wt);
  const DType st = f32_stream ? DType::f32 : dt;  // residual, residual_out
  const std::size_t stream_mat = static_cast<std::size_t>(M * N) * dtype_size(st);
  const bool bwd = kind == Kind::rms_bwd || kind == Kind::rms_bwd_residual || kind == Kind::ln_bwd;
  const bool four = kind == Kind::rms_fwd_residual || kind == Kind::rms_bwd_residual;
  const bool ln = kind == Kind::ln_fwd || kind == Kind::ln_bwd;
  const int mats = four ? 4 : bwd ? 3 : 2;
  const int sets = dev.rotation_sets(static_cast<double>(mat) * mats + (f32_stream ? 3.0 * mat : 0.0));
  const DType xt = bwd ? st : dt;  // x, dx and dresidual: the backward's h and its gradients
  const std::size_t xmat = bwd ? stream_mat : mat;
  Buffers bufs;
  void* x = bufs.add(xmat, xt, sets);
  void* y = bufs.add(mat, dt, sets);  // y, or dy for the backward
  void* z = bwd ? bufs.add(xmat, xt, sets)  // dx, or the residual
            : kind == Kind::rms_fwd_residual ? bufs.add(stream_mat, st, sets) : nullptr;
  void* z2 = !four ? nullptr  // dresidual, or residual_out
             : bwd ? bufs.add(xmat, xt, sets) : bufs.add(stream_mat, st, sets);
  void* w = bufs.add(vec, wt, 1);
  void* b = bufs.add(vec, wt, 1);
  void* stats = bufs.add(static_cast<std::size_t>(M) * 4, DType::f32, sets, 0.f);
  void* stats2 = bufs.add(static_cast<std::size_t>(M) * 4, DType::f32, sets, 0.f);
  void* dw = bufs.add(vec, wt, 1);
  void* db = bufs.add(vec, wt, 1);
  auto mv = [&](void* p) { return view(p, dt, {M, N}); };
  auto xv = [&](void* p) { return view(p, xt, {M, N}); };

  // rstd must be positive for the backward to be meaningful: fill with 1.
  std::vector<float> ones(static_cast<std::size_t>(M), 1.f);
  for (int s = 0; s < sets; ++s) {
    BENCH_CUDA(cudaMemcpy(bufs.get(stats, s), ones.data(), ones.size() * 4, cudaMemcpyHostToDevice));
    BENCH_CUDA(cudaMemset(bufs.get(stats2, s), 0, ones.size() * 4));
  }

  void* ws = nullptr;
  std::size_t ws_bytes = 0;
  RmsNormBackward rb;
  LayerNormBackward lb;
  if (kind == Kind::rms_bwd || kind == Kind::rms_bwd_residual) {
    rb.x = xv(x); rb.weight = view(w, wt, {N}); rb.rstd = view(stats, DType::f32, {M});
    rb.dy = mv(y); rb.dx = xv(z); rb.dw = view(dw, wt, {N});
    if (four) rb.dresidual = xv(z2);  // the query sizes the build the call runs
    ws_bytes = rms_norm_backward_workspace_bytes(rb);
  } else if (kind == Kind::ln_bwd) {
    lb.x = mv(x); lb.weight = view(w, wt, {N}); lb.mean = view(stats2, DType::f32, {M});
    lb.rstd = view(stats, DType::f32, {M}); lb.dy = mv(y); lb.dx = mv(z);
    lb.dw = view(dw, wt, {N}); lb.db = view(db, wt, {N});
    ws_bytes = layer_norm_backward_workspace_bytes(lb);
  }
  if (ws_bytes) BENCH_CUDA(cudaMalloc(&ws, ws_bytes));

  Result r;
  r.ms = dev.median_ms(
      [&](int s) {
        switch (kind) {
          case Kind::rms_fwd: {
            RmsNormForward a;
            a.x = mv(bufs.get(x, s)); a.weight = view(w, wt, {N}); a.y = mv(bufs.get(y, s));
            a.rstd = view(bufs.get(stats, s), DType::f32, {M});
            rms_norm_forward(a, dev.stream());
            break;
          }
          case Kind::rms_fwd_residual: {
            RmsNormForward a;
            a.x = mv(bufs.get(x, s)); a.weight = view(w, wt, {N}); a.residual = view(bufs.get(z, s), st, {M, N});
            a.y = mv(bufs.get(y, s)); a.residual_out = view(bufs.get(z2, s), st, {M, N});
            rms_norm_forward(a, dev.stream());
            break;
          }
          case Kind::ln_fwd: {
            LayerNormForward a;
            a.x = mv(bufs.get(x, s)); a.weight = view(w, wt, {N}); a.bias = view(b, wt, {N});
            a.y = mv(bufs.get(y, s)); a.mean = view(bufs.get(stats2, s), DType::f32, {M});
            a.rstd = view(bufs.get(stats, s), DType::f32, {M});
            layer_norm_forward(a, dev.stream());
            break;
          }
          case Kind::rms_bwd:
          case Kind::rms_bwd_residual: {
            RmsNormBackward a = rb;
            a.x = xv(bufs.get(x, s)); a.dy = mv(bufs.get(y, s)); a.dx = xv(bufs.get(z, s));
            if (four) a.dresidual = xv(bufs.get(z2, s));
            a.rstd = view(bufs.get(stats, s), DType::f32, {M});
            a.workspace = ws; a.workspace_bytes = ws_bytes;
            rms_norm_backward(a, dev.stream());
            break;
          }
          case Kind::ln_bwd: {
            LayerNormBackward a = lb;
            a.x = mv(bufs.get(x, s)); a.dy = mv(bufs.get(y, s)); a.dx = mv(bufs.get(z, s));
            a.mean = view(bufs.get(stats2, s), DType::f32, {M}); a.rstd = view(bufs.get(stats, s), DType::f32, {M});
            a.workspace = ws; a.workspace_bytes = ws_bytes;
            layer_norm_backward(a, dev.stream());
            break;
          }
        }
      },
      sets);
  if (ws) BENCH_CUDA(cudaFree(ws));
  const double m = static_cast<double>(M) * static_cast<double>(N) * es;
  const double v = static_cast<double>(N) * static_cast<double>(dtype_size(wt));
  switch (kind) {
    case Kind::rms_fwd: r.bytes = 2 * m + v; break;
    case Kind::ln_fwd: r.bytes = 2 * m + 2 * v; break;
    case Kind::rms_fwd_residual: r.bytes = 2 * m + 2 * static_cast<double>(stream_mat) + v; break;
    case Kind::rms_bwd:
    case Kind::ln_bwd: r.bytes = 3 * m + v; break;
    case Kind::rms_bwd_residual: r.bytes = m + 3 * static_cast<double>(xmat) + v; break;
  }
  return r;
}

Case make(const char* op, Kind kind, bool f32_weight = false, bool in_default = true, bool f32_stream = false) {
  Case c;
  c.family = "norm";
  c.op = op;
  c.dtypes = f32_weight ? std::vector<DType>{DType::bf16} : std::vector<DType>{DType::bf16, DType::f32};
  c.shapes = quack_sweep();
  c.in_default_suite = in_default && !f32_weight;
  c.run = [kind, f32_weight, f32_stream](Device& d, DType dt, const Shape& sh) {
    return run(d, dt, sh, kind, f32_weight, f32_stream);
  };
  return c;
}

// fp16 rows (tested, same kernels as bf16 by dtype size): suite `all` only, under the same op names.
Case make_f16(const char* op, Kind kind) {
  Case c = make(op, kind);
  c.dtypes = {DType::f16};
  c.in_default_suite = false;
  return c;
}

Register rms_fwd(make("rms_norm_fwd", Kind::rms_fwd));
Register rms_res(make("rms_norm_fwd_residual", Kind::rms_fwd_residual));
Register ln_fwd(make("layer_norm_fwd", Kind::ln_fwd));
Register rms_bwd(make("rms_norm_bwd", Kind::rms_bwd));
Register ln_bwd(make("layer_norm_bwd", Kind::ln_bwd));
Register rms_fwd_f32w(make("rms_norm_fwd_f32_weight", Kind::rms_fwd, true));
Register rms_res_f32w(make("rms_norm_fwd_residual_f32_weight", Kind::rms_fwd_residual, true));
Register rms_res_f32s(make("rms_norm_fwd_residual_f32_stream", Kind::rms_fwd_residual, true, false, true));
Register ln_fwd_f32w(make("layer_norm_fwd_f32_weight", Kind::ln_fwd, true));
Register rms_bwd_f32w(make("rms_norm_bwd_f32_weight", Kind::rms_bwd, true));
Register ln_bwd_f32w(make("layer_norm_bwd_f32_weight", Kind::ln_bwd, true));
Register rms_bwd_res(make("rms_norm_bwd_residual", Kind::rms_bwd_residual, false, false));
Register rms_bwd_res_f32s(make("rms_norm_bwd_residual_f32_stream", Kind::rms_bwd_residual, true, false, true));
Register rms_fwd_f16(make_f16("rms_norm_fwd", Kind::rms_fwd));
Register rms_res_f16(make_f16("rms_norm_fwd_residual", Kind::rms_fwd_residual));
Register ln_fwd_f16(make_f16("layer_norm_fwd", Kind::ln_fwd));
Register rms_bwd_f16(make_f16("rms_norm_bwd", Kind::rms_bwd));
Register ln_bwd_f16(make_f16("layer_norm_bwd", Kind::ln_bwd));
Register rms_bwd_res_f16(make_f16("rms_norm_bwd_residual", Kind::rms_bwd_residual));

}  // namespace
}  // namespace tachyon::bench

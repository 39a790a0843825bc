// Softmax and cross-entropy benchmarks over Quack's sweep (../shared/targets.md), plus real
// vocabularies. Bytes are the fewest a correct kernel moves (targets.md):
//   softmax_fwd            read x + write y
//   softmax_bwd            read y, dy + write dx
//   cross_entropy_fwd      read logits + targets (int64) + write loss and lse (f32), reduction none
//   cross_entropy_fwd_grad the same + write dlogits (reduction none, grad_output 1)
//   cross_entropy_fwd_grad_mean  the same with reduction mean: count kernel + row kernel +
//                          fixed-order loss sum, three launches (the training call)
//   cross_entropy_fwd_mean the loss alone with reduction mean (the evaluation call)
//   cross_entropy_bwd      read logits + write dlogits (targets, lse, dloss not counted)
//   cross_entropy_fwd_vocab  cross_entropy_fwd at M = 16384 over real vocabulary sizes and
//                          their neighbouring powers of two (bf16)
#include <vector>

#include "harness.h"
#include "tachyon/cross_entropy.h"
#include "tachyon/softmax.h"

namespace tachyon::bench {
namespace {


std::vector<Shape> vocabularies() {
  std::vector<Shape> s;
  for (std::int64_t n : {32000, 32768, 50257, 65536, 128256, 131072, 151936, 262144}) s.push_back({{16384, n}});
  return s;
}

enum class Kind { softmax_fwd, softmax_bwd, ce_fwd, ce_fwd_mean, ce_fwd_grad, ce_fwd_grad_mean, ce_bwd };

Result run(Device& dev, DType dt, const Shape& sh, Kind kind) {
  const std::int64_t M = sh.dims[0], N = sh.dims[1];
  const double es = static_cast<double>(dtype_size(dt));
  const std::size_t mat = static_cast<std::size_t>(M * N) * dtype_size(dt);
  const bool ce = kind != Kind::softmax_fwd && kind != Kind::softmax_bwd;
  const bool loss_only = kind == Kind::ce_fwd || kind == Kind::ce_fwd_mean;
  const bool mean = kind == Kind::ce_fwd_mean || kind == Kind::ce_fwd_grad_mean;
  const int mats = kind == Kind::softmax_bwd ? 3 : loss_only ? 1 : 2;
  const int sets = dev.rotation_sets(static_cast<double>(mat) * mats);
  Buffers bufs;
  void* x = bufs.add(mat, dt, sets);                                    // x, y (bwd), logits
  void* y = loss_only ? nullptr : bufs.add(mat, dt, sets);  // y, dy, dlogits
  void* z = kind == Kind::softmax_bwd ? bufs.add(mat, dt, sets) : nullptr;  // softmax dx
  void* loss = ce ? bufs.add(static_cast<std::size_t>(M) * 4, DType::f32, sets, 0.f) : nullptr;
  void* lse = ce ? bufs.add(static_cast<std::size_t>(M) * 4, DType::f32, sets, 1.f) : nullptr;
  void* target = nullptr;
  if (ce) {
    std::vector<std::int64_t> t(static_cast<std::size_t>(M));
    for (std::int64_t i = 0; i < M; ++i) t[i] = (i * 7919) % N;
    target = bufs.add(t.size() * 8, DType::i64, 1);
    BENCH_CUDA(cudaMemcpy(target, t.data(), t.size() * 8, cudaMemcpyHostToDevice));
  }
  void* ws = nullptr;
  if (mean) {
    CrossEntropyForward probe;
    probe.logits = view(x, dt, {M, N});
    probe.target = view(target, DType::i64, {M});
    probe.loss = view(loss, DType::f32, {1});
    probe.reduction = Reduction::mean;
    BENCH_CUDA(cudaMalloc(&ws, cross_entropy_forward_workspace_bytes(probe)));
  }
  auto mv = [&](void* p) { return view(p, dt, {M, N}); };

  Result r;
  r.ms = dev.median_ms(
      [&](int s) {
        switch (kind) {
          case Kind::softmax_fwd: {
            SoftmaxForward a;
            a.x = mv(bufs.get(x, s));
            a.y = mv(bufs.get(y, s));
            softmax_forward(a, dev.stream());
            break;
          }
          case Kind::softmax_bwd: {
            SoftmaxBackward a;
            a.y = mv(bufs.get(x, s));
            a.dy = mv(bufs.get(y, s));
            a.dx = mv(bufs.get(z, s));
            softmax_backward(a, dev.stream());
            break;
          }
          case Kind::ce_fwd:
          case Kind::ce_fwd_mean:
          case Kind::ce_fwd_grad:
          case Kind::ce_fwd_grad_mean: {
            CrossEntropyForward a;
            a.logits = mv(bufs.get(x, s));
            a.target = view(target, DType::i64, {M});
            a.lse = view(bufs.get(lse, s), DType::f32, {M});
            if (!loss_only) a.dlogits = mv(bufs.get(y, s));
            if (mean) {
              a.reduction = Reduction::mean;
              a.loss = view(bufs.get(loss, s), DType::f32, {1});
              a.workspace = ws;
              a.workspace_bytes = cross_entropy_forward_workspace_bytes(a);
            } else {
              a.reduction = Reduction::none;
              a.loss = view(bufs.get(loss, s), DType::f32, {M});
            }
            cross_entropy_forward(a, dev.stream());
            break;
          }
          case Kind::ce_bwd: {
            CrossEntropyBackward a;
            a.logits = mv(bufs.get(x, s));
            a.target = view(target, DType::i64, {M});
            a.lse = view(bufs.get(lse, s), DType::f32, {M});
            a.dlogits = mv(bufs.get(y, s));
            a.reduction = Reduction::sum;
            cross_entropy_backward(a, dev.stream());
            break;
          }
        }
      },
      sets);
  if (ws) BENCH_CUDA(cudaFree(ws));
  const double m = static_cast<double>(M) * static_cast<double>(N) * es;
  const double rows = static_cast<double>(M);
  switch (kind) {
    case Kind::softmax_fwd: r.bytes = 2 * m; break;
    case Kind::softmax_bwd: r.bytes = 3 * m; break;
    case Kind::ce_fwd: r.bytes = m + 16 * rows; break;
    case Kind::ce_fwd_mean: r.bytes = m + 8 * rows; break;  // loss: one value
    case Kind::ce_fwd_grad: r.bytes = 2 * m + 16 * rows; break;
    case Kind::ce_fwd_grad_mean: r.bytes = 2 * m + 8 * rows; break;  // loss: one value
    case Kind::ce_bwd: r.bytes = 2 * m; break;
  }
  return r;
}

Case make(const char* family, const char* op, Kind kind, std::vector<DType> dtypes, std::vector<Shape> shapes) {
  Case c;
  c.family = family;
  c.op = op;
  c.dtypes = std::move(dtypes);
  c.shapes = std::move(shapes);
  c.run = [kind](Device& d, DType dt, const Shape& sh) { return run(d, dt, sh, kind); };
  return c;
}

const std::vector<DType> kBoth = {DType::bf16, DType::f32};

Register sm_fwd(make("softmax", "softmax_fwd", Kind::softmax_fwd, kBoth, quack_sweep()));
Register sm_bwd(make("softmax", "softmax_bwd", Kind::softmax_bwd, kBoth, quack_sweep()));
Register ce_fwd(make("cross_entropy", "cross_entropy_fwd", Kind::ce_fwd, kBoth, quack_sweep()));
Register ce_mean(make("cross_entropy", "cross_entropy_fwd_mean", Kind::ce_fwd_mean, {DType::bf16}, quack_sweep()));
Register ce_grad(make("cross_entropy", "cross_entropy_fwd_grad", Kind::ce_fwd_grad, kBoth, quack_sweep()));
Register ce_grad_mean(make("cross_entropy", "cross_entropy_fwd_grad_mean", Kind::ce_fwd_grad_mean, {DType::bf16},
                           quack_sweep()));
Register ce_bwd(make("cross_entropy", "cross_entropy_bwd", Kind::ce_bwd, kBoth, quack_sweep()));
Register ce_vocab(make("cross_entropy", "cross_entropy_fwd_vocab", Kind::ce_fwd, {DType::bf16}, vocabularies()));

}  // namespace
}  // namespace tachyon::bench

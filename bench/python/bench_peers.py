#!/usr/bin/env python3
"""Tachyon's Python ops against their peers, same process, same timers (the peer benchmark of `make bench`).

    python3 bench/python/bench_peers.py [--quick] [--dtype bf16|fp16|fp32[,...]] [--ops OPS] [--impls IMPLS]
                                        [--results DIR] [--plots DIR]

Implementations, each skipped with "n/a (reason)" when it cannot be imported or fails at a shape:
  tachyon        tachyon.* (python/tachyon, imported from the installed package or <repo>/python)
  torch          eager PyTorch: F.rms_norm, F.layer_norm, torch.softmax, F.cross_entropy, F.silu, F.linear (cuBLAS)
  torch.compile  torch.compile(<the eager function>, dynamic=False), one static-shape compile per shape
  quack          quack-kernels (CuTe-DSL): quack.rmsnorm.rmsnorm / layernorm_fwd, quack.softmax.softmax,
                 quack.cross_entropy.cross_entropy_fwd (fused dx with return_dx=True), quack.gemm_interface.gemm
                 (its untuned default config unless --quack-gemm-tuned: autotuning takes minutes per shape)
  liger          liger-kernel (Triton): liger_kernel.transformers.functional.liger_rms_norm / liger_layer_norm /
                 liger_softmax / liger_cross_entropy (writes dlogits in place when logits require grad) / liger_swiglu

Ops (`--ops` takes names or substrings, comma separated):
  rmsnorm_fwd, rmsnorm_fwd_mixed (x in --dtype, fp32 weight: the autocast case; *_mixed likewise, an fp32 weight and
  bias), rmsnorm_fwd_residual_mixed (h = x + residual, y = RMSNorm(h)), layernorm_fwd, layernorm_fwd_mixed, softmax_fwd,
  ce_fwd (loss only, no grad; Tachyon's per-row losses, reduction none, as Quack's), ce_fwd_grad (logits require grad:
  the fused forward that also writes dlogits, Tachyon's with reduction sum; or for a peer without one, forward +
  torch.autograd.grad), rmsnorm_bwd(_mixed), layernorm_bwd_mixed, softmax_bwd (torch.autograd.grad of the impl's own
  forward, taken once outside the timed span, retain_graph=True), silu_fwd, swiglu_fwd; gemm, linear_bias_silu.

Sweep (../shared/targets.md, Quack's): (M, N) = (32768, 256 ... 65536), (16384, 131072), (8192, 262144);
--quick: N in {1024, 4096, 16384, 65536, 262144}. GEMM: the targets.md shapes (C = A.W^T, bf16; fp16 with
--dtype fp16), TFLOP/s = 2MNK / t, ratio to cuBLAS (F.linear) of the same shape and run.

Bytes counted (targets.md): forward read x + write y (+ weight/bias once); rmsnorm_bwd and softmax_bwd read x or y
and dy, write dx (3 M N elements); ce_fwd reads logits + int64 targets and writes an fp32 loss per row (N*es + 12
bytes per row), ce_fwd_grad adds the dlogits write; swiglu reads gate and up, writes y. Every impl is charged the
same canonical bytes, whatever it really moves (an impl that writes more is slower for it).

Timers, identical for every implementation, all on one side stream of this process:
  graph   device time: warm-up calls (compiles, autotunes) outside the capture, then n calls captured into one
          torch.cuda.CUDAGraph (n chosen for ~10 ms of work, a multiple of the number of input sets), replayed
          --reps times between CUDA events; median / n. If the capture fails for an implementation (an op that
          synchronises or allocates outside the caching allocator) the cell falls back to events around n
          back-to-back eager launches and is marked "events" (it then includes host cost when that exceeds the
          kernel time).
  eager   end-to-end time per call as triton.testing.do_bench takes it: a 256 MB buffer zeroed before every call
          (flushes L2), CUDA events around the call alone, median. Includes the host cost of the call when it
          exceeds the flush time (~0.1 ms).
  copy    the limit: x.copy_ of a >= 1 GiB fp32 tensor (bytes read + written), CUDA events around single eager
          copies, median. (A copy captured into a graph runs on the copy engines and is slower: not the limit.)
          Every GB/s figure is also given as a ratio to it ("ratio" = graph GB/s / copy GB/s). An op that reads
          more than it writes (swiglu, the backwards) can pass 1.0 by a few per cent: HBM reads cost less than
          writes, and the copy is half and half.

L2 and the graph figure: replaying the same call on the same tensors keeps inputs of up to ~16 MB in L2 (N <= 1024
rows at M = 32768), so such a graph figure would exceed the HBM copy limit. The graph timer therefore rotates among
k input sets, k = ceil(3 x L2_cache_size / input bytes of one set) (1 when one set already exceeds 3 x L2), calling
set i % k on the i-th captured call, so the graph figures are HBM figures at every N. The eager timer flushes L2
instead and uses one set. GEMMs are compute bound and use one set (as cuBLAS benchmarks do).

Outputs: a line per (op, N, impl) as it is measured and one table per op at the end on stdout; JSON lines appended
to --results DIR/<gpu>-<date>-python-peers.jsonl ({op, dtype, M, N, impl, gbps_graph, gbps_eager, copy_gbps, ratio,
gpu, torch, commit} plus K/tflops for GEMMs, ms, timer mode, input sets, first-call seconds, error); one PNG per op
(GB/s against N, log2 axis, one line per impl, the copy limit dashed; GEMMs as bars) under --plots DIR.
"""
import argparse
import datetime
import gc
import inspect
import json
import math
import pathlib
import statistics
import sys
import time
import warnings

import torch
import torch.nn.functional as F
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_common import commit_id, gpu_tag, import_tachyon, short  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]

SWEEP_N = [256 << i for i in range(9)] + [131072, 262144]  # 256 ... 65536, 131072, 262144
QUICK_N = [1024, 4096, 16384, 65536, 262144]
IMPLS = ["tachyon", "torch", "torch.compile", "quack", "liger"]
MEM_OPS = ["rmsnorm_fwd", "rmsnorm_fwd_mixed", "rmsnorm_fwd_residual_mixed", "layernorm_fwd", "layernorm_fwd_mixed",
           "softmax_fwd", "ce_fwd", "ce_fwd_grad", "rmsnorm_bwd", "rmsnorm_bwd_mixed", "layernorm_bwd_mixed",
           "softmax_bwd", "silu_fwd", "swiglu_fwd"]
# The autocast case: x (dy, residual) in --dtype beside an fp32 weight and bias, which Quack's kernels take as they are.
MIXED_OPS = {"rmsnorm_fwd_mixed", "rmsnorm_fwd_residual_mixed", "layernorm_fwd_mixed", "rmsnorm_bwd_mixed",
             "layernorm_bwd_mixed"}
GEMM_OPS = ["gemm", "linear_bias_silu"]
GEMM_SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (16384, 16384, 16384), (2048, 2048, 2048),
               (8192, 6144, 4096), (8192, 4096, 4096), (8192, 28672, 4096), (8192, 4096, 14336),
               (128, 8192, 8192), (512, 8192, 8192), (1024, 28672, 4096)]  # (M, N, K)
GEMM_QUICK = [(8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048), (8192, 28672, 4096),
              (128, 8192, 8192), (1024, 28672, 4096)]
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
RMS_EPS, LN_EPS = 1e-6, 1e-5


def rows_for(n):
    return 32768 if n <= 65536 else (16384 if n == 131072 else 8192)


# ---------------------------------------------------------------------------------------------------------------
# The eager PyTorch functions (module level, so that torch.compile compiles exactly these).

def t_rms_norm(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, RMS_EPS)


def t_layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, LN_EPS)


def t_softmax(x):
    return torch.softmax(x, -1)


def t_cross_entropy(logits, target):
    return F.cross_entropy(logits, target)


def t_silu(x):
    return F.silu(x)


def t_swiglu(g, u):
    return F.silu(g) * u


def t_linear(x, w):
    return F.linear(x, w)


def t_linear_bias_silu(x, w, b):
    return F.silu(F.linear(x, w, b))


EAGER = {"rmsnorm_fwd": t_rms_norm, "layernorm_fwd": t_layer_norm, "softmax_fwd": t_softmax,
         "ce_fwd": t_cross_entropy, "silu_fwd": t_silu, "swiglu_fwd": t_swiglu,
         "gemm": t_linear, "linear_bias_silu": t_linear_bias_silu}


# ---------------------------------------------------------------------------------------------------------------
# Environment



def free():
    gc.collect()
    torch.cuda.empty_cache()


class Unavailable(Exception):
    """This implementation has no such kernel (or could not be imported): an n/a cell."""


class Peers:
    """The implementations' modules, imported once; import failures kept as the n/a reason."""

    def __init__(self, impls, quack_gemm_tuned):
        self.mods, self.err, self.compiled, self.versions = {}, {}, {}, {}
        self.quack_gemm_tuned = quack_gemm_tuned
        if "tachyon" in impls:
            self._load("tachyon", import_tachyon)
        if "quack" in impls:
            self._load("quack", self._import_quack)
        if "liger" in impls:
            self._load("liger", self._import_liger)

    def _load(self, name, fn):
        try:
            self.mods[name] = fn()
        except Exception as e:  # noqa: BLE001 (any import failure is an n/a column)
            self.err[name] = "import failed: " + short(e, 140)
            print(f"[peers] {name}: {self.err[name]}")

    def _import_quack(self):
        # quack/__init__.py binds the names rmsnorm / softmax / cross_entropy to functions, which
        # shadow the submodules of the same names: take the modules from sys.modules.
        import types
        import importlib
        import quack
        self.versions["quack"] = getattr(quack, "__version__", "?")
        ns = types.SimpleNamespace(**{m: importlib.import_module(f"quack.{m}")
                                      for m in ("rmsnorm", "softmax", "cross_entropy")})
        ns.__version__ = self.versions["quack"]
        return ns

    def _import_liger(self):
        import liger_kernel
        from liger_kernel.transformers import functional as LF
        try:
            from importlib.metadata import version
            self.versions["liger"] = version("liger-kernel")
        except Exception:
            self.versions["liger"] = getattr(liger_kernel, "__version__", "?")
        return LF

    def mod(self, impl):
        if impl not in self.mods:
            raise Unavailable(self.err.get(impl, "not loaded"))
        return self.mods[impl]

    def compiled_fn(self, op):
        if op not in self.compiled:
            self.compiled[op] = torch.compile(EAGER[op], dynamic=False)
        return self.compiled[op]


# ---------------------------------------------------------------------------------------------------------------
# Inputs, bytes, kernels

_GEN = {}


def generator():
    """A private CUDA generator for the inputs: a graph capture that fails (a peer that synchronises) can leave the
    default generator marked as capturing, after which torch.randn on it raises."""
    if "g" not in _GEN:
        _GEN["g"] = torch.Generator(device="cuda")
        _GEN["g"].manual_seed(1234)
    return _GEN["g"]


def make_set(op, M, N, dt, dev="cuda"):
    """One input set (a tuple of tensors) for a memory-bound op."""
    gen = generator()

    def rnd(*shape, dtype=dt):
        return torch.randn(*shape, dtype=dtype, device=dev, generator=gen)
    if op == "rmsnorm_fwd":
        return (rnd(M, N), rnd(N))
    if op == "rmsnorm_fwd_mixed":
        return (rnd(M, N), rnd(N, dtype=torch.float32))
    if op == "rmsnorm_fwd_residual_mixed":
        return (rnd(M, N), rnd(M, N), rnd(N, dtype=torch.float32))
    if op == "layernorm_fwd":
        return (rnd(M, N), rnd(N), rnd(N))
    if op == "layernorm_fwd_mixed":
        return (rnd(M, N), rnd(N, dtype=torch.float32), rnd(N, dtype=torch.float32))
    if op == "rmsnorm_bwd_mixed":
        return (rnd(M, N), rnd(N, dtype=torch.float32), rnd(M, N))
    if op == "layernorm_bwd_mixed":
        return (rnd(M, N), rnd(N, dtype=torch.float32), rnd(N, dtype=torch.float32), rnd(M, N))
    if op in ("softmax_fwd", "silu_fwd"):
        return (rnd(M, N),)
    if op in ("ce_fwd", "ce_fwd_grad"):
        return (rnd(M, N), torch.randint(0, N, (M,), device=dev, dtype=torch.int64, generator=gen))
    if op == "rmsnorm_bwd":
        return (rnd(M, N), rnd(N), rnd(M, N))
    if op == "softmax_bwd":
        return (rnd(M, N), rnd(M, N))
    if op == "swiglu_fwd":
        return (rnd(M, N), rnd(M, N))
    raise ValueError(op)


def mem_bytes(op, M, N, es):
    x = M * N * es
    return {"rmsnorm_fwd": 2 * x + N * es, "rmsnorm_fwd_mixed": 2 * x + N * 4, "layernorm_fwd": 2 * x + 2 * N * es,
            "rmsnorm_fwd_residual_mixed": 4 * x + N * 4, "layernorm_fwd_mixed": 2 * x + 2 * N * 4,
            "rmsnorm_bwd_mixed": 3 * x, "layernorm_bwd_mixed": 3 * x,
            "softmax_fwd": 2 * x, "ce_fwd": x + 12 * M, "ce_fwd_grad": 2 * x + 12 * M, "rmsnorm_bwd": 3 * x,
            "softmax_bwd": 3 * x, "silu_fwd": 2 * x, "swiglu_fwd": 3 * x}[op]


def forward_fn(op, impl, P):
    """f(*inputs) -> output for the forward of `op` ("rmsnorm", "softmax" ... keyed by the forward op name)."""
    base = {"rmsnorm_fwd_mixed": "rmsnorm_fwd", "layernorm_fwd_mixed": "layernorm_fwd"}.get(op, op)
    if impl == "torch":
        return EAGER[base]
    if impl == "torch.compile":
        return P.compiled_fn(base)
    table = {}
    if impl == "tachyon":
        T = P.mod("tachyon")
        table = {"rmsnorm_fwd": lambda x, w: T.rms_norm(x, w, RMS_EPS),
                 "layernorm_fwd": lambda x, w, b: T.layer_norm(x, w, b, LN_EPS),
                 "softmax_fwd": lambda x: T.softmax(x, -1),
                 # per-row losses, as Quack's cross_entropy_fwd returns them (mean adds two small kernels)
                 "ce_fwd": lambda lg, t: T.cross_entropy(lg, t, reduction="none"),
                 "silu_fwd": lambda x: T.silu(x),
                 "swiglu_fwd": lambda g, u: T.swiglu(g, u)}
    elif impl == "quack":
        q = P.mod("quack")
        table = {"rmsnorm_fwd": lambda x, w: q.rmsnorm.rmsnorm(x, w, eps=RMS_EPS),
                 # quack's LayerNorm takes fp32 weight and bias only (converted once, outside the timed span)
                 "layernorm_fwd": lambda x, w, b: q.rmsnorm.layernorm_fwd(x, w, b, eps=LN_EPS),
                 "softmax_fwd": lambda x: q.softmax.softmax(x),
                 "ce_fwd": lambda lg, t: q.cross_entropy.cross_entropy_fwd(lg, t, return_lse=True)}
    elif impl == "liger":
        LF = P.mod("liger")
        table = {"rmsnorm_fwd": lambda x, w: LF.liger_rms_norm(x, w, RMS_EPS),
                 "layernorm_fwd": lambda x, w, b: LF.liger_layer_norm(x, w, b, LN_EPS),
                 "softmax_fwd": lambda x: LF.liger_softmax(x),
                 "ce_fwd": lambda lg, t: LF.liger_cross_entropy(lg, t),
                 "swiglu_fwd": lambda g, u: LF.liger_swiglu(g, u)}
    if base not in table:
        raise Unavailable(f"{impl} has no {op}")
    return table[base]


def with_grad(fn):
    def run():
        with torch.enable_grad():
            return fn()
    return run


def build(op, impl, P, args):
    """A zero-argument closure: one call of `op` by `impl` on one input set (setup done here, untimed)."""
    if op in ("rmsnorm_fwd", "rmsnorm_fwd_mixed", "layernorm_fwd", "layernorm_fwd_mixed", "softmax_fwd", "ce_fwd", "silu_fwd",
              "swiglu_fwd"):
        f = forward_fn(op, impl, P)
        if impl == "quack" and op == "layernorm_fwd":
            args = (args[0], args[1].float(), args[2].float())
        return lambda: f(*args)

    if op == "rmsnorm_fwd_residual_mixed":  # h = x + residual, y = RMSNorm(h): returns y and h
        x, r, w = args
        if impl == "tachyon":
            T = P.mod("tachyon")
            return lambda: T.rms_norm(x, w, RMS_EPS, residual=r)
        if impl == "quack":
            fwd = P.mod("quack").rmsnorm.rmsnorm_fwd
            return lambda: fwd(x, w, residual=r, eps=RMS_EPS)
        raise Unavailable(f"{impl} has no fused residual RMSNorm here")

    if op == "layernorm_bwd_mixed":  # dx, dw, db of the impl's own forward
        x, w, b, dy = args
        if impl == "quack":
            q = P.mod("quack").rmsnorm
            _, rstd, mean = q.layernorm_fwd(x, w, b, eps=LN_EPS, return_rstd=True, return_mean=True)
            return lambda: q.layernorm_bwd(x, w, dy, rstd, mean, has_bias=True)
        if impl != "tachyon":
            raise Unavailable(f"{impl}: no fp32 weight beside 16-bit x here")
        f = forward_fn("layernorm_fwd", impl, P)
        xr, wr, br = x.detach().requires_grad_(), w.detach().requires_grad_(), b.detach().requires_grad_()
        with torch.enable_grad():
            y = f(xr, wr, br)
        return with_grad(lambda: torch.autograd.grad(y, (xr, wr, br), dy, retain_graph=True))

    if op == "ce_fwd_grad":
        logits, target = args
        if impl == "quack":  # quack's fused forward: loss, lse and dlogits in one pass
            ce = P.mod("quack").cross_entropy.cross_entropy_fwd
            return lambda: ce(logits, target, return_lse=True, return_dx=True)
        if impl == "liger":  # liger writes dlogits into the logits during the forward: own copy
            lf = forward_fn("ce_fwd", impl, P)
            lg = logits.detach().clone().requires_grad_()
            return with_grad(lambda: lf(lg, target))
        lg = logits.detach().requires_grad_()
        if impl == "tachyon":  # the forward writes the gradient when the logits require it
            # sum: dlogits for a unit gradient a row, as Quack's return_dx (the loss sum adds one small kernel)
            T = P.mod("tachyon")
            return with_grad(lambda: T.cross_entropy(lg, target, reduction="sum"))
        f = forward_fn("ce_fwd", impl, P)  # torch, torch.compile: forward + backward
        return with_grad(lambda: torch.autograd.grad(f(lg, target), lg))

    if op in ("rmsnorm_bwd", "rmsnorm_bwd_mixed"):
        x, w, dy = args
        f = forward_fn("rmsnorm_fwd", impl, P)
        if impl == "liger":
            dy = dy.clone()  # liger's backward overwrites dy (in_place=True, its default)
        xr, wr = x.detach().requires_grad_(), w.detach().requires_grad_()
        with torch.enable_grad():
            y = f(xr, wr)
        return with_grad(lambda: torch.autograd.grad(y, (xr, wr), dy, retain_graph=True))

    if op == "softmax_bwd":
        x, dy = args
        f = forward_fn("softmax_fwd", impl, P)
        xr = x.detach().requires_grad_()
        with torch.enable_grad():
            y = f(xr)
        return with_grad(lambda: torch.autograd.grad(y, xr, dy, retain_graph=True))

    if op in GEMM_OPS:
        a, w = args[0], args[1]
        if impl == "torch":
            return (lambda: t_linear(a, w)) if op == "gemm" else (lambda: t_linear_bias_silu(a, w, args[2]))
        if impl == "torch.compile":
            if op == "gemm":
                raise Unavailable("a plain GEMM compiles to the same cuBLAS call")
            c = P.compiled_fn(op)
            return lambda: c(a, w, args[2])
        if impl == "tachyon":
            T = P.mod("tachyon")
            if op == "gemm":
                return lambda: T.linear(a, w)
            return lambda: T.linear(a, w, args[2], activation="silu")
        if impl == "quack" and op == "gemm":
            P.mod("quack")
            import quack.gemm_interface as qg
            kw = {}
            if "tuned" in inspect.signature(qg.gemm).parameters:
                kw["tuned"] = P.quack_gemm_tuned
            b_kn = w.mT  # quack's B is (K, N); this is the K-major view of W, no copy
            return lambda: qg.gemm(a, b_kn, **kw)
        raise Unavailable(f"{impl} has no {op} here")
    raise ValueError(op)


# ---------------------------------------------------------------------------------------------------------------
# Timers

class Timer:
    def __init__(self, stream, graph_ms=10.0, reps=10, eager_ms=100.0, max_calls=1000):
        self.stream, self.graph_ms, self.reps, self.eager_ms, self.max_calls = stream, graph_ms, reps, eager_ms, max_calls
        self.flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")

    @staticmethod
    def _events(n):
        return [torch.cuda.Event(enable_timing=True) for _ in range(n)]

    def warmup(self, fns, rounds=2):
        for _ in range(rounds):
            for f in fns:
                f()
        torch.cuda.synchronize()

    def per_call_ms(self, fns):
        e0, e1 = self._events(2)
        e0.record()
        for f in fns:
            f()
        e1.record()
        torch.cuda.synchronize()
        return max(e0.elapsed_time(e1) / len(fns), 1e-4)

    def graph(self, fns):
        """(ms per call, mode): CUDA-graph replay of n calls rotating over fns; events fallback."""
        k = len(fns)
        est = self.per_call_ms(fns)
        n = min(max(1, math.ceil(self.graph_ms / est)), self.max_calls)
        n = max(k, math.ceil(n / k) * k)
        g = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(g, stream=self.stream, capture_error_mode="thread_local"):
                for i in range(n):
                    fns[i % k]()
            g.replay()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            g = None
            while e.__context__ is not None:  # the error inside the capture, not capture_end's echo of it
                e = e.__context__
            torch.cuda.synchronize()
            free()
            return self._events_loop(fns, min(n, 200)), "events (capture failed: " + short(e, 80) + ")"
        evs = self._events(2 * self.reps)
        for r in range(self.reps):
            evs[2 * r].record()
            g.replay()
            evs[2 * r + 1].record()
        torch.cuda.synchronize()
        ms = statistics.median(evs[2 * r].elapsed_time(evs[2 * r + 1]) for r in range(self.reps)) / n
        del g
        return ms, "graph"

    def _events_loop(self, fns, n):
        k = len(fns)
        n = max(k, math.ceil(n / k) * k)
        evs = self._events(2 * self.reps)
        for r in range(self.reps):
            evs[2 * r].record()
            for i in range(n):
                fns[i % k]()
            evs[2 * r + 1].record()
        torch.cuda.synchronize()
        return statistics.median(evs[2 * r].elapsed_time(evs[2 * r + 1]) for r in range(self.reps)) / n

    def eager(self, fn):
        """do_bench-like: L2 flushed (256 MB zeroed) before each call, events around the call, median."""
        self.flush.zero_()
        e0, e1 = self._events(2)
        e0.record()
        self.flush.zero_()
        e1.record()
        torch.cuda.synchronize()
        flush_ms = e0.elapsed_time(e1)
        est = self.per_call_ms([fn])
        n = min(200, max(10, math.ceil(self.eager_ms / (est + flush_ms))))
        evs = self._events(2 * n)
        for i in range(n):
            self.flush.zero_()
            evs[2 * i].record()
            fn()
            evs[2 * i + 1].record()
        torch.cuda.synchronize()
        return statistics.median(evs[2 * i].elapsed_time(evs[2 * i + 1]) for i in range(n))

    def copy_gbps(self, gib=1.0):
        """Device-to-device copy bandwidth (bytes read + written), eager events, median: the limit."""
        numel = int(gib * (1 << 30)) // 4
        src = torch.ones(numel, dtype=torch.float32, device="cuda")
        dst = torch.empty_like(src)
        for _ in range(3):
            dst.copy_(src)
        torch.cuda.synchronize()
        n = 20
        evs = self._events(2 * n)
        for i in range(n):
            evs[2 * i].record()
            dst.copy_(src)
            evs[2 * i + 1].record()
        torch.cuda.synchronize()
        ms = statistics.median(evs[2 * i].elapsed_time(evs[2 * i + 1]) for i in range(n))
        del src, dst
        free()
        return 2 * numel * 4 / (ms * 1e-3) / 1e9


# ---------------------------------------------------------------------------------------------------------------
# Measurement

def measure(timer, op, impl, P, sets, work, unit):
    """One cell: returns dict with value_graph, value_eager (GB/s or TFLOP/s), ms, mode, first_s, error."""
    out = {"value_graph": None, "value_eager": None, "ms_graph": None, "ms_eager": None, "mode": None,
           "first_s": None, "error": None, "n_sets": len(sets)}
    fns = []
    try:
        t0 = time.perf_counter()
        fns = [build(op, impl, P, s) for s in sets]
        fns[0]()
        torch.cuda.synchronize()
        out["first_s"] = round(time.perf_counter() - t0, 3)
        timer.warmup(fns)
        ms, mode = timer.graph(fns)
        out.update(ms_graph=ms, mode=mode, value_graph=work / (ms * 1e-3) / (1e9 if unit == "GB/s" else 1e12))
    except Unavailable as e:
        out["error"] = str(e)
    except Exception as e:  # noqa: BLE001 (a failing peer is an n/a cell, never a crash)
        out["error"] = short(e, 140)
        try:
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001 (a sticky error: the next cells will say so)
            pass
    if out["error"] is None:
        try:
            ms = timer.eager(fns[0])
            out.update(ms_eager=ms, value_eager=work / (ms * 1e-3) / (1e9 if unit == "GB/s" else 1e12))
        except Exception as e:  # noqa: BLE001
            out["error"] = "eager timer: " + short(e, 140)
    del fns
    free()
    return out


class Recorder:
    def __init__(self, path, meta):
        self.path, self.meta, self.rows = path, meta, []
        path.parent.mkdir(parents=True, exist_ok=True)

    def add(self, row):
        row = {**row, **self.meta}
        self.rows.append(row)
        with open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")


def fmt(v, w=8, p=1):
    return f"{v:{w}.{p}f}" if v is not None else " " * (w - 3) + "n/a"


def run_memory_ops(args, timer, P, rec, copy_gbps, l2_bytes, dtype_name, ops, impls):
    dt = DTYPES[dtype_name]
    es = torch.tensor([], dtype=dt).element_size()
    ns = QUICK_N if args.quick else SWEEP_N
    if args.n:
        ns = [int(v) for v in args.n.split(",")]
    for op in ops:
        if op in MIXED_OPS and dt == torch.float32:
            print(f"[{op}] skipped: mixed means a 16-bit x with an fp32 weight (--dtype bf16 or fp16)")
            continue
        t_op = time.perf_counter()
        print(f"\n== {op} {dtype_name}")
        for N in ns:
            M = rows_for(N)
            try:
                one = make_set(op, M, N, dt)
                in_bytes = sum(t.numel() * t.element_size() for t in one)
                k = 1 if in_bytes >= 3 * l2_bytes else min(64, math.ceil(3 * l2_bytes / in_bytes))
                sets = [one] + [make_set(op, M, N, dt) for _ in range(k - 1)]
            except Exception as e:  # noqa: BLE001 (e.g. out of memory for fp32 at the largest shapes)
                print(f"{op:18} {M:>6}x{N:<7} inputs failed: {short(e, 140)}")
                free()
                continue
            work = mem_bytes(op, M, N, es)
            for impl in impls:
                r = measure(timer, op, impl, P, sets, work, "GB/s")
                row = {"op": op, "dtype": dtype_name + ("-x fp32-w" if op in MIXED_OPS else ""),
                       "M": M, "N": N, "impl": impl, "bytes": work,
                       "gbps_graph": _r(r["value_graph"]), "gbps_eager": _r(r["value_eager"]),
                       "copy_gbps": _r(copy_gbps),
                       "ratio": _r(r["value_graph"] / copy_gbps, 4) if r["value_graph"] else None,
                       "ratio_eager": _r(r["value_eager"] / copy_gbps, 4) if r["value_eager"] else None,
                       "ms_graph": _r(r["ms_graph"], 5), "ms_eager": _r(r["ms_eager"], 5), "timer": r["mode"],
                       "n_sets": r["n_sets"], "first_s": r["first_s"], "error": r["error"]}
                rec.add(row)
                print_row(row)
                if r["error"] and impl == "torch.compile" and N == ns[0]:
                    print(f"   torch.compile failed for {op}: {r['error']}")
            del sets, one
            free()
        print(f"   ({time.perf_counter() - t_op:.0f} s)")


def _r(v, p=1):
    return round(v, p) if v is not None else None


def print_row(row):
    shape = f"{row['M']:>6}x{row['N']:<7}" if "K" not in row else f"{row['M']}x{row['N']}x{row['K']}".ljust(17)
    if row["error"]:
        err = row["error"] if len(row["error"]) <= 90 else row["error"][:87] + "..."
        print(f"{row['op']:18} {shape} {row['impl']:14} n/a ({err})")
        return
    if "K" in row:
        print(f"{row['op']:18} {shape} {row['impl']:14} graph {fmt(row['tflops_graph'], 7)} TFLOP/s "
              f"{fmt(row['ratio'], 6, 3)} x cuBLAS   eager {fmt(row['tflops_eager'], 7)}  [{row['timer']}]")
        return
    mark = "" if row["timer"] == "graph" else f"  [{row['timer']}]"
    print(f"{row['op']:18} {shape} {row['impl']:14} graph {fmt(row['gbps_graph'])} GB/s {fmt(row['ratio'], 6, 3)} "
          f"x copy   eager {fmt(row['gbps_eager'])} GB/s  (sets {row['n_sets']}){mark}")


def run_gemm_ops(args, timer, P, rec, dtype_name, ops, impls):
    dt = torch.float16 if dtype_name == "fp16" else torch.bfloat16
    gname = "fp16" if dt == torch.float16 else "bf16"
    shapes = GEMM_QUICK if args.quick else GEMM_SHAPES
    for op in ops:
        print(f"\n== {op} {gname} (C = A.W^T, W (N, K) as nn.Linear; TFLOP/s = 2MNK/t)")
        op_shapes = shapes if op == "gemm" else [(8192, 8192, 8192), (8192, 28672, 4096)]
        for (M, N, K) in op_shapes:
            try:
                gen = generator()
                a = torch.randn(M, K, dtype=dt, device="cuda", generator=gen)
                w = torch.randn(N, K, dtype=dt, device="cuda", generator=gen) * (K ** -0.5)
                sets = [(a, w)] if op == "gemm" else [(a, w, torch.randn(N, dtype=dt, device="cuda", generator=gen))]
            except Exception as e:  # noqa: BLE001
                print(f"{op} {M}x{N}x{K} inputs failed: {short(e, 140)}")
                free()
                continue
            flops = 2 * M * N * K
            base = None
            for impl in (["torch"] + [i for i in impls if i != "torch"]) if "torch" in impls else impls:
                r = measure(timer, op, impl, P, sets, flops, "TFLOP/s")
                if impl == "torch":
                    base = r["value_graph"]
                name = impl
                if impl == "torch":
                    name = "cublas(F.linear)" if op == "gemm" else "torch(cublas+silu)"
                if impl == "quack" and op == "gemm" and not P.quack_gemm_tuned:
                    name = "quack(untuned)"
                row = {"op": op, "dtype": gname, "M": M, "N": N, "K": K, "impl": name, "flops": flops,
                       "tflops_graph": _r(r["value_graph"]), "tflops_eager": _r(r["value_eager"]),
                       "cublas_tflops": _r(base),
                       "ratio": _r(r["value_graph"] / base, 4) if (base and r["value_graph"]) else None,
                       "gbps_graph": None, "gbps_eager": None, "copy_gbps": None,
                       "ms_graph": _r(r["ms_graph"], 5), "ms_eager": _r(r["ms_eager"], 5), "timer": r["mode"],
                       "n_sets": 1, "first_s": r["first_s"], "error": r["error"]}
                rec.add(row)
                print_row(row)
            del sets, a, w
            free()


# ---------------------------------------------------------------------------------------------------------------
# Tables and plots

def print_tables(rows):
    ops = []
    for r in rows:
        if (r["op"], r["dtype"]) not in ops:
            ops.append((r["op"], r["dtype"]))
    for op, dtype in ops:
        sel = [r for r in rows if r["op"] == op and r["dtype"] == dtype]
        gemm = "K" in sel[0]
        cols = []
        for r in sel:
            c = (r["M"], r["N"], r.get("K"))
            if c not in cols:
                cols.append(c)
        impls = []
        for r in sel:
            if r["impl"] not in impls:
                impls.append(r["impl"])
        label = (lambda c: f"{c[0]}x{c[1]}x{c[2]}") if gemm else (lambda c: str(c[1]))
        unit = "TFLOP/s (graph) [x cuBLAS]" if gemm else "GB/s (graph) [x copy]"
        print(f"\n{op} {dtype}: {unit}")
        w = max(14, max(len(label(c)) for c in cols) + 2)
        print(f"{'impl':18}" + "".join(f"{label(c):>{w}}" for c in cols))
        for impl in impls:
            line = f"{impl:18}"
            for c in cols:
                r = next((r for r in sel if r["impl"] == impl and (r["M"], r["N"], r.get("K")) == c), None)
                v = None if r is None else (r["tflops_graph"] if gemm else r["gbps_graph"])
                cell = "n/a" if v is None else f"{v:.0f} [{r['ratio']:.3f}]" if r["ratio"] else f"{v:.0f}"
                line += f"{cell:>{w}}"
            print(line)


def color(impl):
    """One colour per implementation in every plot."""
    for key, c in (("tachyon", "C3"), ("compile", "C1"), ("quack", "C2"), ("liger", "C4"), ("torch", "C0"),
                   ("cublas", "C0")):
        if key in impl:
            return c
    return "C7"


def plot_all(rows, plots_dir, gpu_name, tag, date):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001
        print(f"[plots] skipped: {short(e, 140)} (pip install matplotlib)")
        return []
    plots_dir = pathlib.Path(plots_dir)
    plots_dir.mkdir(parents=True, exist_ok=True)
    written = []
    keys = []
    for r in rows:
        if (r["op"], r["dtype"]) not in keys:
            keys.append((r["op"], r["dtype"]))
    for op, dtype in keys:
        sel = [r for r in rows if r["op"] == op and r["dtype"] == dtype]
        fig, ax = plt.subplots(figsize=(9, 5.5))
        impls = list(dict.fromkeys(r["impl"] for r in sel))
        if "K" in sel[0]:
            shapes = list(dict.fromkeys((r["M"], r["N"], r["K"]) for r in sel))
            width = 0.8 / max(1, len(impls))
            for j, impl in enumerate(impls):
                ys = []
                for s in shapes:
                    r = next((r for r in sel if r["impl"] == impl and (r["M"], r["N"], r["K"]) == s), None)
                    ys.append(r["tflops_graph"] if r and r["tflops_graph"] else 0.0)
                ax.bar([i + j * width for i in range(len(shapes))], ys, width, label=impl, color=color(impl))
            ax.set_xticks([i + width * (len(impls) - 1) / 2 for i in range(len(shapes))])
            ax.set_xticklabels([f"{m}x{n}x{k}" for m, n, k in shapes], rotation=30, ha="right", fontsize=8)
            ax.set_ylabel("TFLOP/s (CUDA-graph replay)")
            top = max([r["tflops_graph"] or 0 for r in sel] + [1])
            ax.set_ylim(0, top * 1.25)
        else:
            for impl in impls:
                mine = [r for r in sel if r["impl"] == impl and r["gbps_graph"]]
                pts = sorted((r["N"], r["gbps_graph"]) for r in mine)
                if pts:
                    fallback = any(r.get("timer") not in (None, "graph") for r in mine)
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="x" if fallback else "o",
                            label=impl + (" (events: graph capture failed)" if fallback else ""), color=color(impl))
            copy = next((r["copy_gbps"] for r in sel if r.get("copy_gbps")), None)
            if copy:
                ax.axhline(copy, linestyle="--", color="k", linewidth=1, label=f"copy {copy:.0f} GB/s")
            ax.set_xscale("log", base=2)
            ax.set_xlabel("N (row length; M = 32768, 16384 at 131072, 8192 at 262144)")
            ax.set_ylabel("GB/s (CUDA-graph replay, HBM: inputs rotated over > 3x L2)")
            ax.set_ylim(bottom=0)
        ax.set_title(f"{op} ({dtype}) on {gpu_name}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = plots_dir / f"{tag}-{date}-{op}-{dtype.replace(' ', '_')}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    for p in written:
        print(f"[plots] {p}")
    return written


def selftest_plot(args):
    """Synthetic rows through the table and plot code (no GPU needed)."""
    rows = []
    for n in SWEEP_N:
        for impl, base in (("tachyon", 2950), ("torch", 1950), ("torch.compile", 2100), ("quack", 2980),
                           ("liger", 2900)):
            g = None if (impl == "liger" and n > 65536) else base * (1 - 0.3 * math.exp(-n / 2048))
            rows.append({"op": "rmsnorm_fwd", "dtype": "bf16", "M": rows_for(n), "N": n, "impl": impl,
                         "gbps_graph": g, "gbps_eager": g and g * 0.9, "copy_gbps": 3001.0,
                         "ratio": g and g / 3001.0, "error": None if g else "synthetic n/a"})
    for (m, n, k) in GEMM_QUICK:
        for impl, t in (("cublas(F.linear)", 700.0), ("tachyon", 705.0), ("quack(untuned)", 690.0)):
            rows.append({"op": "gemm", "dtype": "bf16", "M": m, "N": n, "K": k, "impl": impl, "tflops_graph": t,
                         "ratio": t / 700.0, "error": None})
    print_tables(rows)
    written = plot_all(rows, args.plots, "Synthetic GPU (selftest)", "selftest", datetime.date.today().isoformat())
    return 0 if written else 1


# ---------------------------------------------------------------------------------------------------------------

def select(spec, names):
    """Names chosen by a comma list: an exact name picks itself, any other item every name containing it."""
    if not spec:
        return list(names)
    chosen = set()
    for w in (s.strip() for s in spec.split(",") if s.strip()):
        chosen |= {w} if w in names else {n for n in names if w in n}
    return [n for n in names if n in chosen]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="Tachyon's Python ops against torch eager, torch.compile, Quack and "
                                 "Liger: memory-bound sweep (GB/s, ratio to the same-run copy) and GEMMs (TFLOP/s).",
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="ops: " + ", ".join(MEM_OPS + GEMM_OPS) + "\nimpls: " + ", ".join(IMPLS))
    ap.add_argument("--quick", action="store_true", help="N in {1024, 4096, 16384, 65536, 262144}, fewer GEMMs")
    ap.add_argument("--dtype", default="bf16", help="bf16, fp16 or fp32, or a comma list (default bf16)")
    ap.add_argument("--ops", default="", help="comma list of op names or substrings (default: all)")
    ap.add_argument("--impls", default="", help="comma list among " + ",".join(IMPLS) + " (default: all)")
    ap.add_argument("--n", default="", help="override the N list of the memory-bound sweep (comma list)")
    ap.add_argument("--results", default=str(REPO / "bench" / "results"), help="JSON-lines directory")
    ap.add_argument("--plots", default=str(REPO / "bench" / "results" / "plots"), help="PNG directory")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--no-gemm", action="store_true", help="skip the GEMM shapes")
    ap.add_argument("--graph-ms", type=float, default=10.0, help="work captured per graph (ms, default 10)")
    ap.add_argument("--reps", type=int, default=10, help="graph replays per cell (median, default 10)")
    ap.add_argument("--copy-gib", type=float, default=1.0, help="size of the copy that sets the limit (GiB)")
    ap.add_argument("--quack-gemm-tuned", action="store_true",
                    help="let quack.gemm autotune (minutes per shape); default: its untuned default config")
    ap.add_argument("--selftest-plot", action="store_true", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.selftest_plot:
        return selftest_plot(args)
    if not torch.cuda.is_available():
        print("bench_peers: no CUDA device", file=sys.stderr)
        return 2
    dtypes = [d.strip() for d in args.dtype.split(",") if d.strip()]
    bad = [d for d in dtypes if d not in DTYPES]
    if bad:
        print(f"bench_peers: unknown dtype {bad} (bf16, fp16, fp32)", file=sys.stderr)
        return 2
    mem_ops, gemm_ops = select(args.ops, MEM_OPS), ([] if args.no_gemm else select(args.ops, GEMM_OPS))
    impls = [i.strip() for i in args.impls.split(",") if i.strip()] if args.impls else list(IMPLS)
    if [i for i in impls if i not in IMPLS]:
        print(f"bench_peers: unknown impl in {impls} (choose among {', '.join(IMPLS)})", file=sys.stderr)
        return 2
    if not (mem_ops or gemm_ops):
        print("bench_peers: --ops selects nothing; ops are " + ", ".join(MEM_OPS + GEMM_OPS), file=sys.stderr)
        return 2

    warnings.filterwarnings("ignore", message=".*Mismatch dtype between input and weight.*")
    import torch._dynamo as dynamo
    for k in ("recompile_limit", "cache_size_limit"):  # one static compile per shape and op
        if hasattr(dynamo.config, k):
            setattr(dynamo.config, k, 512)
    for k in ("accumulated_recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(dynamo.config, k):
            setattr(dynamo.config, k, 8192)

    t_start = time.perf_counter()
    P = Peers(impls, args.quack_gemm_tuned)
    props = torch.cuda.get_device_properties(0)
    gpu_name, tag = props.name, gpu_tag(props.name)
    l2 = getattr(props, "L2_cache_size", 50 << 20) or (50 << 20)
    date = datetime.date.today().isoformat()
    meta = {"gpu": gpu_name, "torch": torch.__version__, "commit": commit_id(),
            "run": datetime.datetime.now().isoformat(timespec="seconds")}
    meta.update({f"{k}_version": v for k, v in P.versions.items()})
    rec = Recorder(pathlib.Path(args.results) / f"{tag}-{date}-python-peers.jsonl", meta)
    print(f"{gpu_name}: {props.multi_processor_count} SMs, L2 {l2 >> 20} MB; torch {torch.__version__}; "
          f"commit {meta['commit']}; impls {', '.join(impls)}"
          + "".join(f"; {k} {v}" for k, v in P.versions.items()))

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.no_grad():
        timer = Timer(stream, graph_ms=args.graph_ms, reps=args.reps)
        copy = timer.copy_gbps(args.copy_gib)
        print(f"device-to-device copy ({args.copy_gib:g} GiB, read + write, eager events): {copy:.0f} GB/s")
        rec.add({"op": "copy", "dtype": "fp32", "M": None, "N": None, "impl": "torch", "gbps_graph": None,
                 "gbps_eager": _r(copy), "copy_gbps": _r(copy), "ratio": 1.0, "bytes": int(2 * args.copy_gib * (1 << 30)),
                 "error": None})
        for dtype_name in dtypes:
            run_memory_ops(args, timer, P, rec, copy, l2, dtype_name, mem_ops, impls)
        if gemm_ops:
            gemm_dtypes = sorted({"fp16" if d == "fp16" else "bf16" for d in dtypes})
            for gd in gemm_dtypes:
                run_gemm_ops(args, timer, P, rec, gd, gemm_ops, impls)
    torch.cuda.synchronize()

    rows = [r for r in rec.rows if r["op"] != "copy"]
    print_tables(rows)
    print(f"\ncopy limit {copy:.0f} GB/s; JSON lines appended to {rec.path}")
    if not args.no_plots:
        plot_all(rows, args.plots, gpu_name, tag, date)
    print(f"total {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

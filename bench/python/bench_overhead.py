#!/usr/bin/env python3
"""Host cost per call of tachyon's Python ops against PyTorch's own, at tiny shapes where the GPU work is negligible.

    python3 bench/python/bench_overhead.py [--ops OPS] [--batches 50] [--calls 100] [--results DIR]

Shapes: 4 x 4096 bf16 (rms_norm, layer_norm, softmax, silu, gelu, swiglu); cross-entropy 4 x 32000 bf16 logits with
int64 targets; linear 64 x 4096 by a 4096 x 4096 weight.

For every op three callers:
  tachyon      the functional call (tachyon.rms_norm, ...)
  tachyon.raw  the registered operator itself (torch.ops.tachyon.<op>), skipping the Python wrapper
  torch        PyTorch's equivalent (F.rms_norm, F.layer_norm, torch.softmax, F.cross_entropy, F.silu,
               F.gelu(approximate="tanh"), F.silu(g) * u, F.linear)
each in two modes:
  no_grad      under torch.no_grad() with plain inputs
  autograd     inputs require grad, so the forward records the autograd graph (forward only; no backward is timed)
and floors: torch.empty(1, device="cuda") (allocator, no kernel), torch.cuda._sleep(0) (one bare kernel launch),
torch.add(x, x) (one small aten kernel with dispatch).

Timing: after a warm-up, batches of --calls back-to-back calls with no synchronisation inside; the host wall time of
the batch (perf_counter) divided by the number of calls is the host cost; torch.cuda.synchronize() runs between
batches, outside the timed span ("wall" adds it: the figure when the GPU, not the host, is the limit). Median over
--batches batches. ratio = tachyon (or tachyon.raw) / torch in the same mode.

Outputs: a table on stdout and JSON lines appended to --results DIR/<gpu>-<date>-python-overhead.jsonl with
{op, impl, mode, shape, dtype, host_us_per_call, wall_us_per_call, ratio_to_torch, gpu, torch, commit, error}.
"""
import argparse
import datetime
import json
import pathlib
import statistics
import sys
import time
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_common import commit_id, gpu_tag, import_tachyon, short  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
OPS = ["rms_norm", "layer_norm", "softmax", "cross_entropy", "silu", "gelu", "swiglu", "linear"]
MODES = ["no_grad", "autograd"]




def raw_schema(name):
    """The registered schema(s) of torch.ops.tachyon.<name>, to print beside a failing raw call."""
    import torch
    try:
        packet = getattr(torch.ops.tachyon, name)
        return "; ".join(str(getattr(packet, o)._schema) for o in packet.overloads())
    except Exception as e:  # noqa: BLE001
        return "no schema: " + short(e, 80)


def inputs(op, mode):
    """(args, shape, dtype) for one op; in autograd mode the float inputs require grad."""
    import torch
    dev, bf = "cuda", torch.bfloat16
    g = mode == "autograd"

    def t(*shape, dtype=bf, scale=1.0):
        return (torch.randn(*shape, device=dev, dtype=dtype) * scale).requires_grad_(g)

    if op == "rms_norm":
        return (t(4, 4096), t(4096)), "4x4096", "bf16"
    if op == "layer_norm":
        return (t(4, 4096), t(4096), t(4096)), "4x4096", "bf16"
    if op in ("softmax", "silu", "gelu"):
        return (t(4, 4096),), "4x4096", "bf16"
    if op == "swiglu":
        return (t(4, 4096), t(4, 4096)), "4x4096", "bf16"
    if op == "cross_entropy":
        return (t(4, 32000), torch.randint(0, 32000, (4,), device=dev)), "4x32000", "bf16 logits, int64 targets"
    if op == "linear":
        return (t(64, 4096), t(4096, 4096, scale=4096 ** -0.5), t(4096)), "64x4096x4096", "bf16"
    raise ValueError(op)


_CANDIDATES = {}


def candidate_ops():
    """The binding we did not choose, for comparison: an operator registered from Python
    (torch.library.custom_op with a Python fake and autograd formula) whose body calls the C++
    kernel. Any framework-neutral binding (nanobind / DLPack under a thin torch layer) pays at
    least this Python dispatch on every call."""
    import torch
    if _CANDIDATES:
        return _CANDIDATES

    @torch.library.custom_op("tachyon_candidate::silu", mutates_args=())
    def silu_c(x: torch.Tensor) -> torch.Tensor:
        return torch.ops.tachyon.silu.default(x)

    silu_c.register_fake(lambda x: torch.empty_like(x))
    silu_c.register_autograd(lambda ctx, g: torch.ops.tachyon.silu_backward.default(g, ctx.x),
                             setup_context=lambda ctx, inputs, output: setattr(ctx, "x", inputs[0]))

    @torch.library.custom_op("tachyon_candidate::rms_norm", mutates_args=())
    def rms_c(x: torch.Tensor, w: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
        y, _, rstd = torch.ops.tachyon.rms_norm.default(x, w, None, eps, 0.0)
        return y, rstd

    rms_c.register_fake(lambda x, w, eps: (torch.empty_like(x), x.new_empty(x.shape[:-1], dtype=torch.float32)))

    def rms_bwd(ctx, gy, grstd):
        dx, dw = torch.ops.tachyon.rms_norm_backward.default(gy, ctx.x, ctx.w, ctx.rstd, None, 0.0, True)
        return dx, dw, None

    def rms_setup(ctx, inputs, output):
        ctx.x, ctx.w, ctx.rstd = inputs[0], inputs[1], output[1]

    rms_c.register_autograd(rms_bwd, setup_context=rms_setup)
    _CANDIDATES.update(silu=silu_c, rms_norm=rms_c)
    return _CANDIDATES


def callers(op, T, args):
    """{impl: zero-argument callable} for one op and one input tuple."""
    import torch
    import torch.nn.functional as F
    ops = torch.ops.tachyon if T is not None else None
    c = {}
    if op == "rms_norm":
        x, w = args
        c["tachyon"] = lambda: T.rms_norm(x, w, 1e-6)
        c["tachyon.raw"] = lambda: ops.rms_norm(x, w, None, 1e-6, 0.0)
        c["torch"] = lambda: F.rms_norm(x, (4096,), w, 1e-6)
        if T is not None:
            cand = candidate_ops()["rms_norm"]
            c["py.custom_op"] = lambda: cand(x, w, 1e-6)
    elif op == "layer_norm":
        x, w, b = args
        c["tachyon"] = lambda: T.layer_norm(x, w, b, 1e-5)
        c["tachyon.raw"] = lambda: ops.layer_norm(x, w, b, 1e-5)
        c["torch"] = lambda: F.layer_norm(x, (4096,), w, b, 1e-5)
    elif op == "softmax":
        (x,) = args
        c["tachyon"] = lambda: T.softmax(x, -1)
        c["tachyon.raw"] = lambda: ops.softmax(x, False)
        c["torch"] = lambda: torch.softmax(x, -1)
    elif op == "cross_entropy":
        lg, tg = args
        c["tachyon"] = lambda: T.cross_entropy(lg, tg)
        c["tachyon.raw"] = lambda: ops.cross_entropy(lg, tg, 2, -100, 0.0, False, 1.0)
        c["torch"] = lambda: F.cross_entropy(lg, tg)
    elif op == "silu":
        (x,) = args
        c["tachyon"] = lambda: T.silu(x)
        c["tachyon.raw"] = lambda: ops.silu(x)
        c["torch"] = lambda: F.silu(x)
        if T is not None:
            cand = candidate_ops()["silu"]
            c["py.custom_op"] = lambda: cand(x)
    elif op == "gelu":
        (x,) = args
        c["tachyon"] = lambda: T.gelu(x)
        c["tachyon.raw"] = lambda: ops.gelu(x)
        c["torch"] = lambda: F.gelu(x, approximate="tanh")
    elif op == "swiglu":
        gt, up = args
        c["tachyon"] = lambda: T.swiglu(gt, up)
        c["tachyon.raw"] = lambda: ops.swiglu(gt, up)
        c["torch"] = lambda: F.silu(gt) * up
    elif op == "linear":
        x, w, b = args
        c["tachyon"] = lambda: T.linear(x, w, b)
        c["tachyon.raw"] = lambda: ops.gemm(x, w, b, None, 1.0, 0.0, 0, False, None)
        c["torch"] = lambda: F.linear(x, w, b)
    return c


def time_host(fn, batches, calls, warmup):
    """(host us per call, wall us per call): medians over batches of back-to-back calls."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    host, wall = [], []
    for _ in range(batches):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        host.append((t1 - t0) / calls)
        wall.append((t2 - t0) / calls)
    return statistics.median(host) * 1e6, statistics.median(wall) * 1e6


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="Host cost per call: tachyon's functional call, its raw torch.ops "
                                 "operator and PyTorch's equivalent, under no_grad and with autograd recording.",
                                 epilog="ops: " + ", ".join(OPS))
    ap.add_argument("--ops", default="", help="comma list of ops (default: all)")
    ap.add_argument("--modes", default="no_grad,autograd", help="no_grad, autograd or both (default both)")
    ap.add_argument("--batches", type=int, default=50, help="timed batches (median; default 50)")
    ap.add_argument("--calls", type=int, default=100, help="calls per batch (default 100)")
    ap.add_argument("--warmup", type=int, default=200, help="untimed calls first (default 200)")
    ap.add_argument("--results", default=str(REPO / "bench" / "results"), help="JSON-lines directory")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    ops = [o.strip() for o in args.ops.split(",") if o.strip()] or list(OPS)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [o for o in ops if o not in OPS] + [m for m in modes if m not in MODES]
    if bad:
        print(f"bench_overhead: unknown {bad}; ops are {', '.join(OPS)}, modes {', '.join(MODES)}", file=sys.stderr)
        return 2
    import torch
    if not torch.cuda.is_available():
        print("bench_overhead: no CUDA device", file=sys.stderr)
        return 2
    try:
        T = import_tachyon()
    except Exception as e:  # noqa: BLE001 (torch rows and floors still run)
        T = None
        print(f"[tachyon] import failed: {short(e)}")

    name = torch.cuda.get_device_name(0)
    meta = {"gpu": name, "torch": torch.__version__, "commit": commit_id(),
            "run": datetime.datetime.now().isoformat(timespec="seconds")}
    path = pathlib.Path(args.results) / f"{gpu_tag(name)}-{datetime.date.today().isoformat()}-python-overhead.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = []

    def emit(row):
        row = {**row, **meta}
        rows.append(row)
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")
        if row["error"]:
            print(f"{row['op']:14} {row['mode']:9} {row['impl']:12} n/a ({row['error']})")
        else:
            ratio = f"{row['ratio_to_torch']:6.2f} x torch" if row.get("ratio_to_torch") else ""
            print(f"{row['op']:14} {row['mode']:9} {row['impl']:12} host {row['host_us_per_call']:7.2f} us   "
                  f"wall {row['wall_us_per_call']:7.2f} us   {ratio}")

    print(f"{name}; torch {torch.__version__}; commit {meta['commit']}; {args.batches} batches x {args.calls} "
          f"calls, median")
    timing = (args.batches, args.calls, args.warmup)

    # Floors
    x = torch.randn(4, 4096, device="cuda", dtype=torch.bfloat16)
    floors = {"torch.empty(1)": lambda: torch.empty(1, device="cuda"),
              "cuda._sleep(0)": lambda: torch.cuda._sleep(0),
              "torch.add(x,x)": lambda: torch.add(x, x)}
    with torch.no_grad():
        for impl, fn in floors.items():
            try:
                h, w = time_host(fn, *timing)
                emit({"op": "floor", "impl": impl, "mode": "no_grad", "shape": "4x4096", "dtype": "bf16",
                      "host_us_per_call": round(h, 3), "wall_us_per_call": round(w, 3), "ratio_to_torch": None,
                      "error": None})
            except Exception as e:  # noqa: BLE001
                emit({"op": "floor", "impl": impl, "mode": "no_grad", "shape": "4x4096", "dtype": "bf16",
                      "host_us_per_call": None, "wall_us_per_call": None, "ratio_to_torch": None, "error": short(e)})

    raw_names = {"rms_norm": "rms_norm", "layer_norm": "layer_norm", "softmax": "softmax",
                 "cross_entropy": "cross_entropy", "silu": "silu", "gelu": "gelu", "swiglu": "swiglu",
                 "linear": "gemm"}
    for mode in modes:
        print(f"\n== {mode}")
        for op in ops:
            a, shape, dtype = inputs(op, mode)
            cs = callers(op, T, a)
            res = {}
            for impl in ("torch", "tachyon", "tachyon.raw", "py.custom_op"):
                if impl not in cs and impl == "py.custom_op":
                    continue
                err, h, w = None, None, None
                if T is None and impl != "torch":
                    err = "tachyon not importable"
                else:
                    try:
                        ctx = torch.no_grad() if mode == "no_grad" else torch.enable_grad()
                        with ctx:
                            h, w = time_host(cs[impl], *timing)
                    except Exception as e:  # noqa: BLE001 (a schema that differs: say so and go on)
                        err = short(e)
                        if impl == "tachyon.raw":
                            err += " | schema: " + raw_schema(raw_names[op])
                        try:
                            torch.cuda.synchronize()
                        except Exception:  # noqa: BLE001
                            pass
                res[impl] = h
                base = res.get("torch")
                emit({"op": op, "impl": impl, "mode": mode, "shape": shape, "dtype": dtype,
                      "host_us_per_call": None if h is None else round(h, 3),
                      "wall_us_per_call": None if w is None else round(w, 3),
                      "ratio_to_torch": round(h / base, 3) if (h is not None and base and impl != "torch") else None,
                      "error": err})
            del a, cs
            torch.cuda.empty_cache()

    # Summary table
    print("\nhost us per call (ratio to torch)")
    print(f"{'op':14} {'mode':9} {'torch':>10} {'tachyon':>16} {'tachyon.raw':>16}")
    for mode in modes:
        for op in ops:
            cells = {r["impl"]: r for r in rows if r["op"] == op and r["mode"] == mode}

            def cell(impl, w=16):
                r = cells.get(impl)
                if r is None or r["host_us_per_call"] is None:
                    return f"{'n/a':>{w}}"
                s = f"{r['host_us_per_call']:.2f}"
                if r.get("ratio_to_torch"):
                    s += f" ({r['ratio_to_torch']:.2f})"
                return f"{s:>{w}}"
            print(f"{op:14} {mode:9} {cell('torch', 10)} {cell('tachyon')} {cell('tachyon.raw')}")
    for r in rows:
        if r["op"] == "floor" and r["host_us_per_call"] is not None:
            print(f"floor {r['impl']:16} {r['host_us_per_call']:.2f} us")
    print(f"\nJSON lines appended to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

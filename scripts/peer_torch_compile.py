#!/usr/bin/env python3
"""torch.compile's RMSNorm forward measured on this GPU, beside the copy bandwidth of the same
process, so that tachyon-bench's figures can be compared in the same session instead of with
../shared/baselines (another run, another copy figure).

    python3 scripts/peer_torch_compile.py [--m 16384] [--n 4096,8192,16384,32768] [--dtype bf16,f32]

Prints one line per shape: ms, GB/s (read x + write y + the weight once, as targets.md counts)
and the ratio to the copy bandwidth. Timing: triton.testing.do_bench (L2 flushed before each
sample), median, as the baselines were taken.
"""
import argparse

import torch
import triton.testing


def rms_norm(x, w, eps: float = 1e-6):
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (y * w.float()).to(x.dtype)


def median_ms(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=16384)
    ap.add_argument("--n", default="4096,8192,16384,32768")
    ap.add_argument("--dtype", default="bf16,f32")
    ap.add_argument("--calls", type=int, default=0,
                    help="only call each compiled kernel this many times, untimed (for a profiler such as ncu)")
    a = ap.parse_args()
    dtypes = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}

    if not a.calls:
        src = torch.empty(1 << 28, dtype=torch.float32, device="cuda")  # 1 GiB
        dst = torch.empty_like(src)
        copy_gbps = 2 * src.numel() * 4 / (median_ms(lambda: dst.copy_(src)) * 1e-3) / 1e9
        print(f"device-to-device copy (1 GiB, read+write): {copy_gbps:.0f} GB/s")
        del src, dst

    # Static shapes: after a second shape torch.compile would otherwise recompile a dynamic-shape
    # kernel (a looped reduction), measured 25-40 % slower at 8192 and up than the static one.
    fn = torch.compile(rms_norm, dynamic=False)
    for name in a.dtype.split(","):
        dt = dtypes[name]
        for n in map(int, a.n.split(",")):
            x = torch.randn(a.m, n, dtype=dt, device="cuda")
            w = torch.randn(n, dtype=dt, device="cuda")
            fn(x, w)  # compile
            if a.calls:
                for _ in range(a.calls):
                    fn(x, w)
                torch.cuda.synchronize()
                continue
            ms = median_ms(lambda: fn(x, w))
            gbps = (2 * x.numel() + n) * x.element_size() / (ms * 1e-3) / 1e9
            print(f"torch.compile rms_norm_fwd {name:5} {a.m}x{n:<8} {ms * 1e3:9.1f} us {gbps:8.1f} GB/s "
                  f"{gbps / copy_gbps:6.3f} x copy")


if __name__ == "__main__":
    main()

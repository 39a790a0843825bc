"""The fused fp32 residual stream's RMSNorm backward, two ways in one process (CUDA-graph replay): bf16 dy read as it
is (the kernels' kNarrowDy build) against dy converted to fp32 first, as the Python layer did before. Bytes an element:
14 (h, dresidual and dx in fp32, dy in bf16). Run on a GPU with the package importable."""
import torch

import tachyon  # noqa: F401  (registers torch.ops.tachyon)

SHAPES = [(32768, 1024), (32768, 2048), (32768, 4096), (32768, 8192), (16384, 16384), (4096, 65536),
          (2048, 131072), (1024, 262144)]


def device_us(fn, iters=50):
    """Microseconds a call, from one CUDA graph of `iters` calls (no host time in the figure)."""
    for _ in range(5):
        fn()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(iters):
            fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000 / iters


def main():
    op = torch.ops.tachyon.rms_norm_backward
    for m, n in SHAPES:
        h = torch.randn(m, n, device="cuda")
        dres = torch.randn(m, n, device="cuda")
        dy = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, device="cuda")
        rstd = torch.rand(m, device="cuda") + 0.5
        as_is = device_us(lambda: op(dy, h, w, rstd, dres, 0.0, True))
        converted = device_us(lambda: op(dy.to(torch.float32), h, w, rstd, dres, 0.0, True))
        gb = m * n * 14 / 1e9
        print(f"{m}x{n}: dy as is {as_is:8.1f} us ({gb / as_is * 1e6:6.0f} GB/s)  converted first {converted:8.1f} us"
              f"  speedup {converted / as_is:.2f}x")


if __name__ == "__main__":
    main()

import pytest
import torch

HAS_GPU = torch.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU: GPU tests need an H100/H200 (run scripts/gpu-check.sh there)")


def pytest_report_header(config):
    return f"torch {torch.__version__}, CUDA GPU: {torch.cuda.get_device_name(0) if HAS_GPU else 'none (GPU tests skip)'}"

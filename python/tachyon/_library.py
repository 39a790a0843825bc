"""Loads the compiled operator library (libtachyon_torch.so), which registers torch.ops.tachyon.*.

The library is built ahead of time by `pip install .` (scikit-build-core driving the project's
CMake build) and installed next to this file; TACHYON_TORCH_LIBRARY may name another build
(for development against a CMake build tree). No compiler is needed at import time.
"""
import os

import torch

_NAME = "libtachyon_torch.so"


def _path() -> str:
    override = os.environ.get("TACHYON_TORCH_LIBRARY")
    if override:
        return override
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), _NAME)


def load() -> str:
    path = _path()
    if not os.path.exists(path):
        raise ImportError(
            f"tachyon: the operator library {path} is missing; install the package with `pip install .` "
            "(or point TACHYON_TORCH_LIBRARY at a built libtachyon_torch.so)"
        )
    torch.ops.load_library(path)
    return path

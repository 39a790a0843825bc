"""Loads the compiled extension tachyon._C: it registers torch.ops.tachyon.* (schemas, CUDA and
autograd kernels) and holds the functional API's fast entry points.

The extension is built ahead of time by `pip install .` (scikit-build-core driving the project's
CMake build) and installed next to this file. TACHYON_TORCH_LIBRARY may name another build of it
(development against a CMake build tree). No compiler is needed at import time.
"""
import importlib.util
import os
import sys

import torch  # noqa: F401  (torch's libraries must be loaded first)


def load():
    override = os.environ.get("TACHYON_TORCH_LIBRARY")
    if not override:
        try:
            from . import _C
        except ImportError as e:
            raise ImportError(
                f"tachyon: the compiled extension tachyon._C is missing or does not load ({e}); install the package "
                "with `pip install .`, or point TACHYON_TORCH_LIBRARY at a built _C*.so"
            ) from e
        return _C
    spec = importlib.util.spec_from_file_location("tachyon._C", override)
    if spec is None or not os.path.exists(override):
        raise ImportError(f"tachyon: TACHYON_TORCH_LIBRARY={override} does not name a built extension")
    module = importlib.util.module_from_spec(spec)
    sys.modules["tachyon._C"] = module
    spec.loader.exec_module(module)
    return module

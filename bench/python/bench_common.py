"""What the Python benchmarks share: error summaries, the GPU's short name, the commit, the import."""
import os
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def short(e, n=160):
    s = f"{type(e).__name__}: {e}".strip().splitlines()
    s = s[0] if s else type(e).__name__
    return s if len(s) <= n else s[: n - 3] + "..."


def gpu_tag(name):
    m = re.search(r"(GH200|GB200|H100|H200|H800|H20|B200|B100|A100|A10G|L40S|L4)", name)
    return m.group(1) if m else (re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_") or "gpu")


def commit_id():
    if os.environ.get("TACHYON_COMMIT"):
        return os.environ["TACHYON_COMMIT"]
    try:  # read-only
        r = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True, timeout=10)
        return r.stdout.strip() or "unknown"
    except Exception:
        return "unknown"


def import_tachyon():
    """The installed package, else the source tree's (with TACHYON_TORCH_LIBRARY naming a build)."""
    try:
        import tachyon
    except ImportError:
        sys.path.insert(0, str(REPO / "python"))
        import tachyon
    return tachyon

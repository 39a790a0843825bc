#!/usr/bin/env bash
# Whether a change moves any kernel's machine code, without a GPU: compiles CUDA sources at a
# base commit and in the working tree to sm_90a cubins (nvcc only, no line info) and compares
# each kernel's .text section byte for byte (anonymous-namespace hashes, which follow the file,
# normalised). A refactor that leaves every kernel identical cannot change what runs; kernels
# only on one side are listed (built or dropped instantiations).
#
#   scripts/sass-diff.sh [BASE=HEAD] src/norm/norm_fwd.cu [src/norm/norm_bwd.cu ...]
set -euo pipefail
cd "$(dirname "$0")/.."
base=HEAD
if [ $# -gt 0 ] && ! [[ $1 == *.cu ]]; then base=$1; shift; fi
[ $# -gt 0 ] || { echo "usage: $0 [BASE] FILE.cu..."; exit 2; }
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/base"
git archive "$base" | tar x -C "$work/base"
cubin() {  # tree file out
  "$NVCC" -I"$1/include" -I"$1/src" -O3 -DNDEBUG -arch=sm_90a -cubin --expt-relaxed-constexpr -std=c++17 \
    "$1/$2" -o "$3"
}
status=0
for f in "$@"; do
  out="$work/$(basename "$f" .cu)"
  cubin "$work/base" "$f" "$out.base.cubin" &
  cubin "$PWD" "$f" "$out.head.cubin"
  wait
  python3 - "$f" "$out.base.cubin" "$out.head.cubin" <<'EOF' || status=1
import re, struct, sys
def kernels(path):
    d = open(path, "rb").read()
    shoff = struct.unpack_from("<Q", d, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize) for i in range(shnum)]
    names = hdrs[shstrndx][4]
    out = {}
    for h in hdrs:
        name = d[names + h[0]:d.index(b"\0", names + h[0])].decode()
        if name.startswith(".text."):
            out[re.sub(r"_GLOBAL__N__[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]+", "ANON", name[6:])] = d[h[4]:h[4] + h[5]]
    return out
f, a, b = sys.argv[1], kernels(sys.argv[2]), kernels(sys.argv[3])
changed = sorted(k for k in a.keys() & b.keys() if a[k] != b[k])
print(f"{f}: {len(a)} kernels at base, {len(b)} now; {len(changed)} changed, "
      f"{len(a.keys() - b.keys())} only at base, {len(b.keys() - a.keys())} only now")
for k in changed: print("  changed:", k)
for k in sorted(a.keys() - b.keys()): print("  only at base:", k)
for k in sorted(b.keys() - a.keys()): print("  only now:", k)
sys.exit(1 if changed else 0)
EOF
done
exit $status

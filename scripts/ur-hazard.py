#!/usr/bin/env python3
"""Uniform registers across diverged calls, from SASS (no GPU).

A uniform register (URn) is one per warp. Where a warp diverges at a branch and one side calls a
function that writes URn (a `__noinline__` callee: load_masked, store_masked), the other side's
threads still read the URn value set before the branch: if the hardware runs the calling side
first, they read the callee's value (norm_bwd's framed 4-chunk kernels once stored their partial
row through such a clobbered pointer: emit_partial). This lists, per kernel, each diverging
branch (on a predicate not set from uniform values alone) with a callee-written URn read on its
other side before being set again there. Memory descriptors (desc[URn]) are not counted: the
callees' uniform writes are copies of the global-memory descriptor.

  scripts/ur-hazard.py build/src/CMakeFiles/tachyon.dir/norm/norm_bwd.cu.o [...]

Static: a flagged branch may never split a warp at run time (the aligned typed norm backward's
16-bit 4-chunk kernels: their partial rows are whole aligned chunks, so the masked arm never
runs); a read counts unless the same side sets the register at a lower address first. It reads
cuobjdump's listing: the instruction grammar is its only model.
"""
import re
import shutil
import subprocess
import sys

CUOBJDUMP = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
INSN = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
UR = re.compile(r"\bUR(\d+)\b")
NO_DEST = ("ST", "RED", "ATOM", "BRA", "BRX", "BSSY", "BSYNC", "BREAK", "CALL", "RET", "EXIT", "BAR", "WARPSYNC",
           "NOP", "DEPBAR", "MEMBAR", "ERRBAR", "CCTL", "UCGABAR", "SYNCS", "YIELD")


def kernels(obj):
    out = subprocess.run([CUOBJDUMP, "-sass", obj], capture_output=True, text=True, check=True).stdout
    name, code = None, {}
    for line in out.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            name = m.group(1)
            code[name] = []
            continue
        m = INSN.match(line)
        if m and name:
            code[name].append((int(m.group(1), 16), m.group(2)))
    return code


def split(text):
    """(guard predicate or '', opcode, operand text)"""
    m = re.match(r"(@!?U?P[T\d]+\s+)?([A-Z0-9_.]+)\s*(.*)", text)
    return (m.group(1) or "").strip(), m.group(2), m.group(3)


def ur_defs(text):
    _, op, rest = split(text)
    if op.startswith(NO_DEST) or "SETP" in op:
        return set()
    width = 4 if ".128" in op else 2 if ".64" in op else 1  # ULDC.64 URn sets URn and URn+1
    return {str(int(n) + i) for n in UR.findall(rest.split(",")[0]) for i in range(width)}


def ur_reads(text):
    """URn read as a value. A memory descriptor (desc[URn]) is left out: the callees' uniform
    writes are copies of the global-memory descriptor, the value such a read expects."""
    _, op, rest = split(text)
    rest = re.sub(r"desc\[UR\d+\]", "", rest)
    first, _, others = rest.partition(",")
    reads = set(UR.findall(others))
    if op.startswith(NO_DEST) or "SETP" in op:
        reads |= set(UR.findall(first))
    return reads


def analyse(insns):
    at = {a: i for i, (a, _) in enumerate(insns)}
    targets = sorted({int(m.group(1), 16) for _, t in insns if (m := re.search(r"CALL\.REL\.NOINC (0x[0-9a-f]+)", t))})
    if not targets:
        return []
    body_end = targets[0]
    bounds = targets + [insns[-1][0] + 16]
    clobbers = {}
    for t, end in zip(bounds, bounds[1:]):
        clobbers[t] = set().union(*(ur_defs(x) for a, x in insns if t <= a < end))

    def call_clobbers(text):
        m = re.search(r"CALL\.REL\.NOINC (0x[0-9a-f]+)", text)
        return clobbers.get(int(m.group(1), 16), set()) if m else set()

    def pred_dests(text):
        _, op, rest = split(text)
        return set(re.findall(r"^\s*(P\d)\b", rest)) if ("SETP" in op or op.startswith(("PLOP3", "R2P"))) else set()

    def walk(start, lo, hi, known):
        """Addresses a side reaches from `start` inside [lo, hi); whether it leaves other than at hi.
        `known`: predicate values the side's branch implies (later branches on them resolve)."""
        seen, todo, leaks = set(), [(start, dict(known))], False
        while todo:
            a, kn = todo.pop()
            while True:
                if a == hi:
                    break
                if not (lo <= a < hi) or a not in at or a >= body_end:
                    leaks = True
                    break
                if a in seen:
                    break
                seen.add(a)
                text = insns[at[a]][1]
                guard, op, rest = split(text)
                for pd in pred_dests(text):
                    kn.pop(pd, None)
                if op.startswith("EXIT") and not guard:
                    break
                if op.startswith("BRA"):
                    t = int(re.search(r"(0x[0-9a-f]+)", rest).group(1), 16)
                    g = re.match(r"@(!?)(U?P[T\d]+)", guard) if guard else None
                    if g and g.group(2) in kn:
                        taken = kn[g.group(2)] != bool(g.group(1))
                        if taken:
                            a = t
                            continue
                    elif g:
                        todo.append((t, dict(kn)))
                    else:
                        a = t
                        continue
                a += 16
        return seen, leaks

    # Predicates set from uniform values only (uniform registers, constants, other such
    # predicates): a branch on one does not split the warp. By address order, an approximation.
    uniform_at = {}
    uniform = set()
    for a, text in insns:
        if a >= body_end:
            break
        uniform_at[a] = set(uniform)
        for pd in pred_dests(text):
            _, _, rest = split(text)
            srcs = rest.split(",")[2:] if rest.count(",") >= 2 else []
            regs = [x for x in re.findall(r"\b(R\d+|P\d)\b", ",".join(srcs))]
            if all(x in uniform for x in regs if x.startswith("P")) and not any(x.startswith("R") for x in regs):
                uniform.add(pd)
            else:
                uniform.discard(pd)

    found = []
    regions = []  # (BSSY address, reconvergence address)
    for a, text in insns:
        if a >= body_end:
            break
        m = re.search(r"BSSY B\d+, (0x[0-9a-f]+)", text)
        if m:
            regions.append((a, int(m.group(1), 16)))
    for a, text in insns:
        if a >= body_end:
            break
        guard, op, rest = split(text)
        g = re.match(r"@(!?)(P[T\d]+)", guard) if guard else None
        if not (op.startswith("BRA") and g) or g.group(2) in uniform_at.get(a, set()):
            continue
        target = int(re.search(r"(0x[0-9a-f]+)", rest).group(1), 16)
        pred, neg = g.group(2), bool(g.group(1))
        # The innermost region both sides stay in (a side that breaks out of an inner region
        # reconverges at an outer one).
        for lo, hi in sorted((r for r in regions if r[0] <= a < r[1]), key=lambda r: r[1] - r[0]):
            taken, leak_t = walk(target, lo, hi, {pred: not neg})
            fall, leak_f = walk(a + 16, lo, hi, {pred: neg})
            if not (leak_t or leak_f):
                break
        else:
            continue
        for one, other in ((taken, fall), (fall, taken)):
            clobbered = set().union(*(call_clobbers(insns[at[x]][1]) for x in one - other))
            if not clobbered:
                continue
            for x in sorted(other - one):
                for r in ur_reads(insns[at[x]][1]) & clobbered:
                    set_before = any(y < x and r in ur_defs(insns[at[y]][1]) for y in other - one)
                    if not set_before:
                        found.append((a, x, r))
    return found


def main():
    status = 0
    for obj in sys.argv[1:]:
        for name, insns in kernels(obj).items():
            hits = analyse(insns)
            if not hits:
                continue
            status = 1
            pretty = subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()
            spots = ", ".join(f"branch {b:#x}: UR{r} read at {x:#x}" for b, x, r in sorted(set(hits))[:3])
            print(f"{obj.rsplit('/', 1)[-1]}: {pretty[:150]}\n    {spots}{' ...' if len(set(hits)) > 3 else ''}")
    return status


if __name__ == "__main__":
    sys.exit(main())

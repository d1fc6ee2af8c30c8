#!/usr/bin/env python3
"""Checks that #include lines point down the layers of ARCHITECTURE.md, never up or sideways.

    programs  tools, bench -> every library
              tests -> every library, bench         fuzz -> every library, tests
    front     broker -> rpc -> proto, base           clients -> proto, base
              server -> rpc, scheduler, match, cpu, gpu
    engines   scheduler -> cost_model -> index       match -> gpu -> index       cpu -> index
    builders  index_builder -> workload -> index
    core      index -> filter -> base

A folder may include its own headers and those of the folders listed for it below: everything its
arrows reach. The program folders (tools/, bench/, tests/, fuzz/) sit on top and may use every
library folder. Unit tests (*_test.cc, *_test_util.h) are not part of their folder's library: they
may use every library folder (a GPU test runs the CPU engine as its oracle) and the shared helpers
in tests/. Exits 1 naming each include that breaks the rule.

    .ci/check-layers.py [ROOT]
"""
import os
import re
import subprocess
import sys

# What each library folder may include, besides itself. Keep in step with ARCHITECTURE.md.
ALLOWED = {
    "base": set(),
    "filter": {"base"},
    "index": {"filter", "base"},
    "workload": {"index", "filter", "base"},
    "cpu": {"index", "filter", "base"},
    "gpu": {"index", "filter", "base"},
    "cost_model": {"index", "filter", "base"},
    "scheduler": {"cost_model", "index", "filter", "base"},
    "match": {"gpu", "index", "filter", "base"},
    "index_builder": {"workload", "index", "filter", "base"},
    "live": {"index_builder", "workload", "cpu", "index", "filter", "base"},
    "proto": set(),
    "rpc": {"base", "proto"},
    "server": {"rpc", "live", "index_builder", "workload", "scheduler", "cost_model", "match", "cpu", "gpu", "index", "filter", "base", "proto"},
    "broker": {"rpc", "base", "proto"},
    "clients": {"proto", "base"},
}
LIBRARIES = set(ALLOWED)
# Program folders: on top of every library. tests/ also holds the end-to-end fixtures that
# benchmarks and fuzzers share.
PROGRAMS = {
    "tools": LIBRARIES,
    "bench": LIBRARIES,
    "tests": LIBRARIES | {"bench"},
    "fuzz": LIBRARIES | {"tests"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
PROGRAM_ENTRY = re.compile(r"^(int main\(|extern \"C\" int LLVMFuzzerTestOneInput)", re.M)


def folder_of(header):
    top = header.split("/", 1)[0]
    if top == "tandem":  # generated from proto/tandem/v1/*.proto
        return "proto"
    return top if top in ALLOWED or top in PROGRAMS else None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    files = subprocess.check_output(
        ["git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard"], text=True
    ).split()
    errors = []
    for path in files:
        if not path.endswith((".h", ".cc", ".cu", ".cuh")):
            continue
        folder = path.split("/", 1)[0]
        if folder in PROGRAMS:
            allowed = {folder} | PROGRAMS[folder]
        elif folder in ALLOWED:
            allowed = {folder} | ALLOWED[folder]
            name = os.path.basename(path)
            if name.endswith("_test.cc") or name.endswith("_test_util.h"):
                allowed |= LIBRARIES | {"tests"}
        else:
            continue
        if not os.path.exists(os.path.join(root, path)):
            continue  # deleted in the working tree
        with open(os.path.join(root, path), encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = folder_of(m.group(1))
                if target is not None and target not in allowed:
                    errors.append(f"{path}:{number}: {folder}/ may not include {m.group(1)}")
        if folder in ALLOWED:
            with open(os.path.join(root, path), encoding="utf-8") as f:
                if PROGRAM_ENTRY.search(f.read()):
                    errors.append(f"{path}: a main() in a library folder; programs live in tools/")
    for e in errors:
        print(e)
    if errors:
        print(f"check-layers: {len(errors)} error(s): includes pointing the wrong way or programs out of place")
        return 1
    print(f"check-layers: includes of {len(files)} files point down the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Checks that #include lines point down the layers of ARCHITECTURE.md, never up or sideways.

    broker -> server -> scheduler -> {cpu, gpu, cost_model} -> index -> base

A folder may include its own headers and those of the folders listed for it below. Tests
(*_test.cc), programs (*_main.cc) and fuzzers (*_fuzzer.cc) are not part of any library: they may
use every library folder (a GPU test runs the CPU engine as its oracle), tests also the shared
helpers in tests/, and fuzzers those in tests/ and fuzz/. Exits 1 naming each include that
breaks the rule.

    .ci/check-layers.py [ROOT]
"""
import os
import re
import subprocess
import sys

# What each folder may include, besides itself. Keep in step with ARCHITECTURE.md.
ALLOWED = {
    "base": set(),
    "tools": {"base"},
    "index": {"base"},
    "workload": {"index", "base"},
    "cpu": {"index", "base"},
    "gpu": {"index", "base"},
    "cost_model": {"index", "base"},
    "scheduler": {"cost_model", "index", "base"},
    "match": {"gpu", "index", "base"},
    "index_builder": {"workload", "index", "base"},
    "proto": set(),
    "server": {"scheduler", "cost_model", "match", "cpu", "gpu", "index", "base", "proto"},
    "broker": {"server", "base", "proto"},
    "clients": {"proto", "base", "tools"},
    "bench": {"broker", "server", "match", "scheduler", "cost_model", "cpu", "gpu", "index_builder", "workload",
              "index", "tools", "base", "proto"},
    "tests": {"broker", "server", "match", "scheduler", "cost_model", "cpu", "gpu", "index_builder", "workload",
              "index", "tools", "base", "proto", "clients", "bench"},
    "fuzz": {"broker", "server", "match", "scheduler", "cost_model", "cpu", "gpu", "index_builder", "workload",
             "index", "tools", "base", "proto", "clients", "tests"},
}
LIBRARIES = set(ALLOWED) - {"tests", "bench", "fuzz"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(header):
    top = header.split("/", 1)[0]
    if top == "tandem":  # generated from proto/tandem/v1/*.proto
        return "proto"
    return top if top in ALLOWED else None


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
        if folder not in ALLOWED:
            continue
        allowed = {folder} | ALLOWED[folder]
        name = os.path.basename(path)
        if name.endswith("_test.cc") or name.endswith("_test_util.h"):
            allowed |= LIBRARIES | {"tests"}
        if name.endswith("_main.cc"):
            allowed |= LIBRARIES
        if name.endswith("_fuzzer.cc"):
            allowed |= LIBRARIES | {"tests", "fuzz"}
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
    for e in errors:
        print(e)
    if errors:
        print(f"check-layers: {len(errors)} include(s) point the wrong way (see ALLOWED above)")
        return 1
    print(f"check-layers: includes of {len(files)} files point down the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Checks deploy/grafana/tandem-node.json against what tandem-server exports: the dashboard is valid
JSON with unique panel ids, and every metric its queries name (with the _bucket, _sum and _count
series of histograms) is one the metric headers document (server/*_metrics.h) and a running
CPU-only server exports, except those only a GPU node has: the GPU batch series
(server/batch_metrics.h) and the hybrid scheduler's (server/scheduler_metrics.h). Every label a
query selects on is one that metric carries.

    /usr/bin/python3 tests/grafana_dashboard_test.py --server-binary build/server/tandem-server \\
        --index-binary build/index_builder/tandem-index
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "clients" / "python"))

import tandem_testing  # noqa: E402  (standard library only)

METRIC = re.compile(r"\b((?:tandem|process)_[a-z0-9_]+)\b")
SELECTOR = re.compile(r"\b((?:tandem|process)_[a-z0-9_]+)\{([^}]*)\}")
LABEL = re.compile(r"([a-z_]+)\s*(?:=~|!=|!~|=)")
SUFFIXES = ("_bucket", "_sum", "_count")


def documented() -> tuple[set[str], set[str]]:
    """Names the metric headers list, and those of them only a GPU node exports."""
    names, gpu_only = set(), set()
    for header in sorted((ROOT / "server").glob("*_metrics.h")):
        found = set(re.findall(r"^//\s+((?:tandem|process)_[a-z0-9_]+)", header.read_text(), re.M))
        names |= found
        if header.name in ("batch_metrics.h", "scheduler_metrics.h"):
            gpu_only |= found
    return names, gpu_only


def scrape_labels(text: str) -> dict[str, set[str]]:
    """Sample name -> the label names it carries, from an exposition."""
    series: dict[str, set[str]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?", line)
        labels = set(re.findall(r'([a-zA-Z_]+)="', match.group(3) or ""))
        series.setdefault(match.group(1), set()).update(labels)
    return series


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server-binary", required=True)
    parser.add_argument("--index-binary", required=True)
    args = parser.parse_args()
    dashboard = json.loads((ROOT / "deploy" / "grafana" / "tandem-node.json").read_text())
    problems = []
    ids = [p["id"] for p in dashboard["panels"]]
    if len(ids) != len(set(ids)):
        problems.append(f"panel ids repeat: {ids}")
    names, gpu_only = documented()
    with tempfile.TemporaryDirectory(prefix="tandem-grafana-test-") as tmp:
        index = tandem_testing.build_index(args.index_binary, ["black bear", "brown bear"], tmp)
        with tandem_testing.LocalServer(args.server_binary, index,
                                        extra_args=["--gpu", "off"]) as server:
            metrics = server.metrics_address
            text = urllib.request.urlopen(f"http://{metrics}/metrics", timeout=30).read().decode()
    exported = scrape_labels(text)
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            expr = target["expr"]
            for name in METRIC.findall(expr):
                base = next((name[: -len(s)] for s in SUFFIXES if name.endswith(s)), name)
                where = f"panel '{panel['title']}': {name}"
                if base not in names and name not in names:
                    problems.append(f"{where} is not documented in server/*_metrics.h")
                elif base not in gpu_only and name not in gpu_only and name not in exported:
                    problems.append(f"{where} is not exported by a running server")
            for name, selector in SELECTOR.findall(expr):
                for label in LABEL.findall(selector):
                    if label != "instance" and name in exported and label not in exported[name]:
                        problems.append(f"panel '{panel['title']}': {name} has no label {label}")
    for problem in problems:
        print(f"FAIL: {problem}")
    if not problems:
        print(f"ok: {len(dashboard['panels'])} panels, every metric exported or GPU-only")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

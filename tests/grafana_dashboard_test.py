#!/usr/bin/python3
"""Checks the Grafana dashboards in deploy/grafana (tandem-node.json, tandem-broker.json) against
what Tandem exports: each dashboard is valid JSON with unique panel ids, and every metric its
queries name (with the _bucket, _sum and _count series of histograms) is one the metric headers
document (server/*_metrics.h, rpc/process_metrics.h, broker/*_metrics.h). A node's metric must be
exported by a running CPU-only server, except those only a GPU node has: the GPU batch series (server/batch_metrics.h)
and the hybrid scheduler's (server/scheduler_metrics.h). Every label a query selects on is one that
metric carries: in the server's scrape for a node's metric, in the header's `name{labels}` line for
the broker's. Series of other exporters (DCGM_FI_DEV_GPU_UTIL) are not checked.

    /usr/bin/python3 tests/grafana_dashboard_test.py --server-binary build/tools/tandem-server \\
        --index-binary build/tools/tandem-index
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "clients" / "python"))

import problem_report  # noqa: E402
import tandem_testing  # noqa: E402  (standard library only)

METRIC = re.compile(r"\b((?:tandem|process)_[a-z0-9_]+)\b")
SELECTOR = re.compile(r"\b((?:tandem|process)_[a-z0-9_]+)\{([^}]*)\}")
LABEL = re.compile(r"([a-z_]+)\s*(?:=~|!=|!~|=)")
SUFFIXES = ("_bucket", "_sum", "_count")


def documented() -> tuple[set[str], set[str], dict[str, set[str]]]:
    """Names the node's metric headers list, those of them only a GPU node exports, and the
    broker's names (broker/*_metrics.h) with the labels their header lines give."""
    names, gpu_only, broker = set(), set(), {}
    headers = sorted((ROOT / "server").glob("*_metrics.h")) + [ROOT / "rpc" / "process_metrics.h"]
    for header in headers:
        found = set(re.findall(r"^//\s+((?:tandem|process)_[a-z0-9_]+)", header.read_text(), re.M))
        names |= found
        if header.name in ("batch_metrics.h", "scheduler_metrics.h"):
            gpu_only |= found
    for header in sorted((ROOT / "broker").glob("*_metrics.h")):
        for name, labels in re.findall(r"^//\s+(tandem_[a-z0-9_]+)(?:\{([a-z_,]*)\})?",
                                       header.read_text(), re.M):
            broker.setdefault(name, set()).update(filter(None, labels.split(",")))
    return names, gpu_only, broker


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


def check_dashboard(path: Path, names: set[str], gpu_only: set[str], broker: dict[str, set[str]],
                    exported: dict[str, set[str]]) -> list[str]:
    dashboard = json.loads(path.read_text())
    problems = []
    ids = [p["id"] for p in dashboard["panels"]]
    if len(ids) != len(set(ids)):
        problems.append(f"{path.name}: panel ids repeat: {ids}")
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            expr = target["expr"]
            for name in METRIC.findall(expr):
                base = next((name[: -len(s)] for s in SUFFIXES if name.endswith(s)), name)
                where = f"{path.name}: panel '{panel['title']}': {name}"
                if base in broker and base not in names:
                    continue  # the broker's: documented, labels checked below
                if base not in names and name not in names:
                    problems.append(f"{where} is not documented in server/*_metrics.h, rpc/process_metrics.h or broker/*_metrics.h")
                elif base not in gpu_only and name not in gpu_only and name not in exported:
                    problems.append(f"{where} is not exported by a running server")
            for name, selector in SELECTOR.findall(expr):
                base = next((name[: -len(s)] for s in SUFFIXES if name.endswith(s)), name)
                for label in LABEL.findall(selector):
                    if label == "instance":
                        continue
                    if name in exported and label not in exported[name]:
                        problems.append(f"{path.name}: panel '{panel['title']}': {name} has no label {label}")
                    elif name not in exported and base in broker and label not in broker[base]:
                        problems.append(f"{path.name}: panel '{panel['title']}': {name} has no label {label} "
                                        "(broker/*_metrics.h)")
    print(f"{path.name}: {len(dashboard['panels'])} panels")
    return problems


def main() -> int:
    args = tandem_testing.parse_binaries()
    names, gpu_only, broker = documented()
    with tempfile.TemporaryDirectory(prefix="tandem-grafana-test-") as tmp:
        index = tandem_testing.build_index(args.index_binary, ["black bear", "brown bear"], tmp)
        with tandem_testing.LocalServer(args.server_binary, index,
                                        extra_args=["--gpu", "off"]) as server:
            metrics = server.metrics_address
            text = urllib.request.urlopen(f"http://{metrics}/metrics", timeout=30).read().decode()
    exported = scrape_labels(text)
    problems = []
    for name in ("tandem-node.json", "tandem-broker.json"):
        problems += check_dashboard(ROOT / "deploy" / "grafana" / name, names, gpu_only, broker, exported)
    return problem_report.report(problems, "every metric exported, GPU-only or the broker's, every label carried")


if __name__ == "__main__":
    sys.exit(main())

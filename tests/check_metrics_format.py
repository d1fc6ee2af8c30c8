#!/usr/bin/python3
"""Checks a Prometheus text exposition (0.0.4) read from standard input.

It is parsed with the Prometheus Python client's own parser (Debian's python3-prometheus-client),
then checked the way `promtool check metrics` lints: every family has HELP and TYPE, counters end
in _total, no series is exported twice, histogram buckets are cumulative, end with +Inf and agree
with _count, and no value is NaN where a count is meant. Prints one line per problem and exits 1
when there is any; exits 0 silently otherwise.

    curl -s http://127.0.0.1:9464/metrics | tests/check_metrics_format.py
"""

import math
import re
import sys

from prometheus_client.parser import text_string_to_metric_families

NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")


def check(text):
    problems = []
    declared = {}
    for line in text.splitlines():
        parts = line.split(" ", 3)
        if len(parts) >= 3 and parts[0] == "#" and parts[1] in ("HELP", "TYPE"):
            declared.setdefault(parts[2], set()).add(parts[1])
            if parts[1] == "HELP" and (len(parts) < 4 or not parts[3].strip()):
                problems.append(f"{parts[2]}: empty HELP")
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as error:  # the parser raises ValueError and others on malformed input
        return [f"the exposition does not parse: {error}"]
    if not families:
        problems.append("no metric families")
    seen = set()
    for family in families:
        if not NAME.match(family.name):
            problems.append(f"{family.name}: not a valid metric name")
        exported = family.name + ("_total" if family.type == "counter" else "")
        if {"HELP", "TYPE"} - declared.get(exported, set()) and \
                {"HELP", "TYPE"} - declared.get(family.name, set()):
            problems.append(f"{family.name}: no HELP or TYPE line")
        if family.type == "counter" and not exported.endswith("_total"):
            problems.append(f"{family.name}: a counter's name must end in _total")
        if family.type == "untyped":
            problems.append(f"{family.name}: untyped")
        buckets = {}
        counts = {}
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            if key in seen:
                problems.append(f"{sample.name}{dict(sample.labels)}: exported twice")
            seen.add(key)
            if sample.name.endswith(("_total", "_count", "_bucket")) and math.isnan(sample.value):
                problems.append(f"{sample.name}{dict(sample.labels)}: NaN")
            if family.type == "histogram":
                rest = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "le"))
                if sample.name.endswith("_bucket"):
                    buckets.setdefault(rest, []).append((float(sample.labels["le"]), sample.value))
                elif sample.name.endswith("_count"):
                    counts[rest] = sample.value
        for labels, series in buckets.items():
            bounds = [le for le, _ in series]
            values = [v for _, v in series]
            where = f"{family.name}{dict(labels)}"
            if bounds != sorted(bounds) or not bounds or bounds[-1] != math.inf:
                problems.append(f"{where}: buckets not in order or without +Inf")
            if any(b < a for a, b in zip(values, values[1:])):
                problems.append(f"{where}: buckets not cumulative")
            if labels in counts and values and values[-1] != counts[labels]:
                problems.append(f"{where}: +Inf bucket {values[-1]} != _count {counts[labels]}")
    return problems


def main():
    problems = check(sys.stdin.read())
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

"""What the figure scripts of bench/ share: the command line of those that plot one benchmark's
JSON (the JSON, --png, --machine), reading that JSON, matplotlib drawing to files, and the PNG.

The JSON is tandem-bench-*'s own, or a results file of bench/results/ (results_store.py) holding
one run per machine kind, of which the script plots --machine KIND's, by default the newest.

    args = figures.parse_args(__doc__)
    data, run = figures.read(args)  # run: None for a benchmark's own JSON
"""
import argparse
import json
import sys


def parse_args(doc):
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("json")
    parser.add_argument("--png", required=True)
    parser.add_argument("--machine", metavar="KIND", help="the run of a results file to plot")
    return parser.parse_args()


def read(args):
    """The JSON of args.json, and where it is a results file, the run to plot (else None)."""
    with open(args.json) as f:
        data = json.load(f)
    if "runs" not in data:
        return data, None
    runs = data["runs"]
    kind = args.machine or max(runs, key=lambda k: str(runs[k].get("date", "")))
    return data, runs[kind]


def pyplot(script):
    """matplotlib.pyplot drawing to files, or None once `script` has said that it is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{script}: matplotlib missing (apt install python3-matplotlib); no PNG",
              file=sys.stderr)
        return None
    return plt


def save(fig, png, dpi):
    fig.tight_layout()
    fig.savefig(png, dpi=dpi)

#!/usr/bin/python3
"""The Python client as an installed package: built from a copy of the checkout (clients/python and
proto/, without generated stubs, so the build generates them), installed with pip into a fresh venv
that sees Debian's grpcio and protobuf, and used from another directory against a real
tandem-server. Checks that the module comes from the venv, not the checkout, that the package's
version is the project's, and that a search answers.

    /usr/bin/python3 tests/python_package_test.py --server-binary build/tools/tandem-server \\
        --index-binary build/tools/tandem-index

Exits 77 (ctest SKIP_RETURN_CODE) when venv, pip, setuptools, wheel, grpcio or protobuf is missing.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "clients" / "python"))

import problem_report  # noqa: E402
import tandem_testing  # noqa: E402  (standard library only; not part of the package)

# Run by the venv's interpreter, from a directory outside the checkout.
CLIENT_SNIPPET = """
import importlib.metadata, json, sys
import tandem_client
from tandem_client import TandemClient
with TandemClient(sys.argv[1], timeout=30.0) as client:
    client.wait_until_serving(timeout=60.0)
    result = client.search("bear", mode="or", k=10)
print(json.dumps({
    "file": tandem_client.__file__,
    "version": importlib.metadata.version("tandem-client"),
    "hits": sorted(hit.external_id for hit in result.hits),
}))
"""


def project_version() -> str:
    match = re.search(r"project\(tandem VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    if match is None:
        raise SystemExit("FAIL: no project version in CMakeLists.txt")
    return match.group(1)


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, **kwargs)
    if result.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {result.returncode}:\n"
                         f"{result.stdout}{result.stderr}")
    return result


def main() -> int:
    args = tandem_testing.parse_binaries()
    for module in ("venv", "pip", "setuptools", "wheel", "grpc", "google.protobuf"):
        if importlib.util.find_spec(module) is None:
            print(f"SKIP: {module} is not importable by {sys.executable}")
            return 77

    with tempfile.TemporaryDirectory(prefix="tandem-python-package-") as tmp:
        tmp = Path(tmp)
        source = tmp / "checkout"
        shutil.copytree(ROOT / "proto", source / "proto")
        shutil.copytree(ROOT / "clients" / "python", source / "clients" / "python",
                        ignore=shutil.ignore_patterns("gen", "build", "*.egg-info", "__pycache__"))
        venv = tmp / "venv"
        run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)])
        python = str(venv / "bin" / "python")
        run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
             "--no-index", str(source / "clients" / "python")])

        index = tandem_testing.build_index(
            args.index_binary, ["black bear", "salmon river", "brown bear", "river otter"], tmp)
        elsewhere = tmp / "elsewhere"
        elsewhere.mkdir()
        with tandem_testing.LocalServer(args.server_binary, index) as server:
            result = run([python, "-c", CLIENT_SNIPPET, server.address], cwd=elsewhere)
        got = json.loads(result.stdout)
        problems = []
        if not got["file"].startswith(str(venv)):
            problems.append(f"tandem_client came from {got['file']}, not the venv")
        if got["version"] != project_version():
            problems.append(f"package version {got['version']} != project {project_version()}")
        if got["hits"] != ["1", "3"]:
            problems.append(f"search 'bear' found {got['hits']}, expected ['1', '3']")
        # The installed stubs are the generated ones, not a copy of the checkout's.
        if not list(venv.glob("lib/python3*/site-packages/tandem_client/gen/tandem/v1/search_pb2.py")):
            problems.append("the installed package has no generated stubs")
    return problem_report.report(problems, "tandem-client installed in a venv and used from another directory")


if __name__ == "__main__":
    sys.exit(main())

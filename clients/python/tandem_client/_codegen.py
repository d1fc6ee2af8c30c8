"""Generates the Python protobuf and gRPC modules of the tandem.v1 protos into tandem_client/gen/.

Generated code is never committed: generate.sh, the CMake target tandem_python_client and the first
import of tandem_client (when the stubs are missing or older than the proto) all come here.

The generator is the first of these that understands proto3 `optional` (protoc >= 3.15):
  1. grpc_tools.protoc of the running interpreter (pip's grpcio-tools);
  2. protoc on PATH (or $PROTOC) with grpc_python_plugin on PATH (or $GRPC_PYTHON_PLUGIN), which is
     what Debian 12 needs: its python3-grpc-tools bundles protoc 3.5.1.

Concurrent generators (several build directories, parallel test runs) are serialized by a lock file,
and every file lands by an atomic rename, so an importer never reads half a module. The stamp file,
written last, holds a digest of the protos, so stale stubs are detected and replaced.

This file runs standalone (stdlib only): `python3 tandem_client/_codegen.py [--check] [--force]`.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The API's protos.
PROTO_FILES = ("tandem/v1/search.proto", "tandem/v1/subscription.proto", "tandem/v1/index.proto")
PACKAGE_DIR = Path(__file__).resolve().parent
GEN_DIR = PACKAGE_DIR / "gen"
STAMP_NAME = "STAMP"
# Bump when the layout or post-processing of generated files changes.
_LAYOUT_VERSION = "2"
_MIN_PROTOC = (3, 15)

# The generated files, relative to gen/.
_GENERATED = tuple(
    f"{proto[: -len('.proto')]}{suffix}" for proto in PROTO_FILES for suffix in ("_pb2.py", "_pb2_grpc.py")
)
_PACKAGE_INITS = ("__init__.py", "tandem/__init__.py", "tandem/v1/__init__.py")


class CodegenError(RuntimeError):
    """The stubs could not be generated."""


def default_proto_root() -> Path | None:
    """The repository's proto/ directory, when this package sits in a Tandem checkout."""
    candidate = PACKAGE_DIR.parent.parent.parent / "proto"
    return candidate if all((candidate / proto).is_file() for proto in PROTO_FILES) else None


def _digest(proto_root: Path) -> str:
    h = hashlib.sha256()
    h.update(_LAYOUT_VERSION.encode())
    for proto in PROTO_FILES:
        h.update(proto.encode())
        h.update((proto_root / proto).read_bytes())
    return h.hexdigest()


def stubs_present(out_dir: Path = GEN_DIR) -> bool:
    return all((out_dir / f).is_file() for f in _GENERATED + _PACKAGE_INITS) and (
        out_dir / STAMP_NAME
    ).is_file()


def is_stale(proto_root: Path, out_dir: Path = GEN_DIR) -> bool:
    """True when the stubs are missing or were generated from another version of the proto."""
    if not stubs_present(out_dir):
        return True
    return (out_dir / STAMP_NAME).read_text().strip() != _digest(proto_root)


def _protoc_version(cmd: list[str]) -> tuple[int, ...] | None:
    try:
        out = subprocess.run(
            cmd + ["--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"(\d+)\.(\d+)", out.stdout)
    if out.returncode != 0 or not m:
        return None
    return (int(m.group(1)), int(m.group(2)))


def _find_generator() -> tuple[list[str], list[str]]:
    """Returns (protoc command, extra arguments) of a generator that supports proto3 optional."""
    tried = []
    grpc_tools_cmd = [sys.executable, "-m", "grpc_tools.protoc"]
    try:
        import grpc_tools  # noqa: F401  (only probing that it exists)

        version = _protoc_version(grpc_tools_cmd)
        if version is not None and version >= _MIN_PROTOC:
            include = Path(grpc_tools.__file__).parent / "_proto"
            return grpc_tools_cmd, [f"-I{include}", "--grpc_python_out=@OUT@"]
        tried.append(f"grpc_tools.protoc (protoc {version}, need >= 3.15)")
    except ImportError:
        tried.append("grpc_tools (not installed)")

    protoc = os.environ.get("PROTOC") or shutil.which("protoc")
    plugin = os.environ.get("GRPC_PYTHON_PLUGIN") or shutil.which("grpc_python_plugin")
    if protoc and plugin:
        version = _protoc_version([protoc])
        if version is not None and version >= _MIN_PROTOC:
            return [protoc], [f"--plugin=protoc-gen-grpc={plugin}", "--grpc_out=@OUT@"]
        tried.append(f"{protoc} (version {version}, need >= 3.15)")
    else:
        tried.append(f"protoc={protoc or 'not found'} with grpc_python_plugin={plugin or 'not found'}")
    raise CodegenError(
        "no protobuf compiler able to generate the Tandem Python stubs; tried: " + "; ".join(tried)
    )


def _make_relative_imports(path: Path, module: str) -> None:
    # protoc writes `from tandem.v1 import search_pb2`, an absolute import of the proto's package;
    # inside tandem_client.gen it must be relative, so that no top-level `tandem` module is needed.
    text = path.read_text()
    text, n = re.subn(
        rf"^from tandem\.v1 import {module} as ", f"from . import {module} as ", text, flags=re.M
    )
    if n != 1:
        raise CodegenError(f"unexpected generated code in {path.name}: import of {module} not found")
    path.write_text(text)


def _atomic_write(dest: Path, data: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; generated files are as readable as sources
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def generate(proto_root: Path, out_dir: Path = GEN_DIR, force: bool = False) -> bool:
    """Generates the stubs into out_dir unless they are up to date. Returns True if it wrote them."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not force and not is_stale(proto_root, out_dir):
            return False
        protoc, extra = _find_generator()
        with tempfile.TemporaryDirectory(prefix="tandem-codegen-") as tmp:
            cmd = (
                protoc
                + [f"-I{proto_root}", f"--python_out={tmp}"]
                + [a.replace("@OUT@", tmp) for a in extra]
                + [str(proto_root / proto) for proto in PROTO_FILES]
            )
            result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
            if result.returncode != 0:
                raise CodegenError(
                    f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stderr.strip()}"
                )
            for proto in PROTO_FILES:
                module = Path(proto).stem + "_pb2"
                _make_relative_imports(Path(tmp) / "tandem/v1" / f"{module}_grpc.py", module)
            for init in _PACKAGE_INITS:
                _atomic_write(out_dir / init, b"# Generated by tandem_client/_codegen.py.\n")
            for name in _GENERATED:
                _atomic_write(out_dir / name, (Path(tmp) / name).read_bytes())
        _atomic_write(out_dir / STAMP_NAME, (_digest(proto_root) + "\n").encode())
        return True


def ensure_stubs() -> bool:
    """Regenerates stale stubs from the checkout's proto beside the package. Returns False when
    there is no such proto and no stubs either (a copied package built without generate.sh)."""
    proto_root = default_proto_root()
    if proto_root is None:
        return stubs_present()
    if is_stale(proto_root):
        generate(proto_root)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--proto-root", type=Path, default=default_proto_root())
    parser.add_argument("--out", type=Path, default=GEN_DIR)
    parser.add_argument("--force", action="store_true", help="regenerate even if up to date")
    parser.add_argument(
        "--check", action="store_true", help="only report whether a generator is available"
    )
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        if args.check:
            protoc, _ = _find_generator()
            if not args.quiet:
                print(f"generator: {' '.join(protoc)}")
            return 0
        if args.proto_root is None:
            parser.error("proto/ not found beside clients/; pass --proto-root")
        wrote = generate(args.proto_root.resolve(), args.out.resolve(), force=args.force)
    except CodegenError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"{'generated' if wrote else 'up to date'}: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

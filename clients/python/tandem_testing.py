"""Runs a local Tandem query node for end-to-end tests: an index built from a few documents, and
tandem-server on an ephemeral port over it.

Standard library only, so that tests of non-Python clients (tandem-loadgen) can use it without grpcio.

    with tempfile.TemporaryDirectory() as tmp:
        index = build_index("build/tools/tandem-index", ["black bear", "brown bear"], tmp)
        with LocalServer("build/tools/tandem-server", index) as server:
            print(server.address)  # "127.0.0.1:43817"
"""

from __future__ import annotations

import argparse
import collections
import os
import queue
import re
import signal
import subprocess
import threading
from pathlib import Path
from typing import Sequence

_LISTENING = re.compile(r"tandem-server listening on (\S+:\d+)")
_METRICS = re.compile(r"\(metrics on (\S+:\d+)\)")


def parse_binaries(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line of a test that runs the node: --server-binary and --index-binary, both
    required (paths to tandem-server and tandem-index)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--server-binary", required=True)
    parser.add_argument("--index-binary", required=True)
    return parser.parse_args(argv)


def build_index(
    tandem_index: str | os.PathLike,
    documents: Sequence[str],
    workdir: str | os.PathLike,
    *,
    timeout: float = 600.0,
) -> Path:
    """Builds an index of `documents` (one line each; the i-th gets external id str(i + 1)) under
    workdir with `tandem-index build --format lines`; returns the index directory."""
    workdir = Path(workdir)
    docs = workdir / "documents.txt"
    for d in documents:
        if "\n" in d or not d.strip():
            raise ValueError(f"a document is one non-blank line: {d!r}")
    docs.write_text("".join(d + "\n" for d in documents), encoding="utf-8")
    out = workdir / "index"
    cmd = [
        str(tandem_index), "build", "--input", str(docs), "--format", "lines", "--output", str(out),
        "--threads", "1", "--quiet",
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stdout}{result.stderr}"
        )
    return out


class LocalServer:
    """tandem-server over `index_dir`, listening on 127.0.0.1 on a port the kernel picks (and serving
    metrics on another, unless metrics_listen says otherwise; None leaves the server's default).

    start() returns once the server has printed its "listening" line; callers that need it SERVING
    poll its health (TandemClient.wait_until_serving). stop() sends SIGTERM and waits for a drain,
    then kills. The server's output is kept (the last lines) for error messages: output().
    """

    def __init__(
        self,
        server_binary: str | os.PathLike,
        index_dir: str | os.PathLike,
        *,
        extra_args: Sequence[str] = (),
        metrics_listen: str | None = "127.0.0.1:0",
        startup_timeout: float = 120.0,
    ):
        self._cmd = [str(server_binary), "--index", str(index_dir), "--listen", "127.0.0.1:0"]
        if metrics_listen is not None:
            # The default metrics port is fixed (9464): servers of concurrent tests would collide.
            self._cmd.append(f"--metrics_listen={metrics_listen}")
        self._cmd.extend(extra_args)
        self._startup_timeout = startup_timeout
        self._proc: subprocess.Popen | None = None
        self._lines: collections.deque[str] = collections.deque(maxlen=200)
        self._listening: queue.Queue[str | None] = queue.Queue()
        self._reader: threading.Thread | None = None
        self.address: str | None = None
        # Where it serves /metrics ("127.0.0.1:43818"), when it does.
        self.metrics_address: str | None = None

    def start(self) -> str:
        self._proc = subprocess.Popen(
            self._cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
        )
        # The output is read to its end on a thread, so that a chatty server never blocks on a full pipe.
        self._reader = threading.Thread(target=self._read_output, daemon=True)
        self._reader.start()
        try:
            address = self._listening.get(timeout=self._startup_timeout)
        except queue.Empty:
            self.stop()
            raise RuntimeError(
                f"tandem-server printed no 'listening' line within {self._startup_timeout:g} s:\n"
                + self.output()
            ) from None
        if address is None:
            code = self._proc.wait()
            raise RuntimeError(f"tandem-server exited ({code}) before listening:\n" + self.output())
        self.address = address
        return address

    def _read_output(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        announced = False
        for line in self._proc.stdout:
            self._lines.append(line.rstrip("\n"))
            if not announced:
                m = _LISTENING.search(line)
                if m:
                    announced = True
                    metrics = _METRICS.search(line)
                    self.metrics_address = metrics.group(1) if metrics else None
                    self._listening.put(m.group(1))
        if not announced:
            self._listening.put(None)

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def output(self) -> str:
        """The server's last lines of output."""
        return "\n".join(self._lines)

    def stop(self, timeout: float = 60.0) -> int | None:
        """Stops the server (SIGTERM, then SIGKILL after `timeout` s); returns its exit code."""
        if self._proc is None:
            return None
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=10)
        return self._proc.returncode

    def __enter__(self) -> "LocalServer":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


"""Builds the tandem-client package (metadata in pyproject.toml).

The only thing beyond pyproject.toml: before the package's files are collected, the tandem.v1 stubs
are generated into tandem_client/gen/ from the checkout's proto/tandem/v1/*.proto (by
tandem_client/_codegen.py, which needs no third-party module), so that a wheel always carries stubs
that match the proto. Outside a checkout the stubs must be there already.
"""

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _codegen():
    spec = importlib.util.spec_from_file_location("_codegen", HERE / "tandem_client" / "_codegen.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildWithStubs(build_py):
    def run(self):
        if not _codegen().ensure_stubs():
            raise SystemExit(
                "tandem-client: tandem_client/gen/ holds no stubs and proto/ is not beside this "
                "package; build it from a Tandem checkout"
            )
        # Packages found before the stubs existed would miss them: look again.
        found = {
            ".".join(init.parent.relative_to(HERE).parts)
            for init in (HERE / "tandem_client").rglob("__init__.py")
        }
        self.packages = sorted(set(self.packages or []) | found)
        super().run()


setup(cmdclass={"build_py": BuildWithStubs})

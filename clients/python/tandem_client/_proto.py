"""Imports the generated tandem.v1 modules (search, subscription and index), generating them first when
missing or stale.

In a Tandem checkout the proto sits at ../../proto beside this package and stale stubs are
regenerated on import (see _codegen.py). Outside a checkout (a copied package) the stubs must have
been generated beforehand with generate.sh.
"""

from __future__ import annotations

from . import _codegen

if not _codegen.ensure_stubs():
    raise ImportError(
        "tandem_client: generated stubs are missing from tandem_client/gen/ and "
        "proto/tandem/v1/ is not beside the package; run clients/python/generate.sh "
        "in a Tandem checkout"
    )

from .gen.tandem.v1 import search_pb2, search_pb2_grpc  # noqa: E402
from .gen.tandem.v1 import subscription_pb2, subscription_pb2_grpc  # noqa: E402
from .gen.tandem.v1 import index_pb2, index_pb2_grpc  # noqa: E402

__all__ = [
    "index_pb2",
    "index_pb2_grpc",
    "search_pb2",
    "search_pb2_grpc",
    "subscription_pb2",
    "subscription_pb2_grpc",
]

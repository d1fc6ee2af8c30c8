"""TandemError: every failure the server reports, for one call or for one query of a batch or stream."""

from __future__ import annotations

import grpc

from .messages import status_code


class TandemError(Exception):
    """A gRPC error from a Tandem node.

    code: the status code's name ("INVALID_ARGUMENT", "DEADLINE_EXCEEDED", ...);
    grpc_code: the grpc.StatusCode (None for a number gRPC does not know);
    message: the server's message; request_id: the query's request_id, for batch and stream errors.
    """

    def __init__(self, grpc_code: grpc.StatusCode | None, message: str, *, code: str | None = None,
                 request_id: str = ""):
        self.grpc_code = grpc_code
        self.code = code or (grpc_code.name if grpc_code is not None else "UNKNOWN")
        self.message = message
        self.request_id = request_id
        super().__init__(f"{self.code}: {message}" if message else self.code)

    @classmethod
    def from_rpc_error(cls, e: grpc.RpcError) -> "TandemError":
        # Every RpcError raised by a call is also a grpc.Call with code() and details().
        code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
        details = e.details() if hasattr(e, "details") else str(e)
        return cls(code, details or "")

    @classmethod
    def from_query_status(cls, status, request_id: str = "") -> "TandemError":
        """From a per-query QueryStatus (code number + message) of SearchBatch or SearchStream."""
        grpc_code = status_code(status.code)
        name = grpc_code.name if grpc_code is not None else f"CODE_{status.code}"
        return cls(grpc_code, status.message, code=name, request_id=request_id)

"""Writes to a node's index (tandem.v1.IndexService Write, Refresh, Flush, GetIndexStats): the
operations a caller sends, as dicts, and what the node answers, as plain values.

    {"index": {"id": "d1", "text": "a black bear", "fields": {"title": "Bears"},
               "attributes": {"year": 2001, "topics": ["bears", "forests"]}}, "version": 3}
    {"delete": "d1", "version": 4}

"version" is optional: an operation not newer than the version the node holds for the id is
skipped (WriteResult.stale).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, Union

from ._proto import index_pb2
from .messages import status_code

OperationLike = Union[Mapping[str, Any], "index_pb2.WriteOperation"]

_DOCUMENT_KEYS = {"id", "text", "fields", "attributes"}


def _value(value, where: str) -> str:
    if isinstance(value, bool):  # before int: a bool is an int
        return "true" if value else "false"
    if isinstance(value, (str, int)):
        return str(value)
    raise ValueError(f"{where} is a str, int or bool, not {type(value).__name__}")


def _add_fields(spec, out, where: str) -> None:
    """name: value, or name: [values] for a multi-valued field, as DocumentFields in order."""
    if not isinstance(spec, Mapping):
        raise ValueError(f"{where} is a dict of name: value")
    for name, value in spec.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            out.add(name=str(name), value=_value(v, f"{where}[{name!r}]"))


def document_to_proto(doc: Mapping[str, Any], where: str = "document") -> index_pb2.IndexDocument:
    """An IndexDocument from {"id", "text", "fields", "attributes"}; ValueError for anything else.
    An empty id is the node's to refuse (WriteResult.errors), as it refuses any bad document."""
    if not isinstance(doc, Mapping):
        raise ValueError(f"{where} is a dict with id, text, fields and attributes")
    unknown = set(doc) - _DOCUMENT_KEYS
    if unknown:
        raise ValueError(f"{where} has id, text, fields and attributes, not {sorted(unknown)}")
    doc_id, text = doc.get("id", ""), doc.get("text", "")
    if not isinstance(doc_id, str) or not isinstance(text, str):
        raise ValueError(f"{where}: id and text are str")
    out = index_pb2.IndexDocument(id=doc_id, text=text)
    _add_fields(doc.get("fields", {}), out.fields, f"{where} fields")
    _add_fields(doc.get("attributes", {}), out.attributes, f"{where} attributes")
    return out


def operation_to_proto(op: OperationLike, position: int) -> index_pb2.WriteOperation:
    """A WriteOperation from {"index": document} or {"delete": id}, each with an optional
    "version"; a WriteOperation is taken as it is."""
    if isinstance(op, index_pb2.WriteOperation):
        return op
    where = f"operation {position}"
    if not isinstance(op, Mapping):
        raise ValueError(f"{where} is a dict {{'index': document}} or {{'delete': id}}")
    unknown = set(op) - {"index", "delete", "version"}
    if unknown or ("index" in op) == ("delete" in op):
        raise ValueError(f"{where} has one of 'index' and 'delete', and maybe 'version'; "
                         f"got {sorted(op)}")
    out = index_pb2.WriteOperation()
    if "index" in op:
        out.index.CopyFrom(document_to_proto(op["index"], f"{where}'s document"))
    else:
        if not isinstance(op["delete"], str):
            raise ValueError(f"{where}: the id to delete is a str")
        out.delete_id = op["delete"]
    version = op.get("version")
    if version is not None:
        if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version < 2**64:
            raise ValueError(f"{where}: version is an int in [0, 2**64)")
        out.version = version
    return out


# A message also goes out once its operations pass this many bytes, well under the node's
# --max-receive-message-bytes (16 MiB by default) however large the documents.
MAX_MESSAGE_BYTES = 4 << 20


class WriteRequests:
    """The Write call's request messages, `batch_size` operations or about MAX_MESSAGE_BYTES each.
    A bad operation ends the stream (what was sent before it is written) and is kept in `error` for
    the caller to raise."""

    def __init__(self, operations: Iterable[OperationLike], batch_size: int):
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self._operations = operations
        self._batch_size = batch_size
        self.sent = 0
        self.error: ValueError | None = None

    def __iter__(self) -> Iterator[index_pb2.WriteRequest]:
        request = index_pb2.WriteRequest()
        size = 0
        for position, op in enumerate(self._operations):
            try:
                converted = operation_to_proto(op, position)
            except ValueError as e:
                self.error = e
                break
            request.operations.append(converted)
            size += converted.ByteSize()
            if len(request.operations) == self._batch_size or size >= MAX_MESSAGE_BYTES:
                self.sent += len(request.operations)
                yield request
                request = index_pb2.WriteRequest()
                size = 0
        if request.operations:
            self.sent += len(request.operations)
            yield request


@dataclass(frozen=True)
class WriteError:
    """One refused operation: its place in the stream (from 0), id, status code name, message."""

    operation: int
    id: str
    code: str
    message: str


@dataclass(frozen=True)
class WriteResult:
    """What a Write did. acknowledged counts the stale and not-found operations too; refused counts
    every refused operation, errors lists the first 1000."""

    acknowledged: int
    stale: int
    not_found: int
    refused: int
    errors: tuple[WriteError, ...]
    last_sequence: int

    @classmethod
    def from_proto(cls, r: index_pb2.WriteResponse) -> "WriteResult":
        errors = []
        for e in r.errors:
            code = status_code(e.code)
            errors.append(WriteError(e.operation, e.id, code.name if code else f"CODE_{e.code}",
                                     e.message))
        return cls(r.acknowledged, r.stale, r.not_found, r.refused, tuple(errors), r.last_sequence)


@dataclass(frozen=True)
class RefreshResult:
    """After a Refresh: the live documents searchable now, in how many segments."""

    documents: int
    segments: int


@dataclass(frozen=True)
class IndexStats:
    """GetIndexStats. writable is False on a node that takes no writes (the rest are then 0)."""

    documents: int
    deleted_documents: int
    segments: int
    buffered_operations: int
    commit_generation: int
    refreshes: int
    last_sequence: int
    writable: bool

    @classmethod
    def from_proto(cls, r: index_pb2.IndexStats) -> "IndexStats":
        return cls(r.documents, r.deleted_documents, r.segments, r.buffered_operations,
                   r.commit_generation, r.refreshes, r.last_sequence, r.writable)


__all__ = ["IndexStats", "RefreshResult", "WriteError", "WriteResult"]

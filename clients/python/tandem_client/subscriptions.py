"""Plain Python values for standing queries (tandem.v1.SubscriptionService, subscription.proto).

A predicate is given as its text form, which the server parses:

    'terms contains "gas price" AND year >= 2001 OR label = "spam"'

or as a dict of filters (ORed), each a list of constraints (ANDed), each a (name, op, value) tuple
or a {"name", "op", "value"} dict:

    {"filters": [[("terms", "contains", "gas price"), ("year", ">=", 2001)],
                 [("label", "=", "spam")]]}

Operators: "=", "!=", "<", ">", "<=", ">=", "prefix", "substring", "contains" (or eq, ne, lt, gt,
le, ge, or the proto's OP_EQ ...). Values: int (int64), float (double), str. A document is a dict
{"id": ..., "text": ..., "attributes": {"year": 2001, "score": 0.5, "domain": "enron.com"}} or a
Document.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence, Union

from ._proto import subscription_pb2

_Op = subscription_pb2.Constraint

_OPS = {
    "=": _Op.OP_EQ, "==": _Op.OP_EQ, "eq": _Op.OP_EQ,
    "!=": _Op.OP_NE, "ne": _Op.OP_NE,
    "<": _Op.OP_LT, "lt": _Op.OP_LT,
    ">": _Op.OP_GT, "gt": _Op.OP_GT,
    "<=": _Op.OP_LE, "le": _Op.OP_LE,
    ">=": _Op.OP_GE, "ge": _Op.OP_GE,
    "prefix": _Op.OP_PREFIX,
    "substring": _Op.OP_SUBSTRING,
    "contains": _Op.OP_CONTAINS,
}
# The text form's spelling of each operator, as the server formats predicates.
_OP_SYMBOLS = {
    _Op.OP_EQ: "=", _Op.OP_NE: "!=", _Op.OP_LT: "<", _Op.OP_GT: ">", _Op.OP_LE: "<=",
    _Op.OP_GE: ">=", _Op.OP_PREFIX: "prefix", _Op.OP_SUBSTRING: "substring",
    _Op.OP_CONTAINS: "contains",
}

_INT64 = (-(2**63), 2**63 - 1)

Value = Union[int, float, str]


def op_value(op) -> int:
    """The Constraint.Op of "=" / ">=" / "contains" / "eq" / "OP_EQ" (or its number)."""
    if isinstance(op, str):
        key = op.strip().lower()
        if key in _OPS:
            return _OPS[key]
        try:
            return _Op.Op.Value(op.strip().upper())
        except ValueError:
            pass
        raise ValueError(f"unknown operator {op!r}; expected one of {sorted(set(_OPS))}")
    if isinstance(op, int) and not isinstance(op, bool) and op in _Op.Op.values():
        return op
    raise ValueError(f"unknown operator {op!r}")


def value_to_proto(value: Value, out: subscription_pb2.Value) -> None:
    """Sets `out` from an int (int64), a float (double) or a str."""
    if isinstance(value, bool):  # a bool is an int to Python; the API has no booleans
        raise ValueError("a value is an int, a float or a str, not a bool")
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise ValueError(f"integer {value} is out of the int64 range")
        out.int_value = value
    elif isinstance(value, float):
        out.double_value = value
    elif isinstance(value, str):
        out.string_value = value
    else:
        raise ValueError(f"a value is an int, a float or a str, not {type(value).__name__}")


def value_from_proto(value: subscription_pb2.Value) -> Value | None:
    kind = value.WhichOneof("kind")
    return None if kind is None else getattr(value, kind)


@dataclass(frozen=True)
class Constraint:
    """`name op value`; op in the text form's spelling ("=", ">=", "contains", ...)."""

    name: str
    op: str
    value: Value


def predicate_to_proto(predicate: Mapping | Sequence) -> subscription_pb2.Predicate:
    """A Predicate from {"filters": [...]} (or the list of filters itself); see the module doc."""
    filters = predicate.get("filters") if isinstance(predicate, Mapping) else predicate
    if isinstance(predicate, Mapping) and set(predicate) - {"filters"}:
        raise ValueError(f"a predicate dict has only 'filters', not {sorted(set(predicate) - {'filters'})}")
    if filters is None or isinstance(filters, (str, bytes)):
        raise ValueError("a predicate is {'filters': [[(name, op, value), ...], ...]}")
    out = subscription_pb2.Predicate()
    for f in filters:
        constraints = f.get("constraints", ()) if isinstance(f, Mapping) else f
        if isinstance(constraints, (str, bytes)):
            raise ValueError("a filter is a list of (name, op, value) constraints")
        proto_filter = out.filters.add()
        for c in constraints:
            if isinstance(c, Constraint):
                name, op, value = c.name, c.op, c.value
            elif isinstance(c, Mapping):
                name, op, value = c.get("name"), c.get("op"), c.get("value")
            else:
                try:
                    name, op, value = c
                except (TypeError, ValueError):
                    raise ValueError(f"a constraint is (name, op, value), not {c!r}") from None
            if not isinstance(name, str):
                raise ValueError(f"a constraint's name is a str, not {name!r}")
            proto = proto_filter.constraints.add(name=name, op=op_value(op))
            value_to_proto(value, proto.value)
    return out


def _filters_from_proto(predicate: subscription_pb2.Predicate) -> tuple[tuple[Constraint, ...], ...]:
    return tuple(
        tuple(Constraint(c.name, _OP_SYMBOLS.get(c.op, str(c.op)), value_from_proto(c.value))
              for c in f.constraints)
        for f in predicate.filters
    )


@dataclass(frozen=True)
class Subscription:
    """A standing query as the node holds it: normalized (`contains` analyzed into terms).

    filters: the predicate, an OR of filters, each an AND of Constraints; None where the call does
    not return it (subscribe(); list_subscriptions() does).
    """

    id: int
    interface: str
    predicate_text: str
    filters: tuple[tuple[Constraint, ...], ...] | None = None

    @classmethod
    def from_proto(cls, s: subscription_pb2.Subscription) -> "Subscription":
        return cls(s.id, s.interface, s.predicate_text, _filters_from_proto(s.predicate))


@dataclass(frozen=True)
class Document:
    """A document to match: an id (echoed back), typed attributes and text."""

    id: str = ""
    text: str = ""
    attributes: Mapping[str, Value] = field(default_factory=dict)

    def to_proto(self) -> subscription_pb2.Document:
        if not isinstance(self.id, str) or not isinstance(self.text, str):
            raise ValueError("a document's id and text are str")
        out = subscription_pb2.Document(id=self.id, text=self.text)
        if not isinstance(self.attributes, Mapping):
            raise ValueError("a document's attributes are a dict of name: value")
        for name, value in self.attributes.items():
            if not isinstance(name, str):
                raise ValueError(f"an attribute name is a str, not {name!r}")
            value_to_proto(value, out.attributes.add(name=name).value)
        return out


DocumentLike = Union[Document, Mapping[str, Any]]


def to_document(item: DocumentLike, position: int) -> Document:
    """A Document from a Document or a dict of its fields; an id-less one gets its position."""
    if isinstance(item, Document):
        return item
    if isinstance(item, Mapping):
        unknown = set(item) - {"id", "text", "attributes"}
        if unknown:
            raise ValueError(f"a document has id, text and attributes, not {sorted(unknown)}")
        doc_id = item.get("id", str(position))
        return Document(id=str(doc_id), text=item.get("text", ""),
                        attributes=item.get("attributes", {}))
    raise TypeError(f"a document is a dict or a Document, not {type(item).__name__}")


@dataclass(frozen=True)
class DocumentMatch:
    """The interfaces (sorted) with a subscription that one document satisfies."""

    document_id: str
    interfaces: tuple[str, ...]


@dataclass(frozen=True)
class MatchResult:
    """One entry per document, in the order they were given; `engine`: "cpu" or "gpu"."""

    matches: list[DocumentMatch]
    engine: str

    def __len__(self) -> int:
        return len(self.matches)

    def __iter__(self):
        return iter(self.matches)

    @classmethod
    def from_proto(cls, r: subscription_pb2.MatchResponse) -> "MatchResult":
        return cls([DocumentMatch(m.document_id, tuple(m.interfaces)) for m in r.matches], r.engine)


@dataclass(frozen=True)
class WatchEvent:
    """A document matched for the watched interface: its id and attributes (its text is not sent).

    dropped: documents dropped for this watch before this one because the client read too slowly.
    """

    document_id: str
    attributes: dict[str, Value]
    dropped: int = 0

    @classmethod
    def from_proto(cls, e: subscription_pb2.WatchEvent) -> "WatchEvent":
        return cls(e.document_id, {a.name: value_from_proto(a.value) for a in e.attributes},
                   e.dropped)


def documents_to_proto(documents: Iterable[DocumentLike]) -> subscription_pb2.MatchRequest:
    return subscription_pb2.MatchRequest(
        documents=[to_document(d, i).to_proto() for i, d in enumerate(documents)]
    )


__all__ = [
    "Constraint",
    "Document",
    "DocumentMatch",
    "MatchResult",
    "Subscription",
    "WatchEvent",
]

"""Filters on document attributes for search() (SearchRequest's filter_text and filter).

A filter keeps a query's hits to the documents it allows, scores unchanged; the index must have
been built with `tandem-index build --attributes` (`tandem-index inspect` lists its fields). It is
given as its text form, which the server parses:

    'label = spam AND year >= 2002'
    'topics IN (grain, wheat) OR NOT places = usa'

or as a tree of tuples and dicts, sent as a DocumentFilter:

    ("label", "=", "spam")                  # field = value (an int is sent in decimal)
    ("label", "!=", "spam")                 # not (field = value); documents without it included
    ("topics", "in", ["grain", "wheat"])    # field = any of the values
    ("year", ">=", 2002)                    # also ">", "<=", "<", on integer fields
    ("year", "range", 2000, 2004)           # 2000 <= year <= 2004; None for an open side
    {"and": [f1, f2, ...]}                  # every one
    {"or": [f1, f2, ...]}                   # any one
    {"not": f}                              # not f

Operators are also spelt eq, ne, gt, ge, lt, le. A leaf may be a list instead of a tuple (as JSON
gives it), and a DocumentFilter message passes as it is. Shapes the tree cannot express raise
ValueError here; unknown fields and values are the server's to refuse (INVALID_ARGUMENT).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence, Union

from ._proto import search_pb2

_INT64 = (-(2**63), 2**63 - 1)

_EQ, _NE, _IN, _RANGE = "=", "!=", "in", "range"
_OPS = {
    "=": _EQ, "==": _EQ, "eq": _EQ,
    "!=": _NE, "ne": _NE,
    "in": _IN,
    "range": _RANGE,
    ">=": ">=", "ge": ">=",
    ">": ">", "gt": ">",
    "<=": "<=", "le": "<=",
    "<": "<", "lt": "<",
}

FilterLike = Union[str, Sequence, Mapping[str, Any], search_pb2.DocumentFilter]


def filter_to_proto(spec: FilterLike) -> search_pb2.DocumentFilter:
    """The DocumentFilter of a tree of tuples and dicts (see the module doc)."""
    out = search_pb2.DocumentFilter()
    _fill(spec, out, "filter")
    return out


def _fill(spec, out: search_pb2.DocumentFilter, where: str) -> None:
    if isinstance(spec, search_pb2.DocumentFilter):
        out.CopyFrom(spec)
    elif isinstance(spec, Mapping):
        _fill_combination(spec, out, where)
    elif isinstance(spec, (tuple, list)):
        _fill_leaf(spec, out, where)
    elif isinstance(spec, str):
        raise ValueError(f"{where}: text ({spec!r}) is only accepted as the whole filter; inside a "
                         "tree, write (field, op, value)")
    else:
        raise ValueError(f"{where}: a filter is (field, op, value), {{'and': [...]}}, "
                         f"{{'or': [...]}} or {{'not': ...}}, not {type(spec).__name__}")


def _fill_combination(spec: Mapping, out: search_pb2.DocumentFilter, where: str) -> None:
    if len(spec) != 1 or next(iter(spec)) not in ("and", "or", "not"):
        raise ValueError(f"{where}: a dict filter has exactly one key, 'and', 'or' or 'not'; "
                         f"got {sorted(map(str, spec))}")
    (key, children), = spec.items()
    if key == "not":
        _fill(children, getattr(out, "not"), f"{where}.not")
        return
    if isinstance(children, (str, bytes, Mapping)) or not isinstance(children, Sequence) or (
            children and isinstance(children[0], str)):
        raise ValueError(f"{where}.{key}: a list of filters, got {children!r}")
    if not children:
        raise ValueError(f"{where}.{key}: needs at least one filter")
    node = getattr(out, key)
    for i, child in enumerate(children):
        _fill(child, node.filters.add(), f"{where}.{key}[{i}]")


def _fill_leaf(spec: Sequence, out: search_pb2.DocumentFilter, where: str) -> None:
    if len(spec) < 3 or not isinstance(spec[0], str) or not isinstance(spec[1], str):
        raise ValueError(f"{where}: a leaf is (field, op, value) or (field, 'range', lo, hi), "
                         f"got {tuple(spec)!r}; combine filters with {{'and': [...]}}")
    field, op_name, args = spec[0], spec[1], spec[2:]
    if not field:
        raise ValueError(f"{where}: an empty field name")
    op = _OPS.get(op_name.strip().lower())
    if op is None:
        raise ValueError(f"{where}: unknown operator {op_name!r}; expected one of {sorted(_OPS)}")
    if op == _RANGE:
        if len(args) != 2:
            raise ValueError(f"{where}: a range is (field, 'range', lo, hi), None for an open side")
        lo, hi = (None if v is None else _integer(v, where) for v in args)
        _set_range(out, field, lo, hi, where)
        return
    if len(args) != 1:
        raise ValueError(
            f"{where}: ({field!r}, {op_name!r}, value) takes one value, got {len(args)}")
    value = args[0]
    if op == _EQ:
        out.equals.field = field
        out.equals.value = _text(value, where)
    elif op == _NE:
        node = getattr(out, "not").equals
        node.field = field
        node.value = _text(value, where)
    elif op == _IN:
        if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
            raise ValueError(f"{where}: 'in' takes a list of values, got {value!r}")
        values = [_text(v, where) for v in value]
        if not values:
            raise ValueError(f"{where}: 'in' needs at least one value")
        node = getattr(out, "in")
        node.field = field
        node.values.extend(values)
    else:
        bound = _integer(value, where)
        if op == ">":
            _set_range(out, field, _bump(bound, +1, where), None, where)
        elif op == ">=":
            _set_range(out, field, bound, None, where)
        elif op == "<":
            _set_range(out, field, None, _bump(bound, -1, where), where)
        else:
            _set_range(out, field, None, bound, where)


def _set_range(out: search_pb2.DocumentFilter, field: str, lo: int | None, hi: int | None,
               where: str) -> None:
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"{where}: a range's low bound {lo} is above its high bound {hi}")
    out.range.field = field
    if lo is not None:
        out.range.min = lo
    if hi is not None:
        out.range.max = hi


def _text(value, where: str) -> str:
    """A term's value: a str as it is, an int in decimal."""
    if isinstance(value, bool):  # a bool is an int to Python; the API has no booleans
        raise ValueError(f"{where}: a value is a str or an int, not a bool")
    if isinstance(value, int):
        return str(_integer(value, where))
    if isinstance(value, str):
        return value
    raise ValueError(f"{where}: a value is a str or an int, not {type(value).__name__}")


def _integer(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}: a bound is an int, not {value!r}")
    if not _INT64[0] <= value <= _INT64[1]:
        raise ValueError(f"{where}: {value} is out of the int64 range")
    return value


def _bump(bound: int, step: int, where: str) -> int:
    # `year > 2001` is `year >= 2002`, as the text form reads it.
    return _integer(bound + step, where)


__all__ = ["FilterLike", "filter_to_proto"]

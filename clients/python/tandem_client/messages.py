"""Plain Python values for what the Tandem API returns, and the Query a caller sends."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence, Tuple, Union

import grpc

from ._proto import search_pb2
from .filters import FilterLike, filter_to_proto

# Mode and engine names accepted by the client, and the proto values they stand for.
_MODES = {
    "or": search_pb2.QUERY_MODE_OR,
    "and": search_pb2.QUERY_MODE_AND,
    "and_or": search_pb2.QUERY_MODE_AND_OR,
    "and-or": search_pb2.QUERY_MODE_AND_OR,
    "and+or": search_pb2.QUERY_MODE_AND_OR,
    "andor": search_pb2.QUERY_MODE_AND_OR,
}
_MODE_NAMES = {
    search_pb2.QUERY_MODE_UNSPECIFIED: "unspecified",
    search_pb2.QUERY_MODE_OR: "or",
    search_pb2.QUERY_MODE_AND: "and",
    search_pb2.QUERY_MODE_AND_OR: "and_or",
}
_ENGINES = {
    "auto": search_pb2.ENGINE_HINT_AUTO,
    "cpu": search_pb2.ENGINE_HINT_CPU,
    "gpu": search_pb2.ENGINE_HINT_GPU,
}

MODES = ("or", "and", "and_or")
ENGINES = tuple(_ENGINES)

# A pre-analyzed term: "term", or ("term", weight).
TermSpec = Union[str, Tuple[str, float]]
Terms = Union[Sequence[TermSpec], Mapping[str, float]]


def _lookup(value, table: dict, enum_type, what: str) -> int:
    if isinstance(value, str):
        key = value.strip().lower()
        if key in table:
            return table[key]
        try:
            return enum_type.Value(value.strip().upper())  # "QUERY_MODE_OR", "ENGINE_HINT_CPU"
        except ValueError:
            pass
        raise ValueError(f"unknown {what} {value!r}; expected one of {sorted(set(table))}")
    if isinstance(value, int) and value in enum_type.values():
        return value
    raise ValueError(f"unknown {what} {value!r}")


def mode_value(mode) -> int:
    """The QueryMode of "or" / "and" / "and_or" (or a QueryMode name or number)."""
    return _lookup(mode, _MODES, search_pb2.QueryMode, "mode")


def mode_name(value: int) -> str:
    return _MODE_NAMES.get(value, str(value))


def engine_value(engine) -> int:
    """The EngineHint of "auto" / "cpu" / "gpu" (or an EngineHint name or number)."""
    return _lookup(engine, _ENGINES, search_pb2.EngineHint, "engine")


@dataclass(frozen=True)
class Query:
    """One query: free text (analyzed by the server) or pre-analyzed terms, never both."""

    text: str | None = None
    terms: Terms | None = None
    mode: str | int = "or"
    k: int = 10
    k1: float | None = None
    b: float | None = None
    engine: str | int = "auto"
    request_id: str = ""
    # Stored fields each hit should carry ("title", "subject", ...; "*" for all).
    fields: Sequence[str] = ()
    # Longest snippet of each hit's stored text (indexes built with --store-text); 0 for none.
    snippet_bytes: int = 0
    # Keeps the hits to the documents this filter on their attributes allows (indexes built with
    # --attributes): its text form ('label = spam AND year >= 2002', sent as filter_text), or a
    # tree of tuples and dicts (sent as filter; see tandem_client.filters). None or "": no filter.
    filter: FilterLike | None = None

    def to_proto(self) -> search_pb2.SearchRequest:
        """The SearchRequest; raises ValueError for what the request cannot express."""
        if (self.text is None) == (self.terms is None):
            raise ValueError("give exactly one of text= and terms=")
        if isinstance(self.k, bool) or not isinstance(self.k, int) or not 0 <= self.k < 2**32:
            raise ValueError(f"k must be an integer in [0, 2^32), got {self.k!r}")
        req = search_pb2.SearchRequest(
            mode=mode_value(self.mode),
            k=self.k,
            engine=engine_value(self.engine),
            request_id=self.request_id,
        )
        if self.text is not None:
            if not isinstance(self.text, str):
                raise ValueError(f"text must be a str, got {type(self.text).__name__}")
            req.text = self.text
        else:
            req.terms.SetInParent()  # an empty list is still "terms", for the server to judge
            for term, weight in _iter_terms(self.terms):
                req.terms.terms.add(term=term, weight=weight)
        if self.k1 is not None:
            req.bm25.k1 = float(self.k1)
        if self.b is not None:
            req.bm25.b = float(self.b)
        if isinstance(self.snippet_bytes, bool) or not isinstance(self.snippet_bytes, int) \
                or self.snippet_bytes < 0:
            raise ValueError(f"snippet_bytes must be a non-negative integer, got {self.snippet_bytes!r}")
        req.snippet_bytes = self.snippet_bytes
        if isinstance(self.fields, str):
            raise ValueError("fields must be a list of field names, not a str")
        for name in self.fields:
            if not isinstance(name, str):
                raise ValueError(f"a field name must be a str, got {type(name).__name__}")
            req.fields.append(name)
        if isinstance(self.filter, str):
            req.filter_text = self.filter
        elif self.filter is not None:
            req.filter.CopyFrom(filter_to_proto(self.filter))
        return req


def _iter_terms(terms: Terms) -> Iterable[tuple[str, float]]:
    if isinstance(terms, str):
        raise ValueError("terms must be a list of terms (or of (term, weight) pairs), not a str")
    items = terms.items() if isinstance(terms, Mapping) else terms
    for item in items:
        if isinstance(item, str):
            yield item, 0.0  # 0 means weight 1 on the wire
        else:
            term, weight = item
            yield str(term), float(weight)


QueryLike = Union[str, Query, Mapping]


def to_query(item: QueryLike, defaults: Mapping) -> Query:
    """A Query from a str (its text), a Query, or a mapping of Query fields; `defaults` fill the rest."""
    if isinstance(item, Query):
        return item
    if isinstance(item, str):
        return Query(**{**defaults, "text": item})
    if isinstance(item, Mapping):
        return Query(**{**defaults, **item})
    raise TypeError(f"a query is a str, a Query or a dict, not {type(item).__name__}")


@dataclass(frozen=True)
class Snippet:
    """Part of a hit's text around the query terms; `highlights` are (start, end) indices into
    `text` (a str), one per query-term token, in order."""

    text: str
    highlights: tuple[tuple[int, int], ...] = ()
    starts_inside: bool = False
    ends_inside: bool = False

    def marked(self, open: str = "[", close: str = "]", ellipsis: str = "...") -> str:
        """The text with each highlight between `open` and `close`, and `ellipsis` where the
        snippet cuts the document's text."""
        out, at = [], 0
        for start, end in self.highlights:
            out += [self.text[at:start], open, self.text[start:end], close]
            at = end
        out.append(self.text[at:])
        return (ellipsis if self.starts_inside else "") + "".join(out) + \
            (ellipsis if self.ends_inside else "")

    @classmethod
    def from_proto(cls, s) -> "Snippet":
        # The server's spans count UTF-8 bytes; a str counts characters.
        raw = s.text.encode("utf-8")
        def index(offset: int) -> int:
            return len(raw[:offset].decode("utf-8", errors="ignore"))
        return cls(s.text, tuple((index(h.begin), index(h.end)) for h in s.highlights),
                   s.starts_inside, s.ends_inside)


@dataclass(frozen=True)
class Hit:
    """One ranked document, with the stored fields its query asked for as (name, value) pairs in
    the document's order (a name may repeat)."""

    docid: int
    external_id: str
    score: float
    fields: tuple[tuple[str, str], ...] = ()
    snippet: Snippet | None = None

    def field(self, name: str) -> str | None:
        """The first value of stored field `name`, or None."""
        return next((value for field, value in self.fields if field == name), None)


@dataclass(frozen=True)
class QueryStats:
    """Where the time went, for one query (see QueryStats in search.proto)."""

    engine: str
    executed_mode: str
    postings_decoded: int
    queued_micros: int
    execution_micros: int
    total_micros: int
    terms: tuple[str, ...]

    @classmethod
    def from_proto(cls, s: search_pb2.QueryStats) -> "QueryStats":
        return cls(
            engine=s.engine,
            executed_mode=mode_name(s.executed_mode),
            postings_decoded=s.postings_decoded,
            queued_micros=s.queued_micros,
            execution_micros=s.execution_micros,
            total_micros=s.total_micros,
            terms=tuple(s.terms),
        )


@dataclass(frozen=True)
class SearchResult:
    """The hits of one query, best first (ties by lower docid), with its stats."""

    hits: list[Hit]
    stats: QueryStats
    request_id: str = ""

    def __len__(self) -> int:
        return len(self.hits)

    def __iter__(self):
        return iter(self.hits)

    @classmethod
    def from_proto(cls, r: search_pb2.SearchResponse) -> "SearchResult":
        return cls(
            hits=[Hit(h.docid, h.external_id, h.score,
                      tuple((f.name, f.value) for f in h.fields),
                      Snippet.from_proto(h.snippet) if h.HasField("snippet") else None)
                  for h in r.hits],
            stats=QueryStats.from_proto(r.stats),
            request_id=r.request_id,
        )


@dataclass(frozen=True)
class IndexInfo:
    """What index the node serves (GetIndexInfoResponse)."""

    index_id: str
    documents: int
    terms: int
    postings: int
    index_bytes: int
    codec: str
    analyzer: str
    build_time: str
    average_document_length: float
    engines: tuple[str, ...]
    format_version: int
    source_format: str
    source_input: str
    # 1 for the index the node started with, one more for each index loaded since.
    generation: int = 1
    directory: str = ""

    @classmethod
    def from_proto(cls, r: search_pb2.GetIndexInfoResponse) -> "IndexInfo":
        return cls(
            index_id=r.index_id,
            documents=r.documents,
            terms=r.terms,
            postings=r.postings,
            index_bytes=r.index_bytes,
            codec=r.codec,
            analyzer=r.analyzer,
            build_time=r.build_time,
            average_document_length=r.average_document_length,
            engines=tuple(r.engines),
            format_version=r.format_version,
            source_format=r.source_format,
            source_input=r.source_input,
            generation=r.generation,
            directory=r.directory,
        )


@dataclass(frozen=True)
class LoadedIndex:
    """The index a node switched to (LoadIndexResponse)."""

    index_id: str
    documents: int
    generation: int
    open_seconds: float
    warm_seconds: float
    lists_warmed: int

    @classmethod
    def from_proto(cls, r) -> "LoadedIndex":
        return cls(
            index_id=r.index_id,
            documents=r.documents,
            generation=r.generation,
            open_seconds=r.open_seconds,
            warm_seconds=r.warm_seconds,
            lists_warmed=r.lists_warmed,
        )


_STATUS_BY_NUMBER = {code.value[0]: code for code in grpc.StatusCode}


def status_code(number: int) -> grpc.StatusCode | None:
    """The grpc.StatusCode of a google.rpc.Code number, or None if it is not one."""
    return _STATUS_BY_NUMBER.get(number)


__all__ = [
    "ENGINES",
    "MODES",
    "Hit",
    "IndexInfo",
    "Query",
    "QueryStats",
    "SearchResult",
]

"""TandemClient: the Tandem query node's gRPC API (tandem.v1.SearchService, its standing
queries, tandem.v1.SubscriptionService, and writes to its index, tandem.v1.IndexService) as Python
calls.

    with TandemClient("127.0.0.1:50051", timeout=5.0) as client:
        result = client.search("black bear attacks", mode="and", k=5)
        for hit in result.hits:
            print(hit.external_id, hit.score)
        client.subscribe("alice", 'terms contains "bear" AND year >= 2001')
        print(client.match([{"id": "m1", "text": "a bear", "attributes": {"year": 2002}}]))
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any, Iterable, Iterator, Mapping, Sequence

import grpc

from . import _health
from ._proto import (
    index_pb2,
    index_pb2_grpc,
    search_pb2,
    search_pb2_grpc,
    subscription_pb2,
    subscription_pb2_grpc,
)
from .errors import TandemError
from .filters import FilterLike
from .messages import IndexInfo, LoadedIndex, Query, QueryLike, SearchResult, Terms, to_query
from .writes import (
    IndexStats,
    OperationLike,
    RefreshResult,
    WriteRequests,
    WriteResult,
)
from .subscriptions import (
    DocumentLike,
    MatchResult,
    Subscription,
    WatchEvent,
    documents_to_proto,
    predicate_to_proto,
)

_DEFAULT = object()  # "use the client's default timeout"


def _read_pem(value: bytes | str | os.PathLike | None) -> bytes | None:
    """PEM bytes as given, or read from a file path."""
    if value is None or isinstance(value, bytes):
        return value
    with open(value, "rb") as f:
        return f.read()


class TandemClient:
    """A connection to one Tandem query node.

    address: "host:port". timeout: default deadline of every unary call, seconds (None: no deadline).
    tls: False for plaintext; True for TLS with root_certificates (PEM bytes or a file path; None: the
    system roots) and, for mutual TLS, private_key and certificate_chain; or a grpc.ChannelCredentials.
    server_name overrides the name checked against the server certificate. metadata is sent with every
    call; options are extra grpc channel arguments. wait_for_ready makes calls wait for the channel to
    connect instead of failing fast with UNAVAILABLE.

    Failures raise TandemError (code name, message). The client is thread-safe; close() it, or use it
    as a context manager.
    """

    def __init__(
        self,
        address: str,
        *,
        timeout: float | None = 10.0,
        tls: bool | grpc.ChannelCredentials = False,
        root_certificates: bytes | str | os.PathLike | None = None,
        private_key: bytes | str | os.PathLike | None = None,
        certificate_chain: bytes | str | os.PathLike | None = None,
        server_name: str | None = None,
        metadata: Sequence[tuple[str, str]] = (),
        options: Sequence[tuple[str, object]] = (),
        wait_for_ready: bool = False,
    ):
        self.address = address
        self.timeout = timeout
        self._metadata = tuple(metadata)
        self._wait_for_ready = wait_for_ready
        channel_options = list(options)
        if server_name:
            channel_options.append(("grpc.ssl_target_name_override", server_name))
        if isinstance(tls, grpc.ChannelCredentials):
            self._channel = grpc.secure_channel(address, tls, options=channel_options)
        elif tls:
            creds = grpc.ssl_channel_credentials(
                root_certificates=_read_pem(root_certificates),
                private_key=_read_pem(private_key),
                certificate_chain=_read_pem(certificate_chain),
            )
            self._channel = grpc.secure_channel(address, creds, options=channel_options)
        else:
            if root_certificates or private_key or certificate_chain:
                raise ValueError("certificates given but tls=False")
            self._channel = grpc.insecure_channel(address, options=channel_options)
        self._stub = search_pb2_grpc.SearchServiceStub(self._channel)
        self._subscriptions = subscription_pb2_grpc.SubscriptionServiceStub(self._channel)
        self._indexes = index_pb2_grpc.IndexServiceStub(self._channel)
        self._health_check = self._channel.unary_unary(
            _health.CHECK_METHOD,
            request_serializer=_health.HealthCheckRequest.SerializeToString,
            response_deserializer=_health.HealthCheckResponse.FromString,
        )

    # -- lifecycle ----------------------------------------------------------------------------------

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "TandemClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TandemClient({self.address!r})"

    # -- calls --------------------------------------------------------------------------------------

    def search(
        self,
        text: str | None = None,
        terms: Terms | None = None,
        *,
        mode: str | int = "or",
        k: int = 10,
        k1: float | None = None,
        b: float | None = None,
        engine: str | int = "auto",
        request_id: str = "",
        fields: Sequence[str] = (),
        snippet_bytes: int = 0,
        filter: FilterLike | None = None,
        timeout=_DEFAULT,
    ) -> SearchResult:
        """Runs one query: free `text`, or pre-analyzed `terms` (["t1", ("t2", 2.0)] or {"t": w}).

        mode: "or", "and" or "and_or"; k: hits wanted (the server accepts 1..10000; 0 means 10);
        k1, b: BM25 parameters (None: the server's defaults); engine: "auto", "cpu" or "gpu";
        fields: stored fields each hit carries (["title", "subject"], or ["*"] for all);
        snippet_bytes: a snippet of each hit's text with the query terms highlighted, at most this
        long (indexes built with --store-text; 0 for none);
        filter: the hits are the top k of the documents this filter on their attributes allows,
        scores unchanged (indexes built with --attributes): its text form,
        'label = spam AND year >= 2002', or a tree, {"and": [("label", "=", "spam"),
        ("year", ">=", 2002)]}, of ("field", "=" / "!=" / "in" / ">=" / ">" / "<=" / "<", value),
        ("field", "range", lo, hi), {"and": [...]}, {"or": [...]} and {"not": ...} (see
        tandem_client.filters). A tree of the wrong shape raises ValueError; an unknown field or
        value is TandemError INVALID_ARGUMENT.
        """
        query = Query(text=text, terms=terms, mode=mode, k=k, k1=k1, b=b, engine=engine,
                      request_id=request_id, fields=fields, snippet_bytes=snippet_bytes,
                      filter=filter)
        response = self._unary(self._stub.Search, query.to_proto(), timeout)
        return SearchResult.from_proto(response)

    def search_batch(
        self, queries: Iterable[QueryLike], *, timeout=_DEFAULT, **defaults
    ) -> list[SearchResult | TandemError]:
        """Runs many queries in one call; returns one entry per query, in order.

        Each query is a str (its text), a Query, or a dict of search() arguments; `defaults` (mode=,
        k=, filter=, ...) apply to str and dict queries. Queries fail on their own: a failed one's
        entry is a TandemError (returned, not raised). The call raises TandemError only when it
        fails as a whole (too many queries, deadline).
        """
        request = search_pb2.SearchBatchRequest(
            requests=[to_query(q, defaults).to_proto() for q in queries]
        )
        response = self._unary(self._stub.SearchBatch, request, timeout)
        if len(response.results) != len(request.requests):
            raise TandemError(
                None,
                f"server answered {len(response.results)} results for {len(request.requests)} queries",
                code="INTERNAL",
            )
        out: list[SearchResult | TandemError] = []
        for req, result in zip(request.requests, response.results):
            if result.status.code != 0:
                out.append(TandemError.from_query_status(result.status, req.request_id))
            else:
                out.append(SearchResult.from_proto(result.response))
        return out

    def stream(
        self, queries: Iterable[QueryLike], *, timeout: float | None = None, **defaults
    ) -> Iterator[SearchResult | TandemError]:
        """Sends queries over one SearchStream; yields one entry per query, in order, as they arrive.

        Queries are taken as in search_batch() and may come from a generator that produces them
        while results are read. A query without a request_id gets its position ("0", "1", ...). A
        failed query yields a TandemError (the stream goes on); a failed stream raises TandemError.
        The stream has no deadline unless `timeout` (seconds, for the whole stream) is given.
        """
        bad_query: list[BaseException] = []

        def requests() -> Iterator[search_pb2.SearchRequest]:
            # grpc pulls this generator on its own thread; an exception here would only cancel the
            # call, so it is kept and raised to the caller once the responses run out.
            try:
                for i, item in enumerate(queries):
                    query = to_query(item, defaults)
                    if not query.request_id:
                        query = dataclasses.replace(query, request_id=str(i))
                    yield query.to_proto()
            except Exception as e:  # noqa: BLE001  (re-raised below, in the caller's thread)
                bad_query.append(e)

        call = self._stub.SearchStream(
            requests(),
            timeout=timeout,
            metadata=self._metadata,
            wait_for_ready=self._wait_for_ready,
        )
        try:
            for response in call:
                if response.status.code != 0:
                    yield TandemError.from_query_status(response.status, response.request_id)
                else:
                    result = SearchResult.from_proto(response.response)
                    if not result.request_id:
                        result = dataclasses.replace(result, request_id=response.request_id)
                    yield result
        except grpc.RpcError as e:
            raise TandemError.from_rpc_error(e) from None
        finally:
            call.cancel()  # a no-op once the stream has ended; frees it if the caller stopped early
        if bad_query:
            raise bad_query[0]

    def info(self, *, timeout=_DEFAULT) -> IndexInfo:
        """The index this node serves."""
        return IndexInfo.from_proto(
            self._unary(self._stub.GetIndexInfo, search_pb2.GetIndexInfoRequest(), timeout)
        )

    def load_index(self, path: str, *, timeout: float | None = 600.0) -> LoadedIndex:
        """Switches the node to the index at `path` (a directory on the node) without a restart
        (IndexService.LoadIndex). The node opens, checks and warms it first, which takes seconds on
        a large index: hence the long default deadline. Raises TandemError (FAILED_PRECONDITION on a
        read-only node, NOT_FOUND or DATA_LOSS for a missing or damaged index) and leaves the
        serving index in place."""
        return LoadedIndex.from_proto(
            self._unary(self._indexes.LoadIndex, index_pb2.LoadIndexRequest(path=path), timeout)
        )

    # -- writes (IndexService) ----------------------------------------------------------------------

    def write(self, operations: Iterable[OperationLike], *, batch_size: int = 256,
              timeout: float | None = 600.0) -> WriteResult:
        """Streams `operations` ({"index": document} or {"delete": id}, each with an optional
        "version"; see tandem_client.writes) over one Write call, `batch_size` a message, in order.

        The node applies them in order; acknowledged ones are durable and searchable within its
        --refresh-interval (refresh() makes them searchable at once). A bad document is refused
        (WriteResult.errors) and the rest still apply. Raises TandemError for a failed call
        (FAILED_PRECONDITION on a node that takes no writes, RESOURCE_EXHAUSTED for a full disk:
        what was acknowledged before stays), and ValueError for an operation that is no operation:
        the stream ends before it, and the operations sent before it are written.
        """
        requests = WriteRequests(operations, batch_size)
        try:
            response = self._indexes.Write(
                iter(requests), timeout=timeout, metadata=self._metadata,
                wait_for_ready=self._wait_for_ready)
        except grpc.RpcError as e:
            raise TandemError.from_rpc_error(e) from None
        if requests.error is not None:
            raise ValueError(f"{requests.error} (the {requests.sent} operations before it were "
                             f"written: {response.acknowledged} acknowledged)")
        return WriteResult.from_proto(response)

    def index_documents(self, documents: Iterable[Mapping[str, Any]], *, batch_size: int = 256,
                        timeout: float | None = 600.0) -> WriteResult:
        """Adds or replaces documents ({"id", "text", "fields", "attributes"}, and an optional
        "version"), as write() does."""
        def operations():
            for doc in documents:
                if isinstance(doc, Mapping) and "version" in doc:
                    rest = {k: v for k, v in doc.items() if k != "version"}
                    yield {"index": rest, "version": doc["version"]}
                else:
                    yield {"index": doc}
        return self.write(operations(), batch_size=batch_size, timeout=timeout)

    def delete(self, ids: str | Iterable[str], *, timeout=_DEFAULT) -> WriteResult:
        """Deletes documents by id; an id the node does not hold counts in not_found."""
        if isinstance(ids, str):
            ids = [ids]
        return self.write(({"delete": i} for i in ids),
                          timeout=self.timeout if timeout is _DEFAULT else timeout)

    def refresh(self, *, timeout: float | None = 600.0) -> RefreshResult:
        """Makes every acknowledged write searchable now. It inverts every buffered document,
        which takes seconds after a large write: hence the long default deadline."""
        r = self._unary(self._indexes.Refresh, index_pb2.RefreshRequest(), timeout)
        return RefreshResult(documents=r.documents, segments=r.segments)

    def flush(self, *, timeout: float | None = 600.0) -> int:
        """Refresh, then a durable commit point (the write-ahead log before it is dropped); returns
        the commit point's generation."""
        return self._unary(self._indexes.Flush, index_pb2.FlushRequest(), timeout).generation

    def index_stats(self, *, timeout=_DEFAULT) -> IndexStats:
        """The live index's counts; writable is False on a node that takes no writes."""
        return IndexStats.from_proto(
            self._unary(self._indexes.GetIndexStats, index_pb2.GetIndexStatsRequest(), timeout))

    def health(self, service: str = "", *, timeout=_DEFAULT) -> str:
        """grpc.health.v1 status of `service` ("" is the whole server): "SERVING", "NOT_SERVING", ..."""
        response = self._unary(self._health_check, _health.HealthCheckRequest(service=service), timeout)
        return _health.status_name(response)

    def wait_until_serving(self, timeout: float = 30.0, service: str = "") -> None:
        """Polls health() until SERVING; raises TandemError(DEADLINE_EXCEEDED) after `timeout` s."""
        deadline = time.monotonic() + timeout
        last = "no answer"
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TandemError(
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                    f"{self.address} not SERVING after {timeout:g} s (last: {last})",
                )
            try:
                last = self.health(service, timeout=min(remaining, 5.0))
                if last == "SERVING":
                    return
            except TandemError as e:
                last = str(e)
            time.sleep(min(0.05, max(remaining, 0.0)))

    # -- standing queries ---------------------------------------------------------------------------

    def subscribe(self, interface: str, predicate, *, timeout=_DEFAULT) -> Subscription:
        """Registers a standing query for `interface` (a subscriber's name); returns it with its id.

        predicate: the text form ('terms contains "gas price" AND year >= 2001'), or a dict of
        filters ({"filters": [[("year", ">=", 2001)], ...]}; see tandem_client.subscriptions).
        The returned predicate_text is the node's normalized form (`contains` analyzed into terms).
        """
        request = subscription_pb2.SubscribeRequest(interface=interface)
        if isinstance(predicate, str):
            request.predicate_text = predicate
        else:
            request.predicate.CopyFrom(predicate_to_proto(predicate))
        response = self._unary(self._subscriptions.Subscribe, request, timeout)
        return Subscription(response.id, interface, response.predicate_text)

    def unsubscribe(self, subscription_id: int | Subscription, *, timeout=_DEFAULT) -> None:
        """Removes a subscription; TandemError NOT_FOUND for an unknown id."""
        if isinstance(subscription_id, Subscription):
            subscription_id = subscription_id.id
        self._unary(self._subscriptions.Unsubscribe,
                    subscription_pb2.UnsubscribeRequest(id=subscription_id), timeout)

    def list_subscriptions(self, interface: str = "", *, timeout=_DEFAULT) -> list[Subscription]:
        """The subscriptions of `interface` ("" for every interface), by id."""
        response = self._unary(self._subscriptions.ListSubscriptions,
                               subscription_pb2.ListSubscriptionsRequest(interface=interface),
                               timeout)
        return [Subscription.from_proto(s) for s in response.subscriptions]

    def match(self, documents: Iterable[DocumentLike], *, timeout=_DEFAULT) -> MatchResult:
        """Matches documents (dicts {"id", "text", "attributes"} or Documents) against every
        subscription; returns each one's interfaces, in order. Matched documents also go to the
        interfaces' watch() streams. The server takes at most --max-match-documents (1024) a call.
        """
        return MatchResult.from_proto(
            self._unary(self._subscriptions.Match, documents_to_proto(documents), timeout))

    def watch(self, interface: str, *, timeout: float | None = None) -> "Watch":
        """Streams the documents that Match calls match for `interface`, as they are matched.

        Returns once the node has registered the watch (every later match is seen): an iterator of
        WatchEvent that ends when the node drains, and raises TandemError if the stream fails. Stop
        it with cancel(), or use it as a context manager. `timeout` (seconds) bounds the whole
        stream; None: no deadline.
        """
        call = self._subscriptions.Watch(
            subscription_pb2.WatchRequest(interface=interface),
            timeout=timeout,
            metadata=self._metadata,
            wait_for_ready=self._wait_for_ready,
        )
        return Watch(call)

    # -- helpers ------------------------------------------------------------------------------------

    def _unary(self, method, request, timeout):
        if timeout is _DEFAULT:
            timeout = self.timeout
        try:
            return method(
                request, timeout=timeout, metadata=self._metadata, wait_for_ready=self._wait_for_ready
            )
        except grpc.RpcError as e:
            raise TandemError.from_rpc_error(e) from None


class Watch:
    """An open Watch stream: iterate it for WatchEvents; cancel() (or leave the `with`) to stop."""

    def __init__(self, call):
        self._call = call
        self._cancelled = False
        try:
            # The node sends the stream's initial metadata once the watch is registered.
            call.initial_metadata()
        except grpc.RpcError as e:
            raise TandemError.from_rpc_error(e) from None
        if not call.is_active() and call.code() != grpc.StatusCode.OK:
            raise TandemError(call.code(), call.details() or "")

    def __iter__(self) -> "Watch":
        return self

    def __next__(self) -> WatchEvent:
        try:
            return WatchEvent.from_proto(next(self._call))
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.CANCELLED and self._cancelled:
                raise StopIteration from None
            raise TandemError.from_rpc_error(e) from None

    def cancel(self) -> None:
        self._cancelled = True
        self._call.cancel()

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc) -> None:
        self.cancel()


__all__ = ["TandemClient", "Watch"]

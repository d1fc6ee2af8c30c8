"""Python client of the Tandem query node (gRPC services tandem.v1.SearchService,
tandem.v1.SubscriptionService and tandem.v1.IndexService).

    from tandem_client import TandemClient, TandemError

    with TandemClient("127.0.0.1:50051") as client:
        print(client.info().documents, "documents")
        for hit in client.search("hubble telescope", mode="and_or", k=5).hits:
            print(f"{hit.score:8.3f}  {hit.external_id}")
        client.subscribe("alice", 'terms contains "telescope" AND year >= 2001')
        for m in client.match([{"id": "n1", "text": "a new telescope", "attributes": {"year": 2024}}]):
            print(m.document_id, m.interfaces)
"""

from .client import TandemClient, Watch
from .errors import TandemError
from .messages import (
    ENGINES,
    MODES,
    Hit,
    IndexInfo,
    LoadedIndex,
    Query,
    QueryStats,
    SearchResult,
    Snippet,
)
from .writes import IndexStats, RefreshResult, WriteError, WriteResult
from .subscriptions import (
    Constraint,
    Document,
    DocumentMatch,
    MatchResult,
    Subscription,
    WatchEvent,
)

__all__ = [
    "ENGINES",
    "MODES",
    "Constraint",
    "Document",
    "DocumentMatch",
    "Hit",
    "IndexInfo",
    "IndexStats",
    "LoadedIndex",
    "MatchResult",
    "Query",
    "QueryStats",
    "RefreshResult",
    "SearchResult",
    "Snippet",
    "Subscription",
    "TandemClient",
    "TandemError",
    "Watch",
    "WatchEvent",
    "WriteError",
    "WriteResult",
]

"""Python client of the Tandem query node (gRPC service tandem.v1.SearchService).

    from tandem_client import TandemClient, TandemError

    with TandemClient("127.0.0.1:50051") as client:
        print(client.info().documents, "documents")
        for hit in client.search("hubble telescope", mode="and_or", k=5).hits:
            print(f"{hit.score:8.3f}  {hit.external_id}")
"""

from .client import TandemClient
from .errors import TandemError
from .messages import ENGINES, MODES, Hit, IndexInfo, Query, QueryStats, SearchResult, Snippet

__all__ = [
    "ENGINES",
    "MODES",
    "Hit",
    "IndexInfo",
    "Query",
    "QueryStats",
    "SearchResult",
    "Snippet",
    "TandemClient",
    "TandemError",
]

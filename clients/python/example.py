#!/usr/bin/python3
"""Asks a Tandem query node one query in every mode and prints the ranked hits; with --filter, only
among the documents whose attributes the filter allows; with --standing, also keeps the query as a
standing query and matches a new document against it.

    /usr/bin/python3 clients/python/example.py --server 127.0.0.1:50051 "black bear attacks"
    /usr/bin/python3 clients/python/example.py --filter "label = spam AND year >= 2002" "free money"
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tandem_client import MODES, TandemClient, TandemError  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("query", help="free-text query")
    parser.add_argument("--server", default="127.0.0.1:50051", help="host:port (default %(default)s)")
    parser.add_argument("--k", type=int, default=10, help="hits per mode (default %(default)s)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated (default %(default)s)")
    parser.add_argument("--engine", default="auto", choices=["auto", "cpu", "gpu"])
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per call")
    parser.add_argument("--filter", help="filter on the documents' attributes, e.g. "
                        "'label = spam AND year >= 2002' (an index built with --attributes)")
    parser.add_argument("--tls", action="store_true", help="connect with TLS")
    parser.add_argument("--ca", help="PEM file of the CA that signed the server's certificate (with --tls)")
    parser.add_argument("--standing", action="store_true",
                        help="subscribe to the query (interface 'example'), match a document, unsubscribe")
    args = parser.parse_args()

    try:
        client = TandemClient(args.server, timeout=args.timeout, tls=args.tls, root_certificates=args.ca)
        with client:
            info = client.info()
            print(f"{args.server}: {info.documents} documents, {info.terms} terms, codec {info.codec}, "
                  f"engines {', '.join(info.engines)} (health: {client.health()})")
            for mode in args.modes.split(","):
                start = time.perf_counter()
                result = client.search(args.query, mode=mode, k=args.k, engine=args.engine,
                                       fields=["title", "subject"], filter=args.filter)
                elapsed_ms = (time.perf_counter() - start) * 1000
                s = result.stats
                print(f"\n== {mode}{' where ' + args.filter if args.filter else ''}: "
                      f"{len(result.hits)} hits in {elapsed_ms:.1f} ms "
                      f"(ran as {s.executed_mode} on {s.engine}, server {s.total_micros} us, "
                      f"terms {' '.join(s.terms) or '-'})")
                for rank, hit in enumerate(result.hits, 1):
                    print(f"{rank:4d}. {hit.score:9.4f}  {hit.external_id}  (docid {hit.docid})")
                    heading = hit.field("title") or hit.field("subject")
                    if heading:
                        print(f"{'':16}{heading[:100]}")
            if args.standing:
                words = args.query.replace('"', " ")
                s = client.subscribe("example", f'terms contains "{words}"')
                print(f"\n== standing query {s.id}: {s.predicate_text}")
                for m in client.match([{"id": "new-1", "text": args.query},
                                       {"id": "new-2", "text": "nothing in common"}]):
                    print(f"  {m.document_id}: {', '.join(m.interfaces) or '(no interface)'}")
                client.unsubscribe(s)
    except TandemError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Makes the Python client (clients/python) importable by the tests beside this file, or exits 77
(ctest's SKIP_RETURN_CODE) where grpcio or protobuf cannot be imported. A test imports it first:

    import client_env  # noqa: F401
    from tandem_client import TandemClient
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "clients" / "python"))

try:
    import google.protobuf  # noqa: F401
    import grpc  # noqa: F401
except ImportError as e:
    print(f"SKIP: {e} (the Python client needs grpcio and protobuf; try /usr/bin/python3)")
    sys.exit(77)

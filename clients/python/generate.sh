#!/bin/sh
# Generates the protobuf/gRPC modules of tandem/v1/*.proto into tandem_client/gen/ (git-ignored;
# never commit generated code). Safe to run concurrently and repeatedly: it does nothing when the stubs
# are up to date. Options: --force, --check, --quiet. PYTHON selects the interpreter (default
# /usr/bin/python3, whose packages include Debian's grpcio); PROTOC and GRPC_PYTHON_PLUGIN select the
# compiler when the interpreter's grpc_tools is too old for proto3 `optional`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec "${PYTHON:-/usr/bin/python3}" "$here/tandem_client/_codegen.py" "$@"

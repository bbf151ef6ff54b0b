#!/bin/bash
# The planner API from Python (python3-grpcio, python3-protobuf; stubs made
# here from proto/ with protoc + grpc_python_plugin): the server's Predict and
# `moetune predict` give identical answers. See predict_client.py.
set -u
RUNFILES="${TEST_SRCDIR:-$(dirname "$0")}/${TEST_WORKSPACE:-moetune}"
if ! /usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null; then
  echo "FAIL: /usr/bin/python3 lacks grpcio/protobuf (run tools/setup.sh)"
  exit 1
fi
WORK="${TEST_TMPDIR:-$(mktemp -d)}/python_client"
mkdir -p "$WORK"
exec /usr/bin/python3 "$RUNFILES/tests/python_client/predict_client.py" \
  "$RUNFILES/server/moetune-server" "$RUNFILES/tools/moetune" "$RUNFILES" "$WORK"

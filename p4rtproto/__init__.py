"""The one P4Runtime layer the controller, the p4sim server and the targets stand on.

- this module: the generated classes (finsy 0.30's stubs, protobuf >= 6), imported only here;
- `entities`: the shared vocabulary (table entries and their matches, cells, PRE entries);
- `schema`: a P4Info indexed, names <-> ids, with kinds and bitwidths;
- `codec`: entities <-> P4Runtime messages, both directions, with the spec's byte rules;
- `errors`: one P4RuntimeError (code, message, per-update errors) for both ends;
- `client`: the connection (TLS, arbitration, stream, Write/Read, packet I/O);
- `afpacket`: AF_PACKET sockets with the VLAN-tag restore, for every reader of an interface.

A package of its own so that p4sim (the server) and controller (the client) both import it
without either depending on the other (it imports neither: tests/controller/
test_import_boundary.py). Only the stubs finsy generated are imported: loading
googleapis-common-protos' google.rpc too would register google/rpc/status.proto twice in the
default descriptor pool.
"""

from finsy.proto.google.rpc import code_pb2, status_pb2
from finsy.proto.p4.config.v1 import p4info_pb2
from finsy.proto.p4.v1 import p4data_pb2, p4runtime_pb2, p4runtime_pb2_grpc

__all__ = [
    "code_pb2",
    "p4data_pb2",
    "p4info_pb2",
    "p4runtime_pb2",
    "p4runtime_pb2_grpc",
    "status_pb2",
]

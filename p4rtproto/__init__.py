"""The one place the generated P4Runtime classes come from (finsy 0.30's stubs, protobuf >= 6).

A package of its own so that p4sim (the server) and controller (the client) both import it
without either depending on the other. Only the stubs finsy generated are imported: loading
googleapis-common-protos' google.rpc too would register google/rpc/status.proto twice in the
default descriptor pool.
"""

from finsy.proto.google.rpc import code_pb2, status_pb2
from finsy.proto.p4.config.v1 import p4info_pb2
from finsy.proto.p4.v1 import p4data_pb2, p4runtime_pb2, p4runtime_pb2_grpc

__all__ = ["code_pb2", "p4data_pb2", "p4info_pb2", "p4runtime_pb2", "p4runtime_pb2_grpc", "status_pb2"]

"""One error type for both ends of P4Runtime: a gRPC status code name, a message, and for a
failed Write the per-update errors (P4Runtime 1.4 section 12.4: a google.rpc.Status whose
details are one p4.v1.Error per update, in request order, OK for the ones applied).

The server raises it for a request it refuses and turns it into a status (`write_status`);
the client turns a failed RPC back into it (`from_rpc_error`).
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc
from google.protobuf import any_pb2

from p4rtproto import code_pb2, p4runtime_pb2, status_pb2

# the trailer that carries a google.rpc.Status (gRPC's "rich error model")
STATUS_DETAILS_KEY = "grpc-status-details-bin"
# clients cap received metadata (gRPC's default: 8 KiB soft, 16 KiB hard): past this many
# bytes of messages, later per-update errors keep only their code
DETAILS_MESSAGE_BUDGET = 8192


class P4RuntimeError(Exception):
    """A refused request. `code` is a grpc.StatusCode name ("NOT_FOUND"), `message` one line;
    `updates` is [(code name, message)] per update of a failed Write ("OK" for applied ones)
    when the server reported them."""

    def __init__(self, code: str, message: str, updates: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.updates = list(updates)


# The server's spelling: what a handler raises for a request it refuses (the same type).
RequestError = P4RuntimeError


def invalid(message: str) -> P4RuntimeError:
    return P4RuntimeError("INVALID_ARGUMENT", message)


def rpc_code(name: str) -> int:
    """A status code name as google.rpc.Code's number (UNKNOWN for a name it lacks)."""
    return code_pb2.Code.Value(name) if name in code_pb2.Code.keys() else code_pb2.UNKNOWN


def grpc_code(name: str) -> grpc.StatusCode:
    return getattr(grpc.StatusCode, name, grpc.StatusCode.UNKNOWN)


def write_status(results: Sequence[P4RuntimeError | None]) -> status_pb2.Status:
    """The status of a Write in which some updates failed: code UNKNOWN (the spec's choice
    for a batch), one p4.v1.Error per update (None: applied, OK)."""
    status = status_pb2.Status(code=code_pb2.UNKNOWN, message="write failed for some updates")
    budget = DETAILS_MESSAGE_BUDGET
    for r in results:
        err = p4runtime_pb2.Error(canonical_code=code_pb2.OK)
        if r is not None:
            err.canonical_code = rpc_code(r.code)
            if budget > 0:
                err.message = r.message
                budget -= len(r.message)
        detail = any_pb2.Any()
        detail.Pack(err)
        status.details.append(detail)
    if len(results) == 1 and results[0] is not None:
        status.message = results[0].message
    return status


def update_errors(status: status_pb2.Status) -> list[tuple[str, str]]:
    """(code name, message) of each p4.v1.Error in a status' details."""
    out: list[tuple[str, str]] = []
    for any_ in status.details:
        e = p4runtime_pb2.Error()
        if any_.Unpack(e):
            name = (
                code_pb2.Code.Name(e.canonical_code)
                if e.canonical_code in code_pb2.Code.values()
                else "UNKNOWN"
            )
            out.append((name, e.message))
    return out


def from_rpc_error(err: grpc.RpcError) -> P4RuntimeError:
    """A failed RPC as a P4RuntimeError. A Write's per-update errors come from its status
    details; when every failed update failed the same way, that is the error's code (the
    batch itself answers UNKNOWN)."""
    code = err.code().name if hasattr(err, "code") else "UNKNOWN"
    details = err.details() if hasattr(err, "details") else str(err)
    updates: list[tuple[str, str]] = []
    trailer = err.trailing_metadata() if hasattr(err, "trailing_metadata") else None
    for key, value in trailer or ():
        if key == STATUS_DETAILS_KEY:
            st = status_pb2.Status()
            try:
                st.ParseFromString(value)
            except Exception:  # a malformed trailer from a foreign server: keep the code
                continue
            updates += update_errors(st)
    failed = [(c, m) for c, m in updates if c != "OK"]
    if failed:
        details = f"{details} [{'; '.join(f'{c}: {m}' for c, m in failed)}]"
    codes = {c for c, _ in failed}
    if code == "UNKNOWN" and len(codes) == 1:
        code = codes.pop()
    return P4RuntimeError(code, f"P4Runtime {code}: {details}", updates)

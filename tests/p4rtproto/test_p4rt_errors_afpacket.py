"""p4rtproto.errors (a Write's per-update status, built by the server, read by the client) and
p4rtproto.afpacket's VLAN restore (the one both p4sim-switch and the controller's ports run;
the two former copies disagreed on a tag reported by its TCI alone)."""

from __future__ import annotations

import socket
import struct

import grpc

from p4rtproto import afpacket, status_pb2
from p4rtproto.errors import P4RuntimeError, from_rpc_error, update_errors, write_status


class FakeRpcError(grpc.RpcError):
    """What grpc raises for a failed call: code, details and trailing metadata."""

    def __init__(self, code: grpc.StatusCode, details: str, trailer=()):
        self._code, self._details, self._trailer = code, details, trailer

    def code(self):
        return self._code

    def details(self):
        return self._details

    def trailing_metadata(self):
        return self._trailer


def test_write_status_round_trip() -> None:
    results = [
        None,
        P4RuntimeError("ALREADY_EXISTS", "entry exists"),
        None,
        P4RuntimeError("NOT_FOUND", "no table with id 7"),
    ]
    status = write_status(results)
    assert status.code == 2  # UNKNOWN: the batch
    assert update_errors(status) == [
        ("OK", ""),
        ("ALREADY_EXISTS", "entry exists"),
        ("OK", ""),
        ("NOT_FOUND", "no table with id 7"),
    ]
    wire = status_pb2.Status.FromString(status.SerializeToString())
    err = from_rpc_error(
        FakeRpcError(
            grpc.StatusCode.UNKNOWN,
            status.message,
            (("grpc-status-details-bin", wire.SerializeToString()),),
        )
    )
    assert err.code == "UNKNOWN"  # two different failures: the batch's code stays
    assert len(err.updates) == 4 and err.updates[1] == ("ALREADY_EXISTS", "entry exists")
    assert "ALREADY_EXISTS: entry exists; NOT_FOUND: no table with id 7" in err.message


def test_one_kind_of_failure_is_the_errors_code() -> None:
    status = write_status([None, P4RuntimeError("ALREADY_EXISTS", "dup")])
    err = from_rpc_error(
        FakeRpcError(
            grpc.StatusCode.UNKNOWN,
            status.message,
            (("grpc-status-details-bin", status.SerializeToString()),),
        )
    )
    assert err.code == "ALREADY_EXISTS" and str(err) == err.message
    single = write_status([P4RuntimeError("NOT_FOUND", "gone")])
    assert single.message == "gone"  # one update: its message is the status' message


def test_messages_past_the_budget_keep_only_their_code() -> None:
    many = [P4RuntimeError("INVALID_ARGUMENT", "x" * 1000) for _ in range(20)]
    got = update_errors(write_status(many))
    assert all(c == "INVALID_ARGUMENT" for c, _ in got)
    assert got[0][1] == "x" * 1000 and got[-1][1] == ""  # later messages dropped, codes kept
    assert sum(len(m) for _, m in got) < 10_000


def test_a_plain_rpc_error_and_a_bad_trailer() -> None:
    err = from_rpc_error(FakeRpcError(grpc.StatusCode.PERMISSION_DENIED, "not primary"))
    assert (err.code, err.message, err.updates) == (
        "PERMISSION_DENIED",
        "P4Runtime PERMISSION_DENIED: not primary",
        [],
    )
    bad = from_rpc_error(
        FakeRpcError(grpc.StatusCode.UNKNOWN, "x", (("grpc-status-details-bin", b"\xff\xff"),))
    )
    assert bad.code == "UNKNOWN" and bad.updates == []


# ---------------------------------------------------------------- VLAN restore

FRAME = bytes.fromhex("0200000000020200000000010800") + bytes(50)


def aux(status: int, tci: int, tpid: int = 0) -> list:
    data = afpacket.AUXDATA.pack(status, len(FRAME), len(FRAME), 0, 14, tci, tpid)
    return [(afpacket.SOL_PACKET, afpacket.PACKET_AUXDATA, data)]


def tag(frame: bytes) -> bytes:
    return frame[12:16]


def test_vlan_restored_from_the_flag() -> None:
    out = afpacket.restore_vlan(FRAME, aux(afpacket.TP_STATUS_VLAN_VALID, 0x6005))
    assert tag(out) == struct.pack("!HH", 0x8100, 0x6005) and out[16:] == FRAME[12:]
    assert len(out) == len(FRAME) + 4


def test_vlan_zero_tci_with_the_flag_is_a_tag() -> None:
    """Priority-tagged frames (VID 0, PCP 0) still carry a tag on the wire."""
    out = afpacket.restore_vlan(FRAME, aux(afpacket.TP_STATUS_VLAN_VALID, 0))
    assert tag(out) == b"\x81\x00\x00\x00"


def test_vlan_tci_without_the_flag_is_a_tag() -> None:
    """Kernels before 3.0 set no flag: libpcap (VLAN_VALID) takes a non-zero TCI as a tag.
    The controller's former copy dropped this tag."""
    out = afpacket.restore_vlan(FRAME, aux(0, 0x0064))
    assert tag(out) == b"\x81\x00\x00\x64"


def test_vlan_tpid_as_reported() -> None:
    qinq = afpacket.restore_vlan(
        FRAME,
        aux(afpacket.TP_STATUS_VLAN_VALID | afpacket.TP_STATUS_VLAN_TPID_VALID, 0x0010, 0x88A8),
    )
    assert tag(qinq) == b"\x88\xa8\x00\x10"
    unflagged = afpacket.restore_vlan(FRAME, aux(afpacket.TP_STATUS_VLAN_VALID, 0x0010, 0x88A8))
    assert tag(unflagged) == b"\x88\xa8\x00\x10"  # libpcap's VLAN_TPID: a non-zero TPID is used


def test_no_tag_no_change() -> None:
    assert afpacket.restore_vlan(FRAME, aux(0, 0)) == FRAME
    assert afpacket.restore_vlan(FRAME, []) == FRAME
    short = [(afpacket.SOL_PACKET, afpacket.PACKET_AUXDATA, b"\x10\x00")]
    assert afpacket.restore_vlan(FRAME, short) == FRAME
    other = [
        (socket.SOL_SOCKET, afpacket.PACKET_AUXDATA, aux(afpacket.TP_STATUS_VLAN_VALID, 5)[0][2])
    ]
    assert afpacket.restore_vlan(FRAME, other) == FRAME

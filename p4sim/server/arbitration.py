"""Arbitration and roles: which stream of which role is primary (P4Runtime spec
section 5: election ids, the highest one kept after its primary leaves), the checks a
request's (role, election id) must pass, and the answers each stream of a role gets."""

from __future__ import annotations

import logging
from typing import Any

from p4rtproto import code_pb2, p4runtime_pb2
from p4rtproto.errors import RequestError
from p4sim.server.stream import _Stream, _StreamAbort

log = logging.getLogger("p4sim.server")


def _election(msg: Any) -> int:
    return (msg.high << 64) | msg.low


class _Role:
    def __init__(self) -> None:
        self.streams: list[_Stream] = []
        self.highest: int | None = (
            None  # highest election id ever seen (spec: kept after the primary leaves)
        )
        self.primary: _Stream | None = None


class Arbitration:
    """Arbitration and roles of P4RuntimeServer (its state lives in the server)."""

    def _send_primaries(self, msg: Any) -> None:
        for role in self._roles.values():
            if role.primary is not None and not role.primary.send_packet(msg):
                if not self.packet_in_dropped:
                    log.warning("a controller does not read its stream: PacketIns dropped")
                self.packet_in_dropped += 1

    def _check_primary(self, request: Any) -> None:
        eid = _election(request.election_id) if request.HasField("election_id") else None
        self._check_primary_id(request.role, eid)

    def _check_primary_id(self, role_name: str, eid: int | None) -> None:
        role = self._roles.get(role_name)
        if role is None or role.primary is None:
            raise RequestError(
                "PERMISSION_DENIED",
                "no primary controller: open a StreamChannel and win arbitration first",
            )
        if eid != role.primary.election_id:
            raise RequestError(
                "PERMISSION_DENIED",
                f"election id {eid} is not the primary's ({role.primary.election_id})",
            )

    def _arbitrate(self, stream: _Stream, arb: Any) -> None:
        with self._lock:
            if arb.device_id != self.device_id:
                raise _StreamAbort(
                    "NOT_FOUND",
                    f"device id {arb.device_id} does not exist (this is device {self.device_id})",
                )
            if arb.HasField("role") and arb.role.HasField("config"):
                raise _StreamAbort("UNIMPLEMENTED", "p4sim does not support role configs")
            role_name = arb.role.name if arb.HasField("role") else ""
            if stream.arbitrated and role_name != stream.role:
                raise _StreamAbort("FAILED_PRECONDITION", "a stream cannot change its role")
            eid = _election(arb.election_id) if arb.HasField("election_id") else None
            role = self._roles.setdefault(role_name, _Role())
            if eid is not None and any(
                s is not stream and s.election_id == eid for s in role.streams
            ):
                raise _StreamAbort(
                    "INVALID_ARGUMENT", f"election id {eid} is already used by another controller"
                )
            stream.role, stream.election_id = role_name, eid
            if not stream.arbitrated:
                stream.arbitrated = True
                role.streams.append(stream)
            old_primary = role.primary
            if eid is not None and (role.highest is None or eid >= role.highest):
                role.highest = eid
            role.primary = next(
                (
                    s
                    for s in role.streams
                    if s.election_id is not None and s.election_id == role.highest
                ),
                None,
            )
            if role.primary is not old_primary:
                for s in role.streams:
                    s.send_control(self._arbitration_msg(role, s, role_name))
            else:
                stream.send_control(self._arbitration_msg(role, stream, role_name))

    def _arbitration_msg(self, role: _Role, stream: _Stream, role_name: str) -> Any:
        msg = p4runtime_pb2.StreamMessageResponse()
        a = msg.arbitration
        a.device_id = self.device_id
        if role_name:
            a.role.name = role_name
        if role.highest is not None:
            a.election_id.high, a.election_id.low = (
                role.highest >> 64,
                role.highest & ((1 << 64) - 1),
            )
        if role.primary is stream:
            a.status.code, a.status.message = code_pb2.OK, "you are the primary"
        elif role.primary is not None:
            a.status.code, a.status.message = (
                code_pb2.ALREADY_EXISTS,
                "another controller is the primary",
            )
        else:
            a.status.code, a.status.message = code_pb2.NOT_FOUND, "there is no primary"
        return msg

    def _drop_stream(self, stream: _Stream) -> None:
        with self._lock:
            role = self._roles.get(stream.role)
            if role is None or stream not in role.streams:
                return
            role.streams.remove(stream)
            if role.primary is stream:
                role.primary = None
                for s in role.streams:
                    s.send_control(self._arbitration_msg(role, s, stream.role))

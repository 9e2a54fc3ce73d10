"""PacketOut in, PacketIn and digests out: a PacketOut's bytes split without protobuf
where its header is one already checked (_packet_out_fast), the PacketIn message built from
the packet_in header's bytes (packet_in_frame, a cached metadata encoding), digest lists and
their acks."""

from __future__ import annotations

import time
from typing import Any

from p4rtproto import codec, p4runtime_pb2
from p4rtproto.errors import RequestError
from p4sim.server import fastwrite
from p4sim.server.pipeline import Pipeline
from p4sim.server.stream import _Stream


def _length_at(data: bytes, i: int) -> tuple[int, int] | None:
    """(value, next index) of the minimal varint at data[i] of at most 4 bytes; None for
    anything else (an overlong varint, which protobuf may read otherwise, takes protobuf)."""
    value = shift = 0
    for j in range(i, min(i + 4, len(data))):
        b = data[j]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return (value, j + 1) if b or j == i else None
        shift += 7
    return None


def split_packet_out(data: bytes) -> tuple[bytes, bytes] | None:
    """(payload, metadata bytes) of a serialized StreamMessageRequest that is one field 2
    (packet) whose PacketOut starts with its payload (field 1) or has none; None for any
    other shape. The metadata bytes are everything after the payload: only after
    `metadata_only` accepted them once may they stand for the metadata list protobuf read."""
    n = len(data)
    if 4 <= n <= 129 and data[0] == 0x12 and data[1] == n - 2 and data[2] == 0x0A:
        # a message under 130 bytes: both lengths are one byte (what _length_at reads there)
        end = data[3] + 4
        if data[3] and end <= n:
            return data[4:end], data[end:]
    if data[:1] != b"\x12":
        return None
    got = _length_at(data, 1)
    if got is None or got[0] + got[1] != len(data):
        return None
    i = got[1]
    if i < len(data) and data[i] == 0x0A:
        got = _length_at(data, i + 1)
        if got is None or got[0] + got[1] > len(data):
            return None
        end = got[0] + got[1]
        return data[got[1] : end], data[end:]
    return b"", data[i:]


def metadata_only(meta: bytes) -> bool:
    """Whether `meta` is a run of field-2 (PacketMetadata) entries and nothing else: then
    a PacketOut's metadata list depends on these bytes alone, not on its payload."""
    i = 0
    while i < len(meta):
        if meta[i] != 0x12:
            return False
        got = _length_at(meta, i + 1)
        if got is None or got[0] + got[1] > len(meta):
            return False
        i = got[0] + got[1]
    return True


def packet_in_frame(metadata: bytes, payload: bytes) -> bytes:
    """A serialized StreamMessageResponse carrying a PacketIn: `metadata` is the
    PacketIn's serialized metadata (cached per value combination), the payload goes in
    front as field 1, as protobuf orders fields. Byte concatenation, no message: the
    test compares it with protobuf's own encoding."""
    if type(payload) is not bytes:
        payload = bytes(payload)
    n = len(payload)
    body = (
        b"\x0a" + (_VARINT[n] if n < _VARINTS else fastwrite.varint_bytes(n)) + payload + metadata
        if n
        else metadata
    )
    n = len(body)
    return b"\x12" + (_VARINT[n] if n < _VARINTS else fastwrite.varint_bytes(n)) + body


_VARINTS = 1 << 14  # lengths up to 16 KiB: their varints looked up, not built


_VARINT = [fastwrite.varint_bytes(n) for n in range(_VARINTS)]


class PacketIO:
    """PacketOut, PacketIn and digests of P4RuntimeServer (its state lives in the server)."""

    def _emit(self, outs: list) -> None:
        # PacketIn (the CPU port) travels through the switch's on_packet_in hook
        if outs:
            self.ports.transmit_many(outs, self.cpu_port)

    def _on_packet_in_frame(self, sw: Any, payload: bytes, head: bytes) -> None:
        """A PacketIn from `sw` with its packet_in header's bytes: as _on_packet_in with
        sw.packet_in_metadata(head), the serialized metadata cached per header bytes."""
        p = self.pipeline
        if p is None:
            return
        meta = p.packet_in_heads.get(head)
        if meta is None:
            meta = self._packet_in_meta(p, sw.packet_in_metadata(head))
            if sw is p.switch:  # (a switch being replaced: not cached for the new pipeline)
                if len(p.packet_in_heads) >= p.PACKET_CACHE:
                    p.packet_in_heads.clear()
                p.packet_in_heads[head] = meta
        self.packet_in_count += 1
        self._send_primaries(packet_in_frame(meta, payload))

    def _on_packet_in(self, data: bytes, metadata: dict[str, int]) -> None:
        p = self.pipeline
        if p is None:
            return
        self.packet_in_count += 1
        self._send_primaries(packet_in_frame(self._packet_in_meta(p, metadata), data))

    @staticmethod
    def _packet_in_meta(p: Pipeline, metadata: dict[str, int]) -> bytes:
        """The serialized PacketIn metadata of a packet_in header's values (cached per values)."""
        hdr = p.maps.packet_in
        key = tuple(metadata.get(f.name) for f in hdr.fields) if hdr is not None else ()
        meta = p.packet_in_templates.get(key)
        if meta is None:  # a new metadata combination: encode its metadata once
            pin = p4runtime_pb2.PacketIn()
            for f, value in zip(hdr.fields if hdr is not None else (), key, strict=True):
                if value is not None:
                    pin.metadata.add(metadata_id=f.id, value=codec.to_bytes(value))
            meta = pin.SerializeToString()
            if len(p.packet_in_templates) >= p.PACKET_CACHE:
                p.packet_in_templates.clear()
            p.packet_in_templates[key] = meta
        return meta

    def _on_digest(self, name: str, values: dict[str, int]) -> None:
        p = self.pipeline
        if p is None:
            return
        did = p.maps.digest_ids.get(name)
        if did is None or did not in p.digest_configs:
            return  # no DigestEntry for it: the controller has not asked for it
        fields = p.maps.digest_fields.get(did, [])
        key = (did, tuple(values.get(f.name, 0) for f in fields))
        now = time.monotonic()
        deadline = self._digest_pending.get(key)
        if deadline is not None and now < deadline:
            return  # already sent, not acked yet: the spec says do not repeat it
        cfg = p.digest_configs[did]
        ack_timeout = cfg.ack_timeout_ns / 1e9 if cfg.ack_timeout_ns else 1.0
        if len(self._digest_pending) > 4096:  # forget expired ones (never acked, never seen again)
            self._digest_pending = {k: d for k, d in self._digest_pending.items() if d > now}
            self._digest_keys_by_list = {
                i: k for i, k in self._digest_keys_by_list.items() if k in self._digest_pending
            }
        self._digest_pending[key] = now + ack_timeout
        self._digest_list_id += 1
        msg = p4runtime_pb2.StreamMessageResponse()
        msg.digest.digest_id = did
        msg.digest.list_id = self._digest_list_id
        msg.digest.timestamp = time.time_ns()
        data = msg.digest.data.add()
        for f in fields:
            data.struct.members.add(bitstring=codec.to_bytes(values.get(f.name, 0)))
        self._digest_keys_by_list[self._digest_list_id] = key
        self._send_primaries(msg)

    def _packet_out_fast(self, stream: _Stream, data: bytes) -> bool:
        """True when `data` is a PacketOut whose metadata bytes are a key _packet_out cached
        (checked already) and it was sent as _packet_out would; False: nothing was done, the
        reference path handles it (errors included)."""
        split = split_packet_out(data)
        if split is None:
            return False
        payload, meta = split
        with self._lock:
            p = self.pipeline
            if p is None or self.cpu_port is None:
                return False
            header = p.packet_out_headers.get(meta)
            if header is None:
                return False
            role = self._roles.get(stream.role)
            if role is None or role.primary is not stream:
                return False
            self.packet_out_count += 1
        self.inject(self.cpu_port, header + payload)
        return True

    def _packet_out(self, stream: _Stream, packet: Any, data: bytes | None = None) -> None:
        key = tuple((m.metadata_id, m.value) for m in packet.metadata)
        with self._lock:
            role = self._roles.get(stream.role)
            if role is None or role.primary is not stream:
                self._stream_error(
                    stream,
                    "PERMISSION_DENIED",
                    "only the primary controller may send PacketOut",
                    packet,
                )
                return
            p = self.pipeline
            if p is None:
                self._stream_error(stream, "FAILED_PRECONDITION", "no forwarding pipeline", packet)
                return
            if self.cpu_port is None:
                self._stream_error(
                    stream,
                    "FAILED_PRECONDITION",
                    "no CPU port: start p4sim-switch with --cpu-port",
                    packet,
                )
                return
            # the header a metadata list makes is cached per pipeline: only lists that
            # passed every check are kept, so a cache hit is a list already checked
            header = p.packet_out_headers.get(key)
            if header is None:
                try:
                    header = self._packet_out_header(p, key)
                except RequestError as exc:
                    self._stream_error(stream, exc.code, exc.message, packet)
                    return
                if len(p.packet_out_headers) >= p.PACKET_CACHE:
                    p.packet_out_headers.clear()
                p.packet_out_headers[key] = header
            if data is not None:  # the same metadata bytes again: _packet_out_fast
                split = split_packet_out(data)
                if split is not None and split[0] == packet.payload and metadata_only(split[1]):
                    if len(p.packet_out_headers) >= p.PACKET_CACHE:
                        p.packet_out_headers.clear()
                    p.packet_out_headers[split[1]] = header  # bytes: never equal to a tuple key
            self.packet_out_count += 1
        self.inject(self.cpu_port, header + packet.payload)

    @staticmethod
    def _packet_out_header(p: Pipeline, metadata: tuple[tuple[int, bytes], ...]) -> bytes:
        """The packet_out controller header a PacketOut's metadata makes (RequestError if
        a field is unknown, repeated, out of range or missing)."""
        hdr = p.maps.packet_out
        values = codec.decode_packet_metadata(hdr, metadata, "packet_out")
        return codec.pack_header(hdr.fields, values) if hdr is not None else b""

    def _digest_ack(self, ack: Any) -> None:
        with self._lock:
            key = self._digest_keys_by_list.pop(ack.list_id, None)
            if key is not None:
                self._digest_pending.pop(key, None)

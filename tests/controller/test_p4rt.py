"""controller.p4rt's wire-format reader for counter reads against the protobuf runtime."""

from __future__ import annotations

import pytest
from p4.v1 import p4runtime_pb2

from controller.p4rt import counter_cells
from p4sim.server.wire import WireError


def _response(cells, extra: bool = True) -> bytes:
    resp = p4runtime_pb2.ReadResponse()
    for cid, index, packets, nbytes in cells:
        ce = resp.entities.add().counter_entry
        ce.counter_id = cid
        ce.index.index = index
        ce.data.packet_count = packets
        ce.data.byte_count = nbytes
    if extra:  # entities of other kinds in the same response are not counter cells
        te = resp.entities.add().table_entry
        te.table_id = 0x02000001
        te.priority = 5
        re_ = resp.entities.add().register_entry
        re_.register_id = 0x16000001
        re_.index.index = 9
        re_.data.bitstring = b"\x07"
    return resp.SerializeToString()


def test_counter_cells_decode_what_protobuf_encodes():
    cells = [
        (0x12000001, 0, 0, 0),  # every field at its default: absent on the wire
        (0x12000001, 1, 1, 64),
        (0x12000002, 127, 128, 16383),  # varint length boundaries
        (0x12000002, 128, 16384, 2**32 + 5),
        (0x12FFFFFF, 2**31 - 1, 2**62, 2**63 - 1),
    ]
    assert counter_cells(_response(cells)) == cells
    assert counter_cells(_response([], extra=False)) == []
    assert counter_cells(_response([], extra=True)) == []


def test_counter_cells_agree_with_the_protobuf_parse_of_a_big_response():
    cells = [(0x12000000 + i % 7, i, i * 3, i * 1500) for i in range(5000)]
    raw = _response(cells)
    parsed = [(e.counter_entry.counter_id, e.counter_entry.index.index,
               e.counter_entry.data.packet_count, e.counter_entry.data.byte_count)
              for e in p4runtime_pb2.ReadResponse.FromString(raw).entities
              if e.HasField("counter_entry")]
    assert counter_cells(raw) == parsed == cells


@pytest.mark.parametrize("bad", [b"\x0a\x05\x3a\x03", b"\x0a", b"\x0a\x02\x3a\x80", b"\x0f"],
                         ids=["entity-past-end", "no-length", "truncated-varint", "wire-type-7"])
def test_counter_cells_refuse_malformed_bytes(bad):
    with pytest.raises(WireError):
        counter_cells(bad)

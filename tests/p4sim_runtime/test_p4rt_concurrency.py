"""The server's fast paths under concurrency: a Write batch is applied whole while Reads
run beside it, counter arrays come back cell for cell in bounded chunks (the cached
zero encodings and the live cells patched into them), PacketOut -> PacketIn keeps the
order and the metadata of every packet with many in flight, and the per-pipeline caches
never let an invalid PacketOut through."""

from __future__ import annotations

import sys
import threading

from test_p4rt_pipeline import MAC2, MAC3, U, frame, table_entry, upd

from p4rtproto import code_pb2, p4runtime_pb2

BATCH = 50


def _mac(i: int) -> bytes:
    return (0x02AA00000000 + i).to_bytes(6, "big")


def test_write_batches_are_whole_under_concurrent_reads(l2, server, connect) -> None:
    c, n = l2
    reader = connect()
    tid = n["MyIngress.l2_fwd"]
    counts: list[int] = []
    stop = threading.Event()

    def read_loop() -> None:
        ent = p4runtime_pb2.Entity()
        ent.table_entry.table_id = tid
        while not stop.is_set():
            counts.append(len(reader.read(ent)))

    t = threading.Thread(target=read_loop)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # threads switch often: a Write that lets go mid-batch is seen
    t.start()
    try:
        for b in range(12):
            c.write(
                *[
                    upd(
                        U.INSERT,
                        table_entry(
                            n,
                            "l2_fwd",
                            {"hdr.ethernet.dst": _mac(b * BATCH + i)},
                            "forward",
                            {"port": b"\x02"},
                        ),
                    )
                    for i in range(BATCH)
                ]
            )
        for b in range(12):
            c.write(
                *[
                    upd(
                        U.DELETE,
                        table_entry(n, "l2_fwd", {"hdr.ethernet.dst": _mac(b * BATCH + i)}),
                    )
                    for i in range(BATCH)
                ]
            )
    finally:
        stop.set()
        t.join(timeout=30)
        sys.setswitchinterval(interval)
    assert len(counts) >= 3
    # a Read sees a batch entirely or not at all: never part of one
    assert all(k % BATCH == 0 for k in counts), sorted(set(counts))
    assert (
        counts[-1] == 0
        or len(c.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=tid))))
        == 0
    )


def test_updates_in_one_batch_apply_in_order(l2) -> None:
    c, n = l2
    tid = n["MyIngress.l2_fwd"]
    ins = upd(
        U.INSERT, table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC2}, "forward", {"port": b"\x02"})
    )
    mod = upd(
        U.MODIFY, table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC2}, "forward", {"port": b"\x03"})
    )
    dele = upd(U.DELETE, table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC2}))
    c.write(ins, mod, dele, ins, mod)  # the last two win: present, port 3
    got = c.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=tid)))
    assert len(got) == 1 and got[0].table_entry.action.action.params[0].value == b"\x03"


def test_counter_reads_are_cell_for_cell_in_bounded_chunks(l2, server) -> None:
    c, n = l2
    server.READ_CHUNK_BYTES = 1024  # 21 cells a chunk: the 512 cells of port_rx span 25 chunks
    sw = server.pipeline.switch
    big = (1 << 63) - 1  # int64 max: the widest a cell's encoding gets
    live = {0: (1, 2), 20: (big, big), 21: (0, 7), 22: (5, 0), 300: (big, 1), 511: (3, big)}
    for i, (pk, by) in live.items():
        sw.counter_write("MyIngress.port_rx", i, pk, by)
    req = p4runtime_pb2.ReadRequest(device_id=1)
    req.entities.add().counter_entry.counter_id = n["MyIngress.port_rx"]
    for _ in range(2):  # the second Read answers from the cached zero chunks
        responses = list(c.stub.Read(req, timeout=10))
        assert len(responses) >= 20 and max(r.ByteSize() for r in responses) <= 1024
        cells = [e.counter_entry for r in responses for e in r.entities]
        assert [ce.index.index for ce in cells] == list(range(512))
        assert {ce.index.index: (ce.data.packet_count, ce.data.byte_count) for ce in cells} == {
            i: live.get(i, (0, 0)) for i in range(512)
        }
        assert all(
            ce.counter_id == n["MyIngress.port_rx"] and ce.HasField("data") and ce.HasField("index")
            for ce in cells
        )
        # each cell is what a Read of that one index answers
        one = p4runtime_pb2.Entity()
        one.counter_entry.counter_id = n["MyIngress.port_rx"]
        for i in (0, 20, 21, 100):
            one.counter_entry.index.index = i
            assert c.read(one)[0].counter_entry == cells[i]
        sw.counter_write("MyIngress.port_rx", 20, 0, 0)  # a cell back to zero
        live.pop(20, None)


def test_packet_in_order_and_metadata_with_many_in_flight(l2, server) -> None:
    c, n = l2
    out_md, in_md = n.metadata["packet_out"], n.metadata["packet_in"]
    c.write(upd(U.INSERT, table_entry(n, "l2_fwd", {"hdr.ethernet.dst": MAC3}, "to_cpu")))
    sent = []
    for i in range(200):  # from two ports alternately: two packet_in metadata combinations
        f = frame(MAC3, MAC2, size=64 + i % 7) + i.to_bytes(2, "big")
        server.ports.ports[1 + i % 2].inject(f)
        sent.append((f, 1 + i % 2))
    for f, port in sent:
        msg = c.get("packet").packet
        assert msg.payload == f
        assert {m.metadata_id: m.value for m in msg.metadata} == {
            in_md["ingress_port"]: bytes([port]),
            in_md["pad"]: b"\x00",
        }
    payload = frame(MAC2, MAC3, ethertype=0x88B5)
    good = {out_md["egress_port"]: b"\x03", out_md["pad"]: b"\x00"}
    for port in (3, 4, 3):  # cached headers for two metadata lists, each to its own port
        c.packet_out(payload, {**good, out_md["egress_port"]: bytes([port])})
        assert server.ports.ports[port].wait_output(2.0) == payload


def test_packet_out_cache_never_admits_a_bad_list(l2, server) -> None:
    c, n = l2
    out_md = n.metadata["packet_out"]
    payload = frame(MAC2, MAC3, ethertype=0x88B5)
    good = {out_md["egress_port"]: b"\x03", out_md["pad"]: b"\x00"}
    c.packet_out(payload, good)  # cached now
    assert server.ports.ports[3].wait_output(2.0) == payload
    for bad in (
        {out_md["egress_port"]: b"\x03"},  # pad missing
        {**good, 99: b"\x00"},  # unknown id
        {out_md["egress_port"]: b"\x02\x00", out_md["pad"]: b"\x00"},
    ):  # 512: wider than 9 bits
        before = server.packet_out_count
        c.packet_out(payload, bad)
        err = c.get("error").error
        assert err.canonical_code in (code_pb2.INVALID_ARGUMENT, code_pb2.OUT_OF_RANGE)
        assert server.packet_out_count == before


def test_target_counters_match_the_switch_cell_for_cell(l2, server) -> None:
    """`rocelab counters`' client path: the zero cells it skips stay zero, the live ones
    (at chunk edges, int64 max) come back exact, and a plain read_counters keeps every cell."""
    from controller.targets.p4runtime import P4RuntimeTarget

    server.READ_CHUNK_BYTES = 1024
    sw = server.pipeline.switch
    live = {0: (1, 0), 21: (0, 9), 511: ((1 << 63) - 1, 3)}
    for i, (pk, by) in live.items():
        sw.counter_write("MyIngress.port_rx", i, pk, by)
    t = P4RuntimeTarget(f"127.0.0.1:{server.port}", device_id=1, election_id=5)
    try:
        got = t.counters()
        assert got["MyIngress.port_rx"] == [live.get(i, (0, 0)) for i in range(512)]
        assert set(got) == {c.preamble.name for c in server.pipeline.p4info.counters}
        ent = p4runtime_pb2.Entity()
        ent.counter_entry.counter_id = next(
            c.preamble.id
            for c in server.pipeline.p4info.counters
            if c.preamble.name == "MyIngress.port_rx"
        )
        every = t.conn.read_counters([ent])
        assert [i for _, i, _, _ in every] == list(range(512))
        assert len(t.conn.read_counters([ent], nonzero_only=True)) == len(live)
    finally:
        t.close()

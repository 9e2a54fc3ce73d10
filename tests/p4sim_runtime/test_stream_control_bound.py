"""A StreamChannel's arbitration answers are bounded: they are never dropped (each says who
is primary now), so a stream that leaves _Stream.CONTROL_LIMIT of them unread is ended
with RESOURCE_EXHAUSTED rather than queue them without bound (another controller flipping
the primary over and over while this one does not read). A stream that reads keeps going
however many answers it gets: the response loops give each taken one back (react: the
front end counts them until gRPC takes them). Both front ends, every native loop."""

from __future__ import annotations

import queue
import time

import grpc
import p4rt_helpers
import pytest
from test_stream_handoff import PATHS, _arbitration, _server

from p4rtproto import p4runtime_pb2_grpc
from p4sim.server.stream import _Abort, _Stream

FLIPS = 300


def test_unread_answers_past_the_limit_end_the_stream_once(monkeypatch) -> None:
    monkeypatch.setattr(_Stream, "CONTROL_LIMIT", 5)
    s = _Stream()
    for i in range(50):
        s.send_control(f"answer {i}")
    items = []
    while not s.out.empty():
        items.append(s.out.get())
    assert items[:5] == [f"answer {i}" for i in range(5)]  # in order, none dropped before the end
    assert len(items) == 6 and isinstance(items[5], _Abort)
    assert (
        items[5].code == "RESOURCE_EXHAUSTED" and "5 arbitration updates unread" in items[5].message
    )
    s.send_control("late")
    assert s.out.empty()  # nothing after the end


def test_taken_answers_make_room(monkeypatch) -> None:
    monkeypatch.setattr(_Stream, "CONTROL_LIMIT", 2)
    s = _Stream()
    for i in range(10):
        s.send_control(i)
        assert s.out.get() == i
        s.control_taken()
    assert not s.overflowed and s.control == 0


def _flip(srv, flips: int, watcher) -> list[int]:
    """Two other controllers take the primary from each other `flips` times, with ever
    higher election ids (each change sends every stream of the role an answer), reading
    their own answers; `watcher` (a third stream) reads its answer to each change before
    the next (in step: how fast its server thread keeps up does not matter). Returns the
    election ids the watcher was told, in order."""
    told = []
    channel = p4rt_helpers.channel(f"127.0.0.1:{srv.port}")
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    outs: list[queue.Queue] = [queue.Queue(), queue.Queue()]
    calls = [stub.StreamChannel(iter(q.get, None)) for q in outs]
    try:
        for k in range(flips):
            e, me = 10 + k, k % 2
            outs[me].put(_arbitration(e))
            assert next(calls[me]).arbitration.election_id.low == e
            if k:  # the other one was primary (from its second flip on: known to the server)
                assert next(calls[1 - me]).arbitration.election_id.low == e
            told.append(next(watcher).arbitration.election_id.low)
        return told
    finally:
        for q in outs:
            q.put(None)
        for c in calls:
            c.cancel()
        channel.close()


def _watch(srv) -> tuple[grpc.Channel, queue.Queue, object]:
    channel = p4rt_helpers.channel(f"127.0.0.1:{srv.port}")
    out: queue.Queue = queue.Queue()
    out.put(_arbitration(1))
    call = p4runtime_pb2_grpc.P4RuntimeStub(channel).StreamChannel(iter(out.get, None))
    deadline = time.monotonic() + 5
    while not any(s.election_id == 1 for r in srv._roles.values() for s in r.streams):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return channel, out, call


@pytest.mark.parametrize(("frontend", "mode"), PATHS)
def test_a_reading_stream_is_not_ended_by_many_answers(
    frontend: str, mode: str, monkeypatch
) -> None:
    monkeypatch.setattr(_Stream, "CONTROL_LIMIT", 8)  # far fewer than the answers it gets
    srv, _ = _server(frontend, mode)
    channel, out, call = _watch(srv)
    try:
        assert next(call).arbitration.status.code == 0  # primary
        told = _flip(srv, FLIPS, call)  # one answer per flip, each read
        assert told == list(range(10, 10 + FLIPS))
        (mine,) = [s for r in srv._roles.values() for s in r.streams if s.election_id == 1]
        assert not mine.overflowed
    finally:
        out.put(None)
        call.cancel()
        channel.close()
        srv.stop(grace=0)


@pytest.mark.parametrize(("frontend", "mode"), PATHS)
def test_the_end_reaches_the_client_as_resource_exhausted(
    frontend: str, mode: str, monkeypatch
) -> None:
    # with no room at all, the very first answer is the end: the loops carry it out
    monkeypatch.setattr(_Stream, "CONTROL_LIMIT", 0)
    srv, _ = _server(frontend, mode)
    channel = p4rt_helpers.channel(f"127.0.0.1:{srv.port}")
    out: queue.Queue = queue.Queue()
    out.put(_arbitration(1))
    call = p4runtime_pb2_grpc.P4RuntimeStub(channel).StreamChannel(iter(out.get, None))
    try:
        with pytest.raises(grpc.RpcError) as err:
            next(call)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "arbitration updates unread" in err.value.details()
        deadline = time.monotonic() + 3
        while srv._open_streams and time.monotonic() < deadline:
            time.sleep(0.02)
        assert srv._open_streams == 0 and not any(r.streams for r in srv._roles.values())
    finally:
        out.put(None)
        call.cancel()
        channel.close()
        srv.stop(grace=0)

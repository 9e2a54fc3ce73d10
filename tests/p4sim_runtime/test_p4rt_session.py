"""P4Runtime sessions without a pipeline: capabilities, arbitration, and the errors a
client gets before a program is loaded."""

from __future__ import annotations

import grpc
import pytest

from p4rtproto import code_pb2, p4runtime_pb2
from p4sim.server import API_VERSION


def test_capabilities(connect) -> None:
    c = connect()
    assert (
        c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version
        == API_VERSION
        == "1.4.1"
    )


def test_arbitration_primary_backup_and_takeover(connect) -> None:
    a, b, c = connect(), connect(), connect()
    a.arbitrate((0, 5))
    msg = a.get("arbitration").arbitration
    assert msg.status.code == code_pb2.OK and msg.election_id.low == 5 and msg.device_id == 1

    b.arbitrate((0, 3))  # lower id: a backup, told that a primary exists
    msg = b.get("arbitration").arbitration
    assert msg.status.code == code_pb2.ALREADY_EXISTS and msg.election_id.low == 5

    c.arbitrate((0, 9))  # higher id: takes over, everybody is told
    assert c.get("arbitration").arbitration.status.code == code_pb2.OK
    assert a.get("arbitration").arbitration.status.code == code_pb2.ALREADY_EXISTS
    assert b.get("arbitration").arbitration.election_id.low == 9

    # the primary leaves: no primary until someone claims an id >= the highest seen (9)
    c.close()
    msg = a.get("arbitration").arbitration
    assert msg.status.code == code_pb2.NOT_FOUND and msg.election_id.low == 9
    assert b.get("arbitration").arbitration.status.code == code_pb2.NOT_FOUND
    a.arbitrate((0, 10))
    assert a.get("arbitration").arbitration.status.code == code_pb2.OK
    assert b.get("arbitration").arbitration.status.code == code_pb2.ALREADY_EXISTS


def test_duplicate_election_id_and_wrong_device_close_the_stream(connect) -> None:
    a, b = connect(), connect()
    a.arbitrate((0, 7))
    assert a.get("arbitration").arbitration.status.code == code_pb2.OK
    b.arbitrate((0, 7))
    err = b.get("closed")
    assert err is not None and err.code() == grpc.StatusCode.INVALID_ARGUMENT

    d = connect(device_id=42)
    d.arbitrate((0, 1))
    err = d.get("closed")
    assert err is not None and err.code() == grpc.StatusCode.NOT_FOUND


def test_first_stream_message_must_be_arbitration(connect) -> None:
    c = connect()
    c.packet_out(b"\x00" * 14, {})
    err = c.get("closed")
    assert err is not None and err.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_write_needs_primary_and_pipeline(connect) -> None:
    a, b = connect(), connect()
    upd = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    upd.entity.table_entry.table_id = 1
    # nobody has arbitrated
    a.election = (0, 1)
    with pytest.raises(grpc.RpcError) as exc:
        a.write(upd)
    assert exc.value.code() == grpc.StatusCode.PERMISSION_DENIED

    a.arbitrate((0, 2))
    a.get("arbitration")
    b.arbitrate((0, 1))
    b.get("arbitration")
    with pytest.raises(grpc.RpcError) as exc:
        b.write(upd)  # a backup
    assert exc.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.RpcError) as exc:
        a.write(upd)  # the primary, but no pipeline yet
    assert exc.value.code() == grpc.StatusCode.FAILED_PRECONDITION

    ent = p4runtime_pb2.Entity()
    ent.table_entry.SetInParent()
    with pytest.raises(grpc.RpcError) as exc:
        b.read(ent)
    assert exc.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(grpc.RpcError) as exc:
        a.stub.GetForwardingPipelineConfig(
            p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1)
        )
    assert exc.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(grpc.RpcError) as exc:
        a.stub.GetForwardingPipelineConfig(
            p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=3)
        )
    assert exc.value.code() == grpc.StatusCode.NOT_FOUND


def test_bad_device_configs_are_refused_clearly(connect) -> None:
    a = connect()
    a.arbitrate((0, 1))
    a.get("arbitration")
    cases = {
        b"": "empty",
        b'{"header_types": [], "pipelines": []}': "BMv2 JSON",
        b'{"format": "p4sim-source/1", "main": "x.p4", "files": {"../x.p4": ""}}': "main",
        b'{"format": "p4sim-source/1", "main": "../x.p4", "files": {"../x.p4": "x"}}': "bad file entry",
        b"\xff\xfe": "not UTF-8",
    }
    for blob, words in cases.items():
        with pytest.raises(grpc.RpcError) as exc:
            a.set_pipeline(blob)
        assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT, blob
        assert words in exc.value.details(), (blob, exc.value.details())
    with pytest.raises(grpc.RpcError) as exc:
        a.set_pipeline(b"", action=p4runtime_pb2.SetForwardingPipelineConfigRequest.COMMIT)
    assert exc.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    # a backup may not push a pipeline
    b = connect()
    b.arbitrate((0, 0))
    b.get("arbitration")
    with pytest.raises(grpc.RpcError) as exc:
        b.set_pipeline(b"x")
    assert exc.value.code() == grpc.StatusCode.PERMISSION_DENIED

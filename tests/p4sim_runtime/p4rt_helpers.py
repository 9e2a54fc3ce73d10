"""Helpers for the p4sim runtime tests: a raw P4Runtime client and P4Info name lookups."""

from __future__ import annotations

import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc

from p4rtproto import p4runtime_pb2, p4runtime_pb2_grpc

PROGRAMS = Path(__file__).parent / "programs"
L2_PROGRAM = PROGRAMS / "l2_cpu.p4"
CPU_PORT = 255


def channel(address: str) -> grpc.Channel:
    """A client channel with its own connections. grpc shares connections between channels to
    the same address by default (the global subchannel pool): a test's new channel could ride a
    connection to an earlier test's server on a reused ephemeral port and be cancelled by that
    server's shutdown (CI saw `GOAWAY ... Cancelling all calls` on a fresh stream)."""
    return grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])


class RawClient:
    """P4Runtime over plain grpc stubs, so tests see exactly what the server answers."""

    def __init__(self, address: str, device_id: int = 1) -> None:
        self.device_id = device_id
        self.channel = channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._out: queue.Queue[p4runtime_pb2.StreamMessageRequest | None] = queue.Queue()
        self.inbox: dict[str, queue.Queue] = {
            k: queue.Queue() for k in ("arbitration", "packet", "digest", "error", "closed")
        }
        self.election: tuple[int, int] | None = None
        self._stream = self.stub.StreamChannel(self._requests())
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _requests(self) -> Iterator[p4runtime_pb2.StreamMessageRequest]:
        while True:
            item = self._out.get()
            if item is None:
                return
            yield item

    def _read(self) -> None:
        try:
            for msg in self._stream:
                self.inbox[msg.WhichOneof("update")].put(msg)
        except grpc.RpcError as exc:
            self.inbox["closed"].put(exc)
            return
        self.inbox["closed"].put(None)

    def arbitrate(
        self,
        election: tuple[int, int] | None = (0, 1),
        device_id: int | None = None,
        role: str = "",
    ) -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id if device_id is None else device_id
        if election is not None:
            req.arbitration.election_id.high, req.arbitration.election_id.low = election
        if role:
            req.arbitration.role.name = role
        self.election = election
        self._out.put(req)

    def get(self, kind: str, timeout: float = 2.0):
        return self.inbox[kind].get(timeout=timeout)

    def stream_send(self, req: p4runtime_pb2.StreamMessageRequest) -> None:
        self._out.put(req)

    def packet_out(self, payload: bytes, metadata: dict[int, bytes]) -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.packet.payload = payload
        for mid, value in metadata.items():
            req.packet.metadata.add(metadata_id=mid, value=value)
        self._out.put(req)

    def _stamp(self, req) -> None:
        req.device_id = self.device_id
        if self.election is not None:
            req.election_id.high, req.election_id.low = self.election

    def write(
        self, *updates: p4runtime_pb2.Update, atomicity: int = 0
    ) -> p4runtime_pb2.WriteResponse:
        req = p4runtime_pb2.WriteRequest(atomicity=atomicity)
        self._stamp(req)
        req.updates.extend(updates)
        return self.stub.Write(req, timeout=10)

    def read(self, *entities: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.extend(entities)
        return [e for resp in self.stub.Read(req, timeout=10) for e in resp.entities]

    def set_pipeline(
        self, device_config: bytes, p4info=None, action: int = 3, cookie: int | None = None
    ):
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(action=action)
        self._stamp(req)
        req.config.p4_device_config = device_config
        if p4info is not None:
            req.config.p4info.CopyFrom(p4info)
        if cookie is not None:
            req.config.cookie.cookie = cookie
        return self.stub.SetForwardingPipelineConfig(req, timeout=60)

    def close(self) -> None:
        self._out.put(None)
        self.channel.close()


class Names:
    """Name -> id lookups in a P4Info (tables, actions, fields, params, metadata...)."""

    def __init__(self, p4info) -> None:
        self.p4info = p4info
        self.ids: dict[str, int] = {}
        for kind in (
            "tables",
            "actions",
            "counters",
            "direct_counters",
            "meters",
            "registers",
            "digests",
            "controller_packet_metadata",
        ):
            for obj in getattr(p4info, kind):
                self.ids[obj.preamble.name] = obj.preamble.id
        self.fields = {
            t.preamble.name: {f.name: f.id for f in t.match_fields} for t in p4info.tables
        }
        self.params = {a.preamble.name: {p.name: p.id for p in a.params} for a in p4info.actions}
        self.metadata = {
            c.preamble.name: {m.name: m.id for m in c.metadata}
            for c in p4info.controller_packet_metadata
        }

    def __getitem__(self, name: str) -> int:
        return self.ids[name]


def find(names: Names, suffix: str) -> str:
    """The one full name in the P4Info ending with `.suffix` (or equal to it)."""
    hits = [k for k in names.ids if k == suffix or k.endswith("." + suffix)]
    assert len(hits) == 1, (suffix, hits)
    return hits[0]


# ---------------------------------------------------------------- a p4sim-switch process


class LiveSwitch:
    """`p4sim-switch --no-p4` as a child process on a free loopback port: what a third-party
    client sees is the real command, not the server class in this process.

    `data_ports` (root only): switch ports 1.. are veth pairs whose far ends the test holds
    as AF_PACKET sockets (`send`, `expect`); without them the switch has no data port and
    frames reach the pipeline through the CPU port (PacketOut) alone."""

    def __init__(self, log_dir: Path, data_ports: int = 0, device_id: int = 1) -> None:
        import shutil
        import sys

        from controller.targets import netns
        from controller.targets.switches import SwitchProcess, free_port, interface_args, wait_ready

        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.device_id = device_id
        self.nets = netns.NetnsSet() if data_ports else None
        self.wires: dict[int, object] = {}
        ifaces: dict[int, str] = {}
        try:
            for n in range(1, data_ports + 1):
                veth = self.nets.add_veth(netns.name("s", n), netns.name("t", n))  # type: ignore[union-attr]
                ifaces[n] = veth.outer
            exe = shutil.which("p4sim-switch") or str(
                Path(sys.executable).with_name("p4sim-switch")
            )
            argv = [
                exe,
                "--no-p4",
                "--device-id",
                str(device_id),
                "--cpu-port",
                str(CPU_PORT),
                "--grpc-server-addr",
                self.addr,
                "--log-console",
                *interface_args(ifaces),
            ]
            log = log_dir / f"p4sim-switch-{self.port}.log"
            with open(log, "wb") as out:
                proc = subprocess.Popen(
                    argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
            self.proc = SwitchProcess("p4sim", self.addr, device_id, argv, log, proc=proc)
            wait_ready(self.proc, timeout=60)
            from p4rtproto.afpacket import packet_socket

            for n in ifaces:
                sock = packet_socket(netns.name("t", n))
                sock.setblocking(False)
                self.wires[n] = sock
        except BaseException:
            self.close()
            raise

    def pipeline_installed(self) -> bool:
        """Whether the switch has a forwarding pipeline (asked over P4Runtime)."""
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=self.device_id)
        with channel(self.addr) as ch:
            try:
                p4runtime_pb2_grpc.P4RuntimeStub(ch).GetForwardingPipelineConfig(req, timeout=10)
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.FAILED_PRECONDITION:
                    return False
                raise
        return True

    def send(self, port: int, frame: bytes) -> None:
        self.wires[port].send(frame)  # type: ignore[attr-defined]

    def expect(self, port: int, frame: bytes, timeout: float = 5.0) -> bool:
        """Whether `frame` leaves the switch on `port` within `timeout` (other frames the
        kernel may send on the veth are passed over)."""
        import select
        import time

        from p4rtproto.afpacket import PACKET_OUTGOING, recv_frame

        sock = self.wires[port]
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            ready, _, _ = select.select([sock], [], [], left)
            while ready:
                try:
                    data, addr = recv_frame(sock)  # type: ignore[arg-type]
                except BlockingIOError:
                    break
                if addr[2] != PACKET_OUTGOING and data == frame:
                    return True
        return False

    def log_tail(self) -> str:
        return self.proc.log_tail() if hasattr(self, "proc") else ""

    def close(self) -> None:
        for sock in self.wires.values():
            sock.close()  # type: ignore[attr-defined]
        if hasattr(self, "proc"):
            self.proc.close()
        if self.nets is not None:
            self.nets.close()

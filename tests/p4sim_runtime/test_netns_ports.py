"""p4sim-switch on real interfaces: two network namespaces joined to the switch by veth
pairs; frames built with scapy, sent in one namespace, come out in the other (VLAN tag
included); the controller programs the switch over P4Runtime, pcaps record both ports,
SIGTERM stops it cleanly."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from p4rt_helpers import L2_PROGRAM, Names, RawClient

from p4rtproto import p4runtime_pb2

pytestmark = [
    pytest.mark.root,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces and AF_PACKET"),
]

MAC1 = "02:00:00:00:01:01"
MAC2 = "02:00:00:00:02:02"
BIN = Path(sys.executable).parent


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, check=check, capture_output=True, text=True, timeout=30)


@pytest.fixture
def two_hosts():
    """Namespaces h1/h2 (unique per pid) with veths whose switch ends stay in the root ns."""
    tag = f"{os.getpid() % 100000}"
    ns = [f"p4sim{tag}h1", f"p4sim{tag}h2"]
    host_if = [f"p4h{tag}a", f"p4h{tag}b"]
    sw_if = [f"p4s{tag}a", f"p4s{tag}b"]
    try:
        for i in range(2):
            sh("ip", "netns", "add", ns[i])
            sh("ip", "link", "add", host_if[i], "type", "veth", "peer", "name", sw_if[i])
            sh("ip", "link", "set", host_if[i], "netns", ns[i])
            sh("ip", "-n", ns[i], "link", "set", host_if[i], "address", (MAC1, MAC2)[i])
            for iface, where in ((host_if[i], ["-n", ns[i]]), (sw_if[i], [])):
                sh("ip", *where, "link", "set", iface, "up")
            sh("sysctl", "-qw", f"net.ipv6.conf.{sw_if[i]}.disable_ipv6=1", check=False)
            sh(
                "ip",
                "netns",
                "exec",
                ns[i],
                "sysctl",
                "-qw",
                f"net.ipv6.conf.{host_if[i]}.disable_ipv6=1",
                check=False,
            )
        yield ns, host_if, sw_if
    finally:
        for i in range(2):
            sh("ip", "link", "del", sw_if[i], check=False)
            sh("ip", "netns", "del", ns[i], check=False)


RECEIVER = """
import sys
from scapy.all import sniff
print("ready", flush=True)
pkts = sniff(iface=sys.argv[1], count=int(sys.argv[2]), timeout=15, lfilter=lambda p: b"p4sim-netns" in bytes(p))
for p in pkts:
    print(bytes(p).hex(), flush=True)
"""

SENDER = """
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
for frame in sys.argv[2:]:
    s.send(bytes.fromhex(frame))
"""


def frames_to_send() -> list[bytes]:
    """Three plain frames and one 802.1Q-tagged frame (the kernel strips the tag on
    receive; the switch port must put it back), built with scapy."""
    from scapy.all import Dot1Q, Ether, Raw

    out = [
        bytes(Ether(dst=MAC2, src=MAC1, type=0x88B5) / Raw(b"p4sim-netns-%02d" % i + bytes(40)))
        for i in range(3)
    ]
    out.append(
        bytes(
            Ether(dst=MAC2, src=MAC1)
            / Dot1Q(vlan=10, prio=3, type=0x88B5)
            / Raw(b"p4sim-netns-vlan" + bytes(40))
        )
    )
    return out


def test_frames_cross_the_switch_between_namespaces(two_hosts, tmp_path: Path) -> None:
    ns, host_if, sw_if = two_hosts
    pcap = tmp_path / "pcap"
    switch = subprocess.Popen(
        [
            str(BIN / "p4sim-switch"),
            str(L2_PROGRAM),
            "--device-id",
            "1",
            "-i",
            f"1@{sw_if[0]}",
            "-i",
            f"2@{sw_if[1]}",
            "--grpc-server-addr",
            "127.0.0.1:0",
            "--cpu-port",
            "255",
            "--pcap",
            str(pcap),
            "--log-console",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    client = None
    try:
        port = None
        deadline = time.monotonic() + 30
        assert switch.stderr is not None
        while time.monotonic() < deadline:
            line = switch.stderr.readline()
            m = re.search(r"serving P4Runtime on [\d.]+:(\d+)", line)
            if m:
                port = int(m.group(1))
                break
            assert line or switch.poll() is None, "p4sim-switch exited early"
        assert port, "p4sim-switch did not report its port"
        assert "clock wall" in line

        client = RawClient(f"127.0.0.1:{port}", device_id=1)
        client.arbitrate((0, 1))
        assert client.get("arbitration", timeout=5).arbitration.status.code == 0
        cfg = client.stub.GetForwardingPipelineConfig(
            p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1)
        )
        n = Names(cfg.config.p4info)
        for mac, out_port in ((MAC2, 2), (MAC1, 1)):
            u = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
            te = u.entity.table_entry
            te.table_id = n["MyIngress.l2_fwd"]
            te.match.add(field_id=1).exact.value = bytes.fromhex(mac.replace(":", ""))
            te.action.action.action_id = n["MyIngress.forward"]
            te.action.action.params.add(param_id=1, value=bytes([out_port]))
            client.write(u)

        recv = subprocess.Popen(
            ["ip", "netns", "exec", ns[1], sys.executable, "-c", RECEIVER, host_if[1], "4"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert recv.stdout is not None and recv.stdout.readline().strip() == "ready"
        time.sleep(0.5)  # sniff() opens its socket after printing
        sh(
            "ip",
            "netns",
            "exec",
            ns[0],
            sys.executable,
            "-c",
            SENDER,
            host_if[0],
            *(f.hex() for f in frames_to_send()),
        )
        out, err = recv.communicate(timeout=30)
        got = [bytes.fromhex(x) for x in out.split()]
        assert len(got) == 4, err
        for i, frame in enumerate(got[:3]):
            assert frame[:6] == bytes.fromhex(MAC2.replace(":", "")) and frame[12:14] == b"\x88\xb5"
            assert f"p4sim-netns-{i:02d}".encode() in frame
        tagged = got[3]
        assert tagged[12:18] == bytes.fromhex("8100" + f"{(3 << 13) | 10:04x}" + "88b5"), (
            tagged.hex()
        )
        assert b"p4sim-netns-vlan" in tagged

        # the controller sees the traffic in the program's counter
        ce = p4runtime_pb2.CounterEntry(counter_id=n["MyIngress.port_rx"])
        ce.index.index = 1
        (e,) = client.read(p4runtime_pb2.Entity(counter_entry=ce))
        assert e.counter_entry.data.packet_count >= 3
    finally:
        if client is not None:
            client.close()
        switch.send_signal(signal.SIGTERM)
        try:
            rc = switch.wait(timeout=15)
        except subprocess.TimeoutExpired:
            switch.kill()
            rc = None
    assert rc == 0
    from scapy.utils import rdpcap

    rx = [bytes(p) for p in rdpcap(str(pcap / "port1_in.pcap"))]
    tx = [bytes(p) for p in rdpcap(str(pcap / "port2_out.pcap"))]
    assert sum(b"p4sim-netns" in f for f in rx) == 4
    assert sum(b"p4sim-netns" in f for f in tx) == 4
    assert any(f[12:14] == b"\x81\x00" for f in rx)

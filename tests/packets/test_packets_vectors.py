"""The shared vectors: the decoder reproduces every stored record and verdict, and the
file is what the generator makes (so nobody edits it by hand)."""

from __future__ import annotations

from collections import Counter

import pytest
from scapy.contrib.roce import AETH, BTH
from scapy.layers.l2 import Ether

from controller.packets import MalformedFrame, decode, decode_strict
from controller.packets.constants import CNP_OPCODE, RC_OPCODES
from controller.packets.fields import FIELD_NAMES, verdict
from controller.packets.layers import RETH, AtomicAckETH, AtomicAETH, AtomicETH, ImmDt
from controller.packets.vectors import DEFAULT_PATH, generate, load, main, to_json

VECTORS = load()
IDS = [v.name for v in VECTORS]


def test_file_is_generated_output() -> None:
    assert DEFAULT_PATH.read_text() == to_json(generate()), (
        "tests/vectors/vectors.json is stale: python -m controller.packets.vectors --write"
    )


def test_coverage_of_the_vector_set() -> None:
    v1 = [v for v in VECTORS if "rocev1" in v.tags]
    assert len(VECTORS) - len(v1) >= 60
    assert len(v1) >= 8
    ok = [v for v in VECTORS if v.verdict == "ok"]
    for ipver in (4, 6):
        seen = {
            v.expected["bth_opcode"]
            for v in ok
            if v.expected["roce_version"] == 2 and v.expected["ip_version"] == ipver
        }
        assert set(RC_OPCODES) <= seen, f"IPv{ipver} misses {set(RC_OPCODES) - seen}"
    assert {v.expected["ecn"] for v in ok} == {0, 1, 2, 3}
    assert any(v.expected["vlan_valid"] for v in ok)
    assert any(v.expected["is_cnp"] for v in ok if "rocev1" in v.tags)
    syndromes = {v.expected["aeth_syndrome"] >> 5 for v in ok if v.expected["bth_opcode"] == 0x11}
    assert {0, 1, 3} <= syndromes  # ACK, RNR NAK, NAK
    verdicts = Counter(v.verdict for v in VECTORS)
    for word in (
        "ok",
        "truncated",
        "bad_icrc",
        "bad_ip_csum",
        "unsupported",
        "not_roce",
        "pfc",
        "pause",
    ):
        assert verdicts[word], word
    truncated_in = {
        v.description.split("inside the ")[-1].split(" ")[0]
        for v in VECTORS
        if v.verdict == "truncated" and "inside the" in v.description
    }
    assert {
        "eth",
        "vlan",
        "ip",
        "udp",
        "bth",
        "reth",
        "aeth",
        "immdt",
        "icrc",
        "grh",
        "payload",
        "cnp_reserved",
    } <= truncated_in
    assert max(len(v.frame) for v in VECTORS) > 4096
    assert len({v.name for v in VECTORS}) == len(VECTORS)


@pytest.mark.parametrize("vec", VECTORS, ids=IDS)
def test_decoder_matches_vector(vec) -> None:
    rec = decode(vec.frame)
    got = rec.as_dict()
    assert list(vec.expected) == list(FIELD_NAMES)
    diff = {k: (got[k], vec.expected[k]) for k in FIELD_NAMES if got[k] != vec.expected[k]}
    assert not diff, f"{vec.name}: (decoded, expected) {diff}"
    assert verdict(rec) == vec.verdict == rec.verdict


@pytest.mark.parametrize("vec", VECTORS, ids=IDS)
def test_strict_decoder_agrees_with_verdict(vec) -> None:
    if vec.verdict in ("ok", "pfc", "pause", "not_roce"):
        assert decode_strict(vec.frame) == vec.expected
    else:
        with pytest.raises(MalformedFrame) as exc:
            decode_strict(vec.frame)
        word = {
            "truncated": "truncated",
            "bad_icrc": "ICRC",
            "bad_ip_csum": "checksum",
            "unsupported": "unsupported",
        }[vec.verdict]
        assert word in str(exc.value)
        assert exc.value.decoded == vec.expected


@pytest.mark.parametrize(
    "vec",
    [v for v in VECTORS if v.verdict == "ok"],
    ids=[v.name for v in VECTORS if v.verdict == "ok"],
)
def test_scapy_dissects_vector_like_the_record(vec) -> None:
    """scapy (with our RETH/ImmDt/AETH bindings) is an independent dissector."""
    pkt = Ether(vec.frame)
    e = vec.expected
    bth = pkt[BTH]
    assert (
        bth.opcode,
        bth.dqpn,
        bth.psn,
        bth.pkey,
        bth.solicited,
        bth.migreq,
        bth.padcount,
        bth.fecn,
        bth.becn,
        bth.ackreq,
    ) == (
        e["bth_opcode"],
        e["bth_dqpn"],
        e["bth_psn"],
        e["bth_pkey"],
        e["bth_se"],
        e["bth_m"],
        e["bth_pad"],
        e["bth_fecn"],
        e["bth_becn"],
        e["bth_ackreq"],
    )
    assert (RETH in pkt) == bool(e["reth_valid"])
    if e["reth_valid"]:
        assert (pkt[RETH].va, pkt[RETH].rkey, pkt[RETH].dlen) == (
            e["reth_va"],
            e["reth_rkey"],
            e["reth_dlen"],
        )
    assert (ImmDt in pkt) == bool(e["immdt_valid"])
    if e["immdt_valid"]:
        assert pkt[ImmDt].imm == e["immdt"]
    aeth = pkt.getlayer(AETH) or pkt.getlayer(AtomicAETH)  # (an ATOMIC ACK's AETH)
    assert (aeth is not None) == bool(e["aeth_valid"])
    if e["aeth_valid"]:
        assert (aeth.syndrome, aeth.msn) == (e["aeth_syndrome"], e["aeth_msn"])
    assert (AtomicETH in pkt) == bool(e["atomic_valid"])
    if e["atomic_valid"]:
        a = pkt[AtomicETH]
        assert (a.va, a.rkey, a.swap, a.compare) == (
            e["atomic_va"],
            e["atomic_rkey"],
            e["atomic_swap"],
            e["atomic_cmp"],
        )
    assert (AtomicAckETH in pkt) == bool(e["atomicack_valid"])
    if e["atomicack_valid"]:
        assert pkt[AtomicAckETH].orig == e["atomicack_orig"]
    assert (e["bth_opcode"] == CNP_OPCODE) == bool(e["is_cnp"])


def test_load_rejects_a_different_schema(tmp_path) -> None:
    bad = tmp_path / "v.json"
    bad.write_text(DEFAULT_PATH.read_text().replace('"eth_dst"', '"eth_dest"', 1))
    with pytest.raises(ValueError, match="field list differs"):
        load(bad)


def test_one_command_writes_and_checks(tmp_path, capsys) -> None:
    path = tmp_path / "v.json"
    assert main(["--check", "--path", str(path)]) == 1  # missing: stale
    assert main(["--write", "--path", str(path)]) == 0
    assert path.read_text() == DEFAULT_PATH.read_text()
    assert main(["--check", "--path", str(path)]) == 0
    assert main([]) == 2

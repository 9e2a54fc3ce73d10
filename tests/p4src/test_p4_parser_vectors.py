"""roce_switch.p4's parser agrees with the packet library's decoder on every shared vector:
the header fields the P4 parser extracts (p4sim running the real program's parser alone,
`Switch.parse_only`) equal the decoder's record for the same frame. Atomics (AtomicETH,
AtomicAckETH), RETH, AETH and ImmDt included, so a P4 parser that slices a field wrongly
or takes the wrong branch for an opcode fails here, not only in the HDL testbench."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.fil.loop import p4_parsed
from controller.packets import decode
from p4sim.lower import load_program
from p4sim.runtime.switch import Switch

ROOT = Path(__file__).resolve().parents[2]
VECTORS = json.loads((ROOT / "tests" / "vectors" / "vectors.json").read_text())["vectors"]
# the decoder's verdict for frames the P4 parser is not asked to agree on: it stops at a
# truncation or an unsupported header where the decoder reports the error in the record
COMPARED = [v for v in VECTORS if v["verdict"] == "ok"]


@pytest.fixture(scope="module")
def switch() -> Switch:
    return Switch(load_program(str(ROOT / "p4src" / "roce_switch.p4")))


def test_enough_vectors_are_compared() -> None:
    kinds = {tag for v in COMPARED for tag in v["tags"]}
    assert len(COMPARED) >= 80 and {"atomic", "rocev2", "ipv6"} <= kinds, sorted(kinds)


@pytest.mark.parametrize("vec", COMPARED, ids=[v["name"] for v in COMPARED])
def test_p4_parser_matches_the_decoder(switch: Switch, vec: dict) -> None:
    frame = bytes.fromhex(vec["hex"])
    p4 = p4_parsed(switch, frame)
    assert p4, f"{vec['name']}: the P4 parser rejected a frame the decoder accepts"
    want = decode(frame).as_dict()
    diff = {k: (v, want[k]) for k, v in p4.items() if want[k] != v}
    assert not diff, f"{vec['name']}: (p4sim parser, decoder) differ in {diff}"

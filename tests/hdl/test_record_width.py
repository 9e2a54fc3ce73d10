"""The record width is one fact in three files: controller/packets/fields.py (RECORD_BITS,
the sum of FIELDS), roce_parser.v (its RECORD_BITS localparam, the res_data port) and
roce_rx.v (the RECORD_BITS default of its res_data tap). Verilog-2005 cannot read a
submodule's localparam, so the wrapper repeats the number and this test fails on drift."""

from __future__ import annotations

import re
from pathlib import Path

from controller.packets.fields import RECORD_BITS

RTL = Path(__file__).resolve().parents[2] / "hdl" / "rtl"


def record_bits(path: Path, keyword: str) -> int:
    found = re.findall(rf"\b{keyword}\s+RECORD_BITS\s*=\s*(\d+)", path.read_text())
    assert len(found) == 1, f"{path.name}: expected one `{keyword} RECORD_BITS = N`, got {found}"
    return int(found[0])


def test_parser_record_width_is_the_python_record() -> None:
    assert record_bits(RTL / "roce_parser.v", "localparam") == RECORD_BITS


def test_rx_default_record_width_is_the_parsers() -> None:
    assert record_bits(RTL / "roce_rx.v", "parameter") == RECORD_BITS


def test_drift_is_caught(tmp_path: Path) -> None:
    """Negative control: the old wrapper default (877, before the atomics fields)."""
    stale = tmp_path / "roce_rx.v"
    stale.write_text(
        (RTL / "roce_rx.v").read_text().replace(f"RECORD_BITS = {RECORD_BITS}", "RECORD_BITS = 877")
    )
    assert record_bits(stale, "parameter") != RECORD_BITS

"""What one target did with a case, and the differences between two of them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Outcome:
    packets: list[dict[int, list[bytes]]] = field(
        default_factory=list
    )  # per input packet: port -> frames in order
    registers: dict[str, list[int]] = field(default_factory=dict)
    counters: dict[str, list[tuple[int, int]]] = field(
        default_factory=dict
    )  # (packets, bytes) per cell


def differences(ref: Outcome, got: Outcome, limit: int = 5) -> list[str]:
    """Human-readable differences of `got` (p4sim) from `ref` (BMv2); empty when they agree."""
    out: list[str] = []
    for i, (a, b) in enumerate(zip(ref.packets, got.packets, strict=False)):
        for port in sorted(set(a) | set(b)):
            fa, fb = a.get(port, []), b.get(port, [])
            if fa != fb:
                out.append(
                    f"packet {i}: port {port}: BMv2 {[f.hex() for f in fa]} p4sim {[f.hex() for f in fb]}"
                )
    if len(ref.packets) != len(got.packets):
        out.append(f"{len(ref.packets)} packets on BMv2, {len(got.packets)} on p4sim")
    for kind, ra, rb in (
        ("register", ref.registers, got.registers),
        ("counter", ref.counters, got.counters),
    ):
        for name in sorted(set(ra) | set(rb)):
            va, vb = ra.get(name), rb.get(name)
            if va != vb:
                cells = [
                    i
                    for i in range(max(len(va or []), len(vb or [])))
                    if (va or [None] * 99)[i : i + 1] != (vb or [None] * 99)[i : i + 1]
                ]
                out.append(f"{kind} {name}: cells {cells}: BMv2 {va} p4sim {vb}")
    return out[:limit]

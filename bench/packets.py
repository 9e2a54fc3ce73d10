"""Packet library speed: the struct-based builder and decoder that scenarios use, as a ratio
to scapy building the same frame in the same run (the baseline the fast path replaces).

This was a timed assertion in the test suite; speed targets live here instead, where a busy
machine makes a figure lower rather than a test red."""

from __future__ import annotations

import time

# `python -m bench --smoke`: this section's smallest size (tests/bench runs it)
SMOKE = ["--n=300"]

N_FAST = 20_000
N_SCAPY = 1_000


def _rate(n: int, fn) -> float:
    t0 = time.perf_counter()
    for i in range(n):
        fn(i)
    return n / (time.perf_counter() - t0)


def run(argv: list[str]) -> None:
    from controller.packets.build import packet_bytes, roce_frame, roce_packet
    from controller.packets.decode import decode

    n_fast, n_scapy = N_FAST, N_SCAPY
    for a in argv:
        if a.startswith("--n="):  # --n=N: N fast builds, N/20 scapy ones (smoke test)
            n_fast = int(a.split("=", 1)[1])
            n_scapy = max(1, n_fast // 20)
    for size in (64, 1024):
        payload = b"x" * size
        build = _rate(
            n_fast,
            lambda i, p=payload: roce_frame("10.0.0.1", "10.0.0.2", 0x0A, 5, i, p, sport=0xC000),
        )
        both = _rate(
            n_fast,
            lambda i, p=payload: decode(
                roce_frame("10.0.0.1", "10.0.0.2", 0x0A, 5, i, p, sport=0xC000)
            ),
        )
        scapy = _rate(
            n_scapy,
            lambda i, p=payload: packet_bytes(
                roce_packet("10.0.0.1", "10.0.0.2", 0x0A, 5, i, p, sport=0xC000)
            ),
        )
        print(
            f"{size:5d} B payload: build {build:,.0f}/s, build+decode {both:,.0f}/s; "
            f"scapy build {scapy:,.0f}/s (baseline): build is {build / scapy:.0f}x scapy"
        )

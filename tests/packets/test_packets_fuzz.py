"""decode() never raises, whatever the bytes; cutting a frame only ever loses information."""

from __future__ import annotations

import random

from controller.packets import MalformedFrame, decode, decode_strict
from controller.packets.fields import FIELDS
from controller.packets.vectors import load

VECTORS = load()


def _fits(rec) -> None:
    for name, bits in FIELDS:
        v = getattr(rec, name)
        assert isinstance(v, int) and 0 <= v < (1 << bits), (name, v)


def test_every_prefix_of_every_vector() -> None:
    for vec in VECTORS:
        frame = vec.frame if len(vec.frame) < 300 else vec.frame[:300]
        for cut in range(len(frame)):
            rec = decode(frame[:cut])
            _fits(rec)
            assert rec.err_icrc == 0 or cut >= len(frame)


def test_prefix_of_a_good_frame_is_truncated() -> None:
    for vec in VECTORS:
        if vec.verdict != "ok":
            continue
        full = decode(vec.frame)
        # RoCE packets here have at most 2 bytes of padding: every cut is inside the packet
        for cut in range(0, len(vec.frame) - 4, 7):
            rec = decode(vec.frame[:cut])
            assert rec.err_truncated == 1, (vec.name, cut)
            for name, _ in FIELDS:  # a prefix never invents a value
                v = getattr(rec, name)
                assert v in (0, getattr(full, name)) or name == "err_truncated", (
                    vec.name,
                    cut,
                    name,
                )


def test_random_bytes_and_mutations() -> None:
    rng = random.Random(1)
    heads = [
        bytes.fromhex(h)
        for h in (
            "ffffffffffff0200000000010800",
            "ffffffffffff02000000000186dd",
            "ffffffffffff0200000000018915",
            "0180c2000001020000000001810000038808",
        )
    ]
    for _ in range(3000):
        kind = rng.randrange(3)
        if kind == 0:
            frame = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 120)))
        elif kind == 1:
            frame = rng.choice(heads) + bytes(rng.getrandbits(8) for _ in range(rng.randrange(80)))
        else:
            frame = bytearray(rng.choice(VECTORS).frame[:400])
            for _ in range(rng.randrange(1, 4)):
                if frame:
                    frame[rng.randrange(len(frame))] = rng.getrandbits(8)
            frame = bytes(frame)
        rec = decode(frame)
        _fits(rec)
        try:
            decode_strict(frame)
        except MalformedFrame as exc:
            assert exc.decoded == rec
            # the message names the error the verdict names (the most severe one)
            word = {
                "truncated": "truncated",
                "unsupported": "unsupported",
                "bad_ip_csum": "checksum",
                "bad_icrc": "ICRC",
            }[rec.verdict]
            assert word in str(exc), (rec.verdict, str(exc))
        else:
            assert rec.verdict in ("ok", "pfc", "pause", "not_roce")


def test_padding_after_the_packet_is_ignored() -> None:
    for vec in VECTORS:
        if vec.verdict == "ok":
            assert decode(vec.frame + bytes(30)) == vec.expected
            assert decode(vec.frame + b"\xa5" * 3) == vec.expected

"""Write's fast path, step 1: a serialized WriteRequest cut into its Updates without
parsing it (the top level read field by field as upb reads it), a controller's batch as a
few runs of Updates of one length, found by strided column checks (one C call per checked
byte of a run, or the compiled write path's loop)."""

from __future__ import annotations

from collections.abc import Sequence

from p4sim.runtime import tables as _tables

# WriteRequest's top-level fields as their one-byte tags: device_id (1, varint),
# role_id (2, varint), election_id (3, message), updates (4, message), atomicity
# (5, varint), role (6, string)
_VARINT_TAGS = frozenset((0x08, 0x10, 0x28))
_LEN_TAGS = frozenset((0x1A, 0x32))
_UPDATE_TAG = 0x22


def _varint(data: bytes, i: int) -> tuple[int, int]:
    x = data[i]
    if x < 0x80:
        return x, i + 1
    value, shift = x & 0x7F, 7
    i += 1
    while True:
        x = data[i]
        value |= (x & 0x7F) << shift
        i += 1
        if x < 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _lead(s: bytes, b: bytes) -> int:
    """How many of the first bytes of `s` are the byte `b` (one C call)."""
    return len(s) - len(s.lstrip(b))


_TAG = bytes((_UPDATE_TAG,))
_compiled = (
    _tables.COMPILED
)  # the compiled write path's module, or None (p4sim/runtime/compiled_write.py)


def _column_run(
    data: bytes, r0: int, stride: int, kmax: int, checks: Sequence[tuple[int, bytes]]
) -> int:
    """How many consecutive records of `stride` bytes from data[r0] (at most kmax) hold every
    (offset, byte) of `checks`. Each check's column is one strided slice (bytes.count says
    whether it all matches, lstrip where it first fails: lstrip calls memchr per byte), in
    windows of 64 records growing 8x: the work is at most 64 records plus 8x the run found,
    never kmax (a hostile request of many short runs costs linear time, not quadratic).
    With the compiled write path, one C loop that stops at the first failing record."""
    if _compiled is not None:
        got = _compiled.column_run(data, r0, stride, kmax, checks)
        if got is not None:
            return got
    return _column_run_py(data, r0, stride, kmax, checks)


def _column_run_py(
    data: bytes, r0: int, stride: int, kmax: int, checks: Sequence[tuple[int, bytes]]
) -> int:
    """`_column_run` in Python (the reference)."""
    done, want = 0, min(kmax, 64)
    while True:
        n = want - done
        base = r0 + done * stride
        for off, b in checks:
            p = base + off
            col = data[p : p + n * stride : stride]  # this byte of records done..done+n-1
            if col.count(b) != n:
                n = _lead(col, b)
                if n == 0:
                    break
        done += n
        if done < want or done == kmax:
            return done
        want = min(kmax, want * 8)


def _same_length_run(data: bytes, i: int, ln: int) -> int:
    """How many consecutive records tag, length byte `ln`, then ln bytes, start at data[i]
    (a run of Updates of one length under 128, as a controller's batch is): the tag and
    length columns checked at once (`_column_run`), no Python step per record."""
    stride = ln + 2
    return _column_run(data, i, stride, (len(data) - i) // stride, ((0, _TAG), (1, bytes((ln,)))))


def update_runs(
    data: bytes, others: list[tuple[int, int]] | None = None
) -> list[tuple[int, int, int, int]] | None:
    """The Updates of a serialized WriteRequest, in order, as runs: (start, length, k,
    stride) is k consecutive Updates of `length` bytes each, each behind the same tag and
    length bytes, the first one's bytes at data[start:start + length], the next ones
    `stride` bytes further each (no tuple per Update: a controller's batch is a few runs).
    None when the top level holds anything else than WriteRequest's fields (the caller
    then uses the parsed message only). With `others`, the (start, end) of every other
    top-level field, its tag included, is appended to it. `data` need not be valid:
    whatever does not cut into whole fields of known tags ending exactly at its end gives
    None."""
    runs = []
    i, n = 0, len(data)
    try:
        while i < n:
            tag = data[i]
            f0 = i
            i += 1
            if tag == _UPDATE_TAG:
                ln = data[i]
                if (
                    ln < 0x80
                ):  # Updates under 128 bytes: the common case, a run of one length at once
                    k = _same_length_run(data, f0, ln)
                    if k == 0:
                        return None  # cut short
                    runs.append((i + 1, ln, k, ln + 2))
                    i = f0 + k * (ln + 2)
                    continue
                ln, i = _varint(data, i)
                stride = i - f0 + ln
                if f0 + stride > n:
                    return None  # cut short
                # the next Updates behind the same tag and length bytes (no Python step each)
                k = _column_run(data, f0, stride, (n - f0) // stride, _run_checks(data[f0:i], ()))
                runs.append((i, ln, k, stride))
                i = f0 + k * stride
            elif tag in _VARINT_TAGS:
                _, i = _varint(data, i)
                if others is not None:
                    others.append((f0, i))
            elif tag in _LEN_TAGS:
                ln, i = _varint(data, i)
                i += ln
                if others is not None:
                    others.append((f0, i))
            else:
                return None
    except (IndexError, ValueError):
        return None
    return runs if i == n else None


def update_spans(
    data: bytes, others: list[tuple[int, int]] | None = None
) -> list[tuple[int, int]] | None:
    """(start, end) of every Update in a serialized WriteRequest, in order (`update_runs`,
    one tuple per Update), or None as `update_runs`."""
    runs = update_runs(data, others)
    if runs is None:
        return None
    return [
        (s, s + ln)
        for start, ln, k, stride in runs
        for s in range(start, start + k * stride, stride)
    ]


def varint_bytes(n: int) -> bytes:
    """n as a protobuf base-128 varint (the server's hand-built messages use it too)."""
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _run_checks(head: bytes, fixed: tuple) -> tuple[tuple[int, bytes], ...]:
    """(offset, byte) of every byte a record `head` + Update of the layout must hold (the
    head's, then each fixed piece's): `run` checks each across a whole run at once."""
    h = len(head)
    return tuple((j, head[j : j + 1]) for j in range(h)) + tuple(
        (h + off + j, piece[j : j + 1]) for off, piece in fixed for j in range(len(piece))
    )

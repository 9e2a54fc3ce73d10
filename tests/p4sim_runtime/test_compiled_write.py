"""The compiled write path (p4sim/runtime/_write.pyx) against the pure-Python reference.

The reference (tables.PyRec and the Python bulk loops) is kept beside the compiled module in
every process and the two are compared piece by piece (Rec, the bulk insert/delete, the
value decoding, the run checker), and planted slips in its source must each be caught by
the same comparison. The Write differential tests of test_p4rt_fastwrite.py run in this
process on its profile's Recs (compiled in the default, fast, run) and again in a child
process on the other profile's (every Rec of that process of the other class).
"""

from __future__ import annotations

import gc
import os
import random
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

from p4sim import profile
from p4sim.externs.meter import MeterState
from p4sim.model import ActionRef, KeyField, TableInfo
from p4sim.runtime import compiled_write, tables
from p4sim.runtime.tables import REC_FIELDS, ActionSpec, PyRec, Table
from p4sim.server.fastwrite import builders, scan, shapes

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def mod():
    return compiled_write.build(compiled_write.SOURCE.read_text(encoding="utf-8"))


def _fields(r) -> list:
    return [getattr(r, f) for f in REC_FIELDS]


def _rec_differences(m) -> list[str]:
    """The compiled Rec against the reference class: constructor, every field read and
    written, and the collector: out of it only while its fields are atomic."""
    out = []
    if tuple(m.FIELDS) != REC_FIELDS:
        out.append(f"fields {m.FIELDS}")
    for a in [
        (None, 0, ()),
        (None, 3, (1, 2), 5, ((0, 1, 255),), (1, 5), 7, 9),
        ("e", -1, (7,), 0, (), (), 2),
    ]:
        if _fields(m.Rec(*a)) != _fields(PyRec(*a)):
            out.append(f"Rec{a}: {_fields(m.Rec(*a))} != {_fields(PyRec(*a))}")
    for j, f in enumerate(REC_FIELDS):
        ref, got = PyRec(None, 0, ()), m.Rec(None, 0, ())
        for r in (ref, got):
            setattr(r, f, 1000 + j)
        if _fields(got) != _fields(ref):
            out.append(f"{f} written: {_fields(got)} != {_fields(ref)}")
        if gc.is_tracked(got):
            out.append(f"{f} = an int tracks the Rec")
        setattr(got, f, [])  # a container: the Rec may now be part of a cycle
        if not gc.is_tracked(got):
            out.append(f"{f} = a list leaves the Rec untracked")
    r = m.Rec(None, 0, ())
    r.meter = MeterState()
    if not gc.is_tracked(r):
        out.append("a meter leaves the Rec untracked")

    class Mark:
        pass

    r, mark = m.Rec(None, 0, ()), Mark()
    r.entry = [r, mark]  # a cycle through the Rec: the collector must free it
    seen = weakref.ref(mark)
    del r, mark
    gc.collect()
    if seen() is not None:
        out.append("a cycle through a Rec is never collected")
    return out


def _table(size: int = 64) -> Table:
    return Table(
        TableInfo(
            name="t", keys=(KeyField("k", "exact", 48, 1),), actions=(ActionRef("fwd"),), size=size
        ),
        [ActionSpec("fwd", (("port", 9),))],
    )


def _table_state(t: Table) -> tuple:
    return (
        [(k, _fields(r)) for k, r in t.recs.items()],
        [(k, r.seq) for k, r in t.exact1.items()],
        t.seq,
        t.next_handle,
        list(t.free_handles),
    )


def _bulk_differences(m, seed: int = 5, steps: int = 60) -> list[str]:
    """Random runs of bulk inserts and deletes (duplicates in a run, keys already there,
    missing keys, the table filling up, handles freed and reused) mixed with one-by-one
    ones, on a reference table and on one the compiled functions write: every result and
    the whole state after every step must be equal."""
    rnd = random.Random(seed)
    ref, got = _table(40), _table(40)
    out = []
    done = [False, False]
    # first, runs refused late: a key already there, then one given twice, after new ones
    script = [("ins", [1, 2, 3]), ("ins", [4, 5, 2]), ("ins", [6, 7, 6]), ("del", [1, 9])]
    for step in range(steps):
        if step < len(script):
            kind, vs = script[step]
        else:
            kind = rnd.choice(["ins", "ins", "del", "one"])
            there = list(ref.exact1)
            pool = (
                there
                if kind == "del" and there and rnd.random() < 0.8
                else [v for v in range(60) if v not in ref.exact1]
                if rnd.random() < 0.8
                else range(60)
            )
            vs = [rnd.choice(pool) for _ in range(rnd.randrange(1, 12))]
            if rnd.random() < 0.8:  # else maybe a key twice in one run
                vs = list(dict.fromkeys(vs))
        args = [(rnd.randrange(512),) for _ in vs]
        if kind == "ins":
            a, b = (
                tables.py_insert_exact1_many(ref, vs, 0, args),
                m.insert_exact1_many(got, vs, 0, args),
            )
        elif kind == "del":
            a, b = tables.py_delete_exact1_many(ref, vs), m.delete_exact1_many(got, vs)
        else:
            v = vs[0]
            a = b = None
            if v in ref.exact1:
                ref.delete_checked((v,))
                got.delete_checked((v,))
            elif len(ref.recs) < 40:
                ref.insert_exact1_checked(v, 0, args[0])
                got.insert_exact1_checked(v, 0, args[0])
        if a and kind in ("ins", "del"):
            done[kind == "del"] = True
        if a != b or _table_state(ref) != _table_state(got):
            out.append(f"step {step} {kind} {vs}: {a} != {b} or the states differ")
            break
    for r in got.recs.values():
        if r.tests != ((0, r.mkey[0], (1 << 48) - 1),):
            out.append(f"tests {r.tests}")
    if done != [True, True]:
        out.append(f"bulk insert and delete did not both succeed at least once: {done}")
    return out


def _handle_differences(m) -> list[str]:
    """Bulk inserts taking handles from free heaps of every order: ascending (read in
    place), a heap whose first handles are in order but not the rest, not in order at
    all, handles past one CPython digit (2**30): the
    handles given and the heap left must be the reference's; then a bulk Rec's `seq`
    (a C integer until written) written."""
    heaps = [
        [],
        list(range(10)),
        [1, 2, 9, 5, 7],
        [0, 1, 2, 3, 8, 4, 6, 5],
        [3, 5, 4],
        [(1 << 30) - 1, 1 << 30, (1 << 30) + 1],
        [5, (1 << 40) + 2, (1 << 40) + 1],
        [7, (1 << 61) + 1, 1 << 61],
        [1, (1 << 31) + 5, (1 << 30) + 9],
        [4, 4, 6],
    ]
    out = []
    for free in heaps:
        for n in sorted({1, 2, len(free), len(free) + 3}):
            ref, got = _table(64), _table(64)
            for t in (ref, got):
                t.free_handles[:] = free
                t.next_handle = max(free, default=0) + 1
            vs, args = list(range(100, 100 + n)), [(j,) for j in range(n)]
            a, b = (
                tables.py_insert_exact1_many(ref, vs, 0, args),
                m.insert_exact1_many(got, vs, 0, args),
            )
            if a != b or _table_state(ref) != _table_state(got):
                out.append(f"free {free}, {n} inserted: {_table_state(got)} != {_table_state(ref)}")
            if not (a and n):
                continue
            for t in (
                ref,
                got,
            ):  # a bulk Rec's seq written afterwards (kept as a C integer until then)
                t.exact1[100].seq = -5
            if _table_state(ref) != _table_state(got):
                out.append(
                    f"free {free}, {n} inserted, seq written: {_table_state(got)} != {_table_state(ref)}"
                )
    return out


def _values_ref(rows, kslot, kwidth, pslot, pwidth):
    """fastwrite's bulk_exact1 decoding, as its pure-Python branch does it."""
    vs = [int.from_bytes(r[kslot], "big") for r in rows]
    if not builders._fits(vs, kwidth):
        return None
    if pslot < 0:
        return vs, [()] * len(vs)
    ps = [int.from_bytes(r[pslot], "big") for r in rows]
    if not builders._fits(ps, pwidth):
        return None
    return vs, [(a,) for a in ps]


def _decode_differences(m, seed: int = 6) -> list[str]:
    """exact1_values and column_run against their pure-Python namesakes on random input
    (values of 0 to 12 bytes, widths around them and past 64 bits; records that differ
    anywhere, runs cut by the end of the data)."""
    rnd = random.Random(seed)
    out = []
    for _ in range(300):
        kl, pl = rnd.randrange(13), rnd.randrange(13)
        kw = rnd.choice([kl * 8, kl * 8 - 1, 48, 64, 65, 100]) if kl else rnd.choice([0, 1, 9])
        pw = rnd.choice([pl * 8, max(pl * 8 - 1, 0), 9, 64, 70])
        rows = []
        for _ in range(rnd.randrange(1, 6)):
            k = bytes(rnd.randrange(256) if rnd.random() < 0.3 else 0 for _ in range(kl))
            rows.append(
                (k, bytes(rnd.randrange(256) if rnd.random() < 0.5 else 0 for _ in range(pl)))
            )
        pslot = rnd.choice([-1, 1])
        want, got = _values_ref(rows, 0, kw, pslot, pw), m.exact1_values(rows, 0, kw, pslot, pw)
        if want != got:
            out.append(f"values {rows} {kw} {pslot} {pw}: {got} != {want}")
        # the same rows as records in a request: exact1_run_values reads them in place
        pad, head, r0 = rnd.randrange(3), rnd.randrange(3), rnd.randrange(4)
        koff = head + (pl + pad if pslot == 1 and rnd.random() < 0.5 else 0)
        poff = head + (0 if koff != head else kl + pad)
        stride = head + kl + pl + pad + rnd.randrange(2)
        data = bytearray(
            rnd.randrange(256) for _ in range(r0 + len(rows) * stride + rnd.randrange(3))
        )
        for j, (kb, pb) in enumerate(rows):
            base = r0 + j * stride
            data[base + koff : base + koff + kl] = kb
            data[base + poff : base + poff + pl] = pb
        k = len(rows) + (1 if rnd.random() < 0.1 else 0)  # sometimes a run past the end: None
        want = want if r0 + k * stride <= len(data) else None
        got = m.exact1_run_values(
            bytes(data), r0, stride, k, koff, kl, kw, poff if pslot == 1 else -1, pl, pw
        )
        if want != got:
            out.append(
                f"run values {bytes(data)!r} {r0} {stride} {k} {koff} {poff} {kw} {pw}: {got} != {want}"
            )
    # one long run whose arguments take every value under 256 and some above, in random
    # order and repeated (the per-call table of small arguments' tuples)
    params = [rnd.randrange(300) for _ in range(600)]
    rows = [(rnd.randrange(1 << 48).to_bytes(6, "big"), a.to_bytes(2, "big")) for a in params]
    data = b"".join(b"\x22" + kb + b"\x00" + pb for kb, pb in rows)
    for pw in (9, 8):  # (8: values from 256 are too wide: None)
        want = _values_ref(rows, 0, 48, 1, pw)
        got = m.exact1_run_values(data, 0, 10, len(rows), 1, 6, 48, 8, 2, pw)
        if want != got:
            out.append(f"run values of every small argument, width {pw}: {got} != {want}")
    for j in range(
        600
    ):  # records of up to 8 bytes, then longer ones (stretches of several 8-byte words)
        stride = rnd.randrange(1, 9) if j < 300 else rnd.randrange(9, 40)
        rec = bytes(rnd.randrange(3) for _ in range(stride))
        data = bytearray(
            rec * rnd.randrange(0, 12)
            + bytes(rnd.randrange(3) for _ in range(rnd.randrange(stride)))
        )
        if data and rnd.random() < 0.6:
            data[rnd.randrange(len(data))] ^= 1
        data = bytes(data)
        r0 = rnd.randrange(3)
        checks = tuple(
            (o, rec[o : o + 1])
            for o in sorted(rnd.sample(range(stride), rnd.randrange(1, min(stride, 64) + 1)))
        )
        kmax = rnd.randrange(0, 14)
        want, got = (
            scan._column_run_py(data, r0, stride, kmax, checks),
            m.column_run(data, r0, stride, kmax, checks),
        )
        if want != got:
            out.append(f"column_run {data!r} {r0} {stride} {kmax} {checks}: {got} != {want}")
    return out


def test_compiled_write_module_equals_the_reference(mod) -> None:
    assert _rec_differences(mod) == []
    assert _bulk_differences(mod) == []
    assert _handle_differences(mod) == []
    assert _decode_differences(mod) == []


PLANTS = {  # a slip in the compiled source -> the comparison that must catch it
    "handles not reused": (
        "r._hnd = <object>PyList_GET_ITEM(taken, j) if j < nt else first + (j - nt)",
        "r._hnd = first + j",
        _bulk_differences,
    ),
    "freed handle dropped": ("_heappush(free, rec._hnd)", "pass", _bulk_differences),
    "width not checked": (
        "if width < 64 and (u >> width) != 0:",
        "if width < 64 and (u >> width) > 1:",
        _decode_differences,
    ),
    "run value width not checked": (
        "if width < 64 and u >> width:",
        "if width < 64 and u >> width > 1:",
        _decode_differences,
    ),
    "keys of a refused run left in": (
        "                del exact1[vs[jj]]",
        "                pass",
        _bulk_differences,
    ),
    "stretch's last byte not compared": (
        "memcmp(p + base + soff[s], &want[sat[s]], slen[s])",
        "memcmp(p + base + soff[s], &want[sat[s]], slen[s] - 1)",
        _decode_differences,
    ),
    "heap taken as in order": (
        "        if cur < prev:\n            return False",
        "        if False:\n            return False",
        _handle_differences,
    ),
    "order checked as far as the handles taken": (
        "    for i in range(m):\n        o = PyList_GET_ITEM(xs, i)",
        "    for i in range(min(m, 3)):\n        o = PyList_GET_ITEM(xs, i)",
        _handle_differences,
    ),
    "big handle read as one digit": (
        "if (size == 1) return",
        "if (size >= 1) return",
        _handle_differences,
    ),
    "small argument cached under another value": (
        "t = <object>PyList_GET_ITEM(small, sv)",
        "t = <object>PyList_GET_ITEM(small, sv // 2)",
        _decode_differences,
    ),
    "word's last byte not compared": (
        "memset(mbytes, 0xFF, ln)",
        "memset(mbytes, 0xFF, ln - 1)",
        _decode_differences,
    ),
    "stretch cut to one word": (
        "            pos += 8\n",
        "            pos += slen[s]\n",
        _decode_differences,
    ),
    "bulk seq left unset": (
        "        r._seq_is_n = True\n",
        "        r._seq_is_n = False\n",
        _bulk_differences,
    ),
    "written seq hidden by the C counter": (
        "        self._seq = v\n        self._seq_is_n = False\n",
        "        self._seq = v\n",
        _handle_differences,
    ),
    "container left untracked": (
        "if _may_be_tracked(v) and not PyObject_GC_IsTracked(self):",
        "if False and not PyObject_GC_IsTracked(self):",
        _rec_differences,
    ),
}


@pytest.mark.parametrize("plant", PLANTS)
def test_planted_slip_in_the_compiled_code_is_caught(plant) -> None:
    old, new, check = PLANTS[plant]
    source = compiled_write.SOURCE.read_text(encoding="utf-8")
    assert source.count(old) == 1
    assert check(compiled_write.build(source.replace(old, new), stem="p4sim_write_plant")) != []


def test_the_profile_selects_the_write_path(monkeypatch, capsys) -> None:
    expect = os.environ.get("P4SIM_WRITE_EXPECT")  # set by the child run below
    from p4sim.runtime import action_profile

    if expect is not None:
        assert (tables.COMPILED is not None) == (expect == "compiled")
    assert tables.Rec is (tables.COMPILED.Rec if tables.COMPILED is not None else PyRec)
    assert type(action_profile.NO_ACTION) is tables.Rec and all(
        m._compiled is tables.COMPILED for m in (scan, shapes, builders)
    )
    for value, want in [
        (None, "compiled"),
        ("reference", "python"),
        ("fast", "compiled"),
        ("Reference", "python"),
    ]:
        if value is None:
            monkeypatch.delenv("P4SIM_PROFILE", raising=False)
        else:
            monkeypatch.setenv("P4SIM_PROFILE", value)
        assert compiled_write.selected() == want, value
    monkeypatch.setenv("P4SIM_PROFILE", "compiled")
    with pytest.raises(ValueError, match="P4SIM_PROFILE='compiled'"):
        compiled_write.selected()

    def unavailable(source, stem="p4sim_write"):
        raise compiled_write.CompileUnavailable("no C compiler (test)")

    monkeypatch.setenv("P4SIM_PROFILE", "fast")
    monkeypatch.setattr(compiled_write, "build", unavailable)
    monkeypatch.setattr(profile, "_said", set())  # said once per process: this test's own
    capsys.readouterr()
    assert compiled_write.load() is None
    assert (
        "compiled write path unavailable (no C compiler (test)): running the reference"
        in capsys.readouterr().err
    )


# the differential Write tests (full table state and every answer, fast path vs reference
# server) and their planted-bug controls, run with every Rec of the process compiled
DIFFERENTIAL = [
    "test_fast_path_answers_and_state_equal_the_reference",
    "test_runs_of_one_layout_equal_the_reference",
    "test_requests_cut_by_shape_equal_the_reference",
    "test_bulk_insert_makes_the_same_recs_as_one_by_one",
    "test_planted_bulk_commit_bug_is_caught",
    "test_planted_lax_run_is_caught",
]


def test_write_differentials_pass_on_the_compiled_write_path(mod) -> None:
    here = Path(__file__).resolve().parent
    other = (
        "python" if tables.COMPILED is not None else "compiled"
    )  # the Recs this process does not have
    env = {
        **os.environ,
        "P4SIM_PROFILE": "reference" if other == "python" else "fast",
        "P4SIM_WRITE_EXPECT": other,
    }
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-x",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            str(here / "test_p4rt_fastwrite.py"),
            "-k",
            " or ".join(DIFFERENTIAL),
            f"{here / 'test_compiled_write.py'}::test_the_profile_selects_the_write_path",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " passed" in r.stdout and "failed" not in r.stdout and "deselected" in r.stdout


def _start_line(flags: list[str], env: dict[str, str]) -> str:
    """The line a live p4sim-switch prints once it serves (the test ends it)."""
    cmd = [
        sys.executable,
        "-m",
        "p4sim.server_cli",
        "--no-p4",
        "--grpc-server-addr",
        "127.0.0.1:0",
        *flags,
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env={**env, "P4SIM_EXIT_WITH": str(os.getpid())},
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        lines = []
        for line in proc.stderr:  # type: ignore[union-attr]
            lines.append(line)
            if "serving P4Runtime" in line:
                return line
        raise AssertionError(f"{cmd}: no start line: {''.join(lines)[-2000:]}")
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_the_profile_flag_selects_the_pieces_and_the_start_line_says_which() -> None:
    # the flag is parsed before p4sim.runtime.tables picks the Rec class, and overrides the
    # environment; --frontend overrides only the front end
    env = {k: v for k, v in os.environ.items() if k != "P4SIM_PROFILE"}
    assert (
        "profile reference (python backend, python write path, grpc-python front end)"
        in _start_line(["--profile", "reference"], env)
    )
    fast = _start_line(["--profile", "fast"], {**env, "P4SIM_PROFILE": "reference"})
    assert "profile fast (compiled backend, compiled write path, native front end)" in fast
    assert (
        "profile fast (compiled backend, compiled write path, grpc-python front end)"
        in _start_line(["--frontend", "grpc"], env)
    )

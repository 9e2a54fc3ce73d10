"""p4sim table cost growth: whole-pipeline pps with 1k, 10k and 100k entries installed in
one exact, one LPM and one ternary table, each next to the same-run 1k figure.

Each kind runs a small v1model program (Ethernet/IPv4/L4 parser, one table in ingress,
deparser) on one core; every packet's key hits an entry drawn at random from all the
installed ones, so a large table is probed all over (no warm little corner).
- exact: ipv4.dst, /32 host routes;
- lpm: ipv4.dst, an Internet-like mix of prefix lengths (mostly /24, some /16-/23 and /25-/32);
- ternary: an ACL 5-tuple (src and dst with prefix masks, protocol exact or wildcard,
  source port wildcard, destination port exact or wildcard), distinct priorities; 2% of the
  entries use one of RANDOM_MASKS mask tuples drawn at random (non-prefix masks on every
  field), as an ACL that matches on odd bits has.
Entries go in through Switch.table_add (the API the P4Runtime server and the STF runner
use); the install time per entry is printed. `--sizes=a,b,c --packets=N --runs=R` change
the sizes (`make bench` keeps 1k/10k/100k; the smoke test uses tiny ones).
Target: >= 0.8 of the 1k figure at 100k entries for exact and lpm; the ternary curve is
printed with the lookup algorithm and the number of distinct mask tuples it searches.
"""

from __future__ import annotations

import os
import random
import struct
import tempfile
import time

from bench.p4sim_pipeline import baseline_text, empty_loop, measure  # measure: (CPU s, packets out)

# `python -m bench --smoke`: this section's smallest size (tests/bench runs it)
SMOKE = ["--sizes=100,400", "--packets=400", "--runs=1"]

SIZES = (1_000, 10_000, 100_000)
TARGET_RATIO = 0.8
N_PACKETS = 20_000
RUNS = 5
RANDOM_MASKS = 8

KEYS = {
    "exact": "hdr.ipv4.dst : exact;",
    "lpm": "hdr.ipv4.dst : lpm;",
    "ternary": (
        "hdr.ipv4.src : ternary; hdr.ipv4.dst : ternary; hdr.ipv4.proto : ternary; "
        "hdr.l4.sport : ternary; hdr.l4.dport : ternary;"
    ),
}

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t { bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags;
                bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst; }
header l4_t { bit<16> sport; bit<16> dport; }
struct headers_t { eth_t eth; ipv4_t ipv4; l4_t l4; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition select(hdr.eth.type) { 0x0800: ip; default: accept; } }
    state ip { pkt.extract(hdr.ipv4); pkt.extract(hdr.l4); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table t { key = { KEYS } actions = { fwd; drop; } default_action = drop(); size = 200000; }
    apply { t.apply(); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.ipv4); pkt.emit(hdr.l4); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _frame(src: int, dst: int, proto: int, sport: int, dport: int) -> bytes:
    eth = b"\x00\x00\x00\x00\x00\xfe\x02\x00\x00\x00\x00\x01\x08\x00"
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, 20 + 8 + 18, 0, 0, 64, proto, 0, src, dst)
    return eth + ip + struct.pack("!HH", sport, dport) + bytes(18)


def _entries(kind: str, n: int, rng: random.Random):
    """(match, priority, a key tuple (src, dst, proto, sport, dport) that hits it)."""
    from p4sim.model import Exact, Lpm, Ternary

    out, seen = [], set()
    odd = [tuple(rng.getrandbits(w) for w in (32, 32, 8, 16, 16)) for _ in range(RANDOM_MASKS)]
    while len(out) < n:
        if kind == "exact":
            dst = rng.getrandbits(32)
            if dst in seen:
                continue
            seen.add(dst)
            out.append(({"hdr.ipv4.dst": Exact(dst)}, 0, (1, dst, 17, 1, 2)))
        elif kind == "lpm":
            r = rng.random()
            plen = 24 if r < 0.6 else rng.randint(16, 23) if r < 0.9 else rng.randint(25, 32)
            mask = ((1 << plen) - 1) << (32 - plen)
            v = rng.getrandbits(32) & mask
            if (v, plen) in seen:
                continue
            seen.add((v, plen))
            # the key is in this prefix; a longer installed prefix may still win it, as it should
            out.append(
                (
                    {"hdr.ipv4.dst": Lpm(v, plen)},
                    0,
                    (1, v | (rng.getrandbits(32) & ~mask & 0xFFFFFFFF), 17, 1, 2),
                )
            )
        elif rng.random() < 0.02:
            masks = rng.choice(odd)
            vals = [rng.getrandbits(w) & m for w, m in zip((32, 32, 8, 16, 16), masks, strict=True)]
            ident = ("odd", *vals, *masks)
            if ident in seen:
                continue
            seen.add(ident)
            names = (
                "hdr.ipv4.src",
                "hdr.ipv4.dst",
                "hdr.ipv4.proto",
                "hdr.l4.sport",
                "hdr.l4.dport",
            )
            match = {k: Ternary(v, m) for k, v, m in zip(names, vals, masks, strict=True)}
            key = tuple(
                v | (rng.getrandbits(w) & ~m & ((1 << w) - 1))
                for w, v, m in zip((32, 32, 8, 16, 16), vals, masks, strict=True)
            )
            out.append((match, n - len(out), key))
        else:
            splen = rng.choice((8, 16, 24, 32))
            dplen = rng.choice((16, 24, 32))
            smask = ((1 << splen) - 1) << (32 - splen)
            dmask = ((1 << dplen) - 1) << (32 - dplen)
            src, dst = rng.getrandbits(32) & smask, rng.getrandbits(32) & dmask
            proto = rng.choice((6, 17, None))
            dport = rng.choice((80, 443, 4791, 22, 53, None))
            match = {"hdr.ipv4.src": Ternary(src, smask), "hdr.ipv4.dst": Ternary(dst, dmask)}
            if proto is not None:
                match["hdr.ipv4.proto"] = Ternary(proto, 0xFF)
            if dport is not None:
                match["hdr.l4.dport"] = Ternary(dport, 0xFFFF)
            ident = (src, splen, dst, dplen, proto, dport)
            if ident in seen:
                continue
            seen.add(ident)
            key = (
                src | (rng.getrandbits(32) & ~smask & 0xFFFFFFFF),
                dst | (rng.getrandbits(32) & ~dmask & 0xFFFFFFFF),
                proto if proto is not None else rng.choice((6, 17)),
                rng.getrandbits(16),
                dport if dport is not None else rng.getrandbits(16),
            )
            out.append((match, n - len(out), key))  # distinct priorities, as ACLs have
    return out


def _switch(kind: str, entries) -> tuple[object, float]:
    from p4sim.model import TableEntry
    from p4sim.runtime.switch import Switch

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, f"growth_{kind}.p4")
        with open(path, "w") as f:
            f.write(PROGRAM.replace("KEYS", KEYS[kind]))
        sw = Switch(path)
    t0 = time.process_time()
    for i, (match, prio, _) in enumerate(entries):
        sw.table_add(TableEntry("t", match, "fwd", {"port": 1 + i % 8}, priority=prio))
    return sw, time.process_time() - t0


def run(argv: list[str]) -> None:
    n_pkts, sizes, n_runs = N_PACKETS, SIZES, RUNS
    for a in argv:
        if a.startswith("--packets="):
            n_pkts = int(a.split("=", 1)[1])
        elif a.startswith("--sizes="):
            sizes = tuple(int(x) for x in a.split("=", 1)[1].split(","))
        elif a.startswith("--runs="):
            n_runs = int(a.split("=", 1)[1])
    print(
        f"CPU time (process_time), best of {n_runs} runs of {n_pkts:,} packets; the empty-loop baseline "
        f"is timed between the runs; ratios are to the same-run {sizes[0]:,}-entry figure"
    )
    for kind in ("exact", "lpm", "ternary"):
        # all sizes built first, then measured round-robin: a load change on the shared
        # machine then hits every size alike instead of skewing the ratio
        cases = []
        for n in sizes:
            rng = random.Random(f"{kind}{n}")
            entries = _entries(kind, n, rng)
            sw, t_add = _switch(kind, entries)
            frames = [_frame(*entries[rng.randrange(n)][2]) for _ in range(n_pkts)]
            measure(sw, frames[:2000])
            cases.append((n, sw, t_add, frames, []))
        empties = []
        for _ in range(n_runs):
            for _n, sw, _, frames, runs in cases:
                runs.append(measure(sw, frames))
            empties.append(empty_loop())
        empty = min(empties)
        base = None
        for n, _sw, t_add, _, runs in cases:
            dt, out = min(runs)
            if out != n_pkts:
                raise RuntimeError(
                    f"{kind} {n}: {n_pkts - out} of {n_pkts} packets missed the table"
                )
            pps = n_pkts / dt
            base = base or pps
            ratio = pps / base
            verdict = ""
            if kind != "ternary" and n == sizes[-1] and n >= 100 * sizes[0]:
                verdict = f"  target >= {TARGET_RATIO} x 1k: {'OK' if ratio >= TARGET_RATIO else 'BELOW TARGET'}"
            print(
                f"{kind:8s} {n:7,d} entries: {pps:9,.0f} pps  ({ratio:.2f} x the {sizes[0]:,} figure; "
                f"{dt * 1e6 / n_pkts:.1f} us/packet {baseline_text(dt / n_pkts, empty)}; "
                f"install {t_add * 1e6 / n:.1f} us/entry in-process){verdict}",
                flush=True,
            )
        # the table reports its own algorithm, so this line cannot drift from the code
        print(f"{kind:8s} algorithm: {cases[-1][1]._table('t').algorithm()}", flush=True)
        del cases


if __name__ == "__main__":
    import sys

    run(sys.argv[1:])

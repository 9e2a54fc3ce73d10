"""Fabric (controller/fabric): a 2-spine leaf-spine with a cross-leaf permutation of
line-rate WRITEs at 10 Gb/s for 1 ms virtual: wall time and frames (switch ingress passes)
per wall second; wall time for 2, 4, 8, 16 hosts (it should grow no faster than the number
of frames: the wall and CPU time per frame, best of two runs, and their ratio to the 2-host
figure; `--calls`: Python function calls per frame, which the machine's load does not
change); a stage table at 16 hosts and on a k=8 fat-tree (128 hosts, 80 switches): hosts, frames,
wall and CPU per frame, where the time goes (switch pipeline, traffic manager, host models,
event engine, packet building) and the per-frame cost at 128 hosts as a ratio to 16 hosts
(linear in frames: about 1); and sweep throughput on 1 vs 2 local Dask workers."""

from __future__ import annotations

import linecache
import sys
import threading
import time
from collections import Counter

# `python -m bench --smoke`: this section's smallest size (tests/bench runs it)
SMOKE = ["--quick", "--virtual-ns=50000", "--sweep-points=1"]

VIRTUAL_NS = 1_000_000
SHAPES = {2: (2, 2, 1), 4: (2, 2, 2), 8: (2, 4, 2), 16: (2, 4, 4)}


def _fabric(hosts: int, fat_tree_k: int = 0):
    """The bench's fabric with its flows: each host writes to the same slot one leaf on
    (leaf-spine `SHAPES[hosts]`), or, on a k-ary fat-tree, one pod on (every frame crosses
    the core: 5 switches)."""
    from controller.fabric.engine import Fabric
    from controller.fabric.scenarios import policy
    from controller.fabric.topology import fat_tree, leaf_spine

    if fat_tree_k:
        fab = Fabric(fat_tree(fat_tree_k), policy(ecn=True))
        step = (fat_tree_k // 2) ** 2  # hosts per pod
    else:
        s, leaves, h = SHAPES[hosts]
        fab = Fabric(leaf_spine(s, leaves, h), policy(ecn=True))
        step = h
    names = sorted(fab.hosts)
    for i, n in enumerate(names):
        fab.add_flow(n, names[(i + step) % len(names)], 1 << 30)
    fab.run(10_000)  # one-time costs (the packet library's first frames) out of the figure
    return fab


def _fabric_run(
    hosts: int, count_calls: bool = False, virtual_ns: int = VIRTUAL_NS
) -> tuple[float, float, int, float]:
    fab = _fabric(hosts)
    f0 = fab.frames_to_switches
    if count_calls:  # Python function calls: a figure the machine's load does not change
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        fab.run_for(virtual_ns)
        prof.disable()
        return 0.0, float(pstats.Stats(prof).total_calls), fab.frames_to_switches - f0, 0.0
    c0 = time.process_time()
    wall = fab.run_for(virtual_ns)
    cpu = time.process_time() - c0
    frames = fab.frames_to_switches - f0
    good = sum(fab.delivered(f) for f in fab.flows) * 8 / (virtual_ns + 10_000)
    return wall, cpu, frames, good


# -- where the time goes, by stage
STAGES = ("switch pipeline", "traffic manager", "host models", "event engine", "packet building")
# the innermost frame whose file is one of these names the stage (first match wins)
_STAGE_OF = (
    ("p4sim/runtime/tm.py", "traffic manager"),
    ("p4sim/", "switch pipeline"),
    ("controller/targets/p4sim.py", "switch pipeline"),
    ("controller/packets/", "packet building"),
    ("controller/hosts/", "host models"),
    ("controller/fabric/", "event engine"),
)


class StageSampler:
    """A statistical profiler of the calling thread: every `period` s another thread
    takes its stack and charges the sample to the stage of the innermost frame in one of
    the stages' files. Compiled code has no frame of its own: its time goes to the
    Python line that called it, so the engine line that calls a switch's compiled `send`
    (ingress, and egress when the queue is idle, with the traffic manager's idle fast
    path inlined) is charged to the switch pipeline. Samples are taken where the thread
    lets go of the GIL: a rough split (a few %), not an exact one; no run-time cost on
    the code measured but the sampler's own (about 2%)."""

    def __init__(self, period: float = 0.0005):
        self.period = period
        self.samples: Counter[str] = Counter()
        self._stop = threading.Event()
        self._tid = threading.get_ident()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._switch = sys.getswitchinterval()

    def _stage(self, f) -> str:
        while f is not None:
            code = f.f_code
            for part, stage in _STAGE_OF:
                if part in code.co_filename:
                    if stage == "event engine" and ".send(" in linecache.getline(
                        code.co_filename, f.f_lineno
                    ):
                        return "switch pipeline"
                    return stage
            f = f.f_back
        return "other"

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            frame = sys._current_frames().get(self._tid)
            self.samples[self._stage(frame)] += 1

    def __enter__(self) -> StageSampler:
        sys.setswitchinterval(self.period / 2)  # let the sampler in about when it asks
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        sys.setswitchinterval(self._switch)

    def split(self) -> dict[str, float]:
        """Each stage's share of the samples (0..1)."""
        n = sum(self.samples.values()) or 1
        return {st: self.samples.get(st, 0) / n for st in (*STAGES, "other")}


def _stage_row(
    label: str, hosts: int, fat_tree_k: int, virtual_ns: int, quick: bool = False
) -> tuple[float, str]:
    """One timed run (wall, CPU per frame) and one sampled run of the same traffic (the
    split; `quick`: one run, timed while sampled); the row's text and its CPU us/frame."""
    fab = _fabric(hosts, fat_tree_k)
    sampler = StageSampler()
    f0 = fab.frames_to_switches
    c0 = time.process_time()
    if quick:
        with sampler:
            wall = fab.run_for(virtual_ns)
    else:
        wall = fab.run_for(virtual_ns)
    cpu = time.process_time() - c0
    frames = fab.frames_to_switches - f0
    if not quick:
        fab2 = _fabric(hosts, fat_tree_k)
        with sampler:
            fab2.run_for(virtual_ns)
    per = cpu / frames * 1e6
    split = sampler.split()
    stages = " ".join(f"{split[st] * per:7.1f}" for st in STAGES)
    row = (
        f"{label:24} {len(fab.hosts):5} {len(fab.targets):4} {frames:7} {wall:6.2f} "
        f"{wall / frames * 1e6:7.1f} {per:7.1f} | {stages} {split['other'] * per:6.1f}"
    )
    return per, row


def stage_table(quick: bool, virtual_ns: int) -> None:
    """16 hosts vs a fat-tree: per-frame cost and its split; linear when the ratio is ~1."""
    k = 4 if quick else 8
    ft_ns = virtual_ns if quick else virtual_ns * 2 // 5  # past the start-up transient
    print(
        f"fabric stages (us/frame of CPU; {ft_ns / 1e3:g} us virtual on the fat-tree, "
        f"{virtual_ns / 1e3:g} us at 16 hosts):"
    )
    print(
        f"{'fabric':24} {'hosts':>5} {'sw':>4} {'frames':>7} {'wall s':>6} {'us wall':>7} "
        f"{'us CPU':>7} | " + " ".join(f"{st.split()[0][:7]:>7}" for st in STAGES) + "  other"
    )
    per16, row = _stage_row("leaf-spine 2x4x4", 16, 0, virtual_ns, quick)
    print(row)
    per_ft, row = _stage_row(f"fat-tree k={k}", k**3 // 4, k, ft_ns, quick)
    print(row)
    print(
        f"linearity: {per_ft / per16:.2f}x the 16-host CPU per frame at {k**3 // 4} hosts "
        f"(1.00 = cost linear in frames); target <= 15 us/frame at 16 hosts: "
        f"{'met' if per16 <= 15 else 'not met'} ({per16:.1f})"
    )


def run(argv: list[str]) -> None:
    quick = "--quick" in argv
    virtual_ns, n_points = (
        VIRTUAL_NS,
        0,
    )  # --virtual-ns=N, --sweep-points=K: a smaller run (smoke test)
    for a in argv:
        if a.startswith("--virtual-ns="):
            virtual_ns = int(a.split("=", 1)[1])
        elif a.startswith("--sweep-points="):
            n_points = int(a.split("=", 1)[1])
    sizes = [2, 4] if quick else [2, 4, 8, 16]
    repeats = 1 if quick else 2  # best of: the machine is shared, one run can be slowed
    base: tuple[float, float] | None = None
    for n in sizes:
        runs = [_fabric_run(n, virtual_ns=virtual_ns) for _ in range(repeats)]
        wall = min(r[0] for r in runs)
        cpu = min(r[1] for r in runs)
        frames, good = runs[0][2], runs[0][3]
        assert all(r[2] == frames for r in runs), "a fabric run is deterministic"
        w_per, c_per = wall / frames, cpu / frames
        base = base or (w_per, c_per)
        print(
            f"{n:2} hosts, {virtual_ns / 1e6:g} ms virtual: {wall:6.2f} s wall, {cpu:6.2f} s CPU, "
            f"{frames:7} frames, {frames / wall:8,.0f} frames/s wall; per frame "
            f"{w_per * 1e6:6.1f} us wall ({w_per / base[0]:.2f}x the 2-host figure), "
            f"{c_per * 1e6:6.1f} us CPU ({c_per / base[1]:.2f}x); {good:.1f} Gb/s delivered"
        )
    stage_table(quick, virtual_ns)
    if "--calls" in argv:
        first = None
        for n in sizes:
            _w, calls, frames, _g = _fabric_run(n, count_calls=True, virtual_ns=virtual_ns)
            first = first or calls / frames
            print(
                f"{n:2} hosts: {calls / frames:6.1f} Python calls per frame "
                f"({calls / frames / first:.2f}x the 2-host figure)"
            )
    from controller.fabric import sweep

    pts = sweep.points("deadlock", sweep.parse_sets("deadlock", ["flows=3,4", "watchdog=0,1"]))
    if n_points:
        pts = pts[:n_points]
    for p in pts:
        p["duration_us"] = 200
    for workers in (1,) if n_points else (1, 2):
        t0 = time.perf_counter()
        sweep.run_dask("deadlock", pts, workers=workers, processes=True)
        wall = time.perf_counter() - t0
        print(
            f"sweep of {len(pts)} deadlock points (200 us each) on {workers} local worker "
            f"process(es): {wall:.1f} s wall incl. cluster start, {len(pts) / wall:.2f} points/s"
        )

"""The software run and the RTL run of one scenario side by side: a table, the rate
curves, the RTL CNP timeline, and the CNP count/timing difference explained."""

from __future__ import annotations

import json
from pathlib import Path

from controller.scenarios.scenario import RunResult

from .loop import FilStats


def _gaps(times: list[int]) -> list[int]:
    return [b - a for a, b in zip(times, times[1:], strict=False)]


def table(sw: RunResult, rtl: RunResult) -> list[dict]:
    rows = []
    for a, b in zip(sw.flows, rtl.flows, strict=True):
        ga, gb = _gaps(a.cnp_times), _gaps(b.cnp_times)
        n = min(len(a.cnp_times), len(b.cnp_times))
        shift = [tb - ta for ta, tb in zip(a.cnp_times[:n], b.cnp_times[:n], strict=True)]
        rows.append(
            {
                "flow": a.name,
                "cnps_sw": a.cnps,
                "cnps_rtl": b.cnps,
                "first_cnp_us_sw": a.cnp_times[0] / 1e3 if a.cnp_times else None,
                "first_cnp_us_rtl": b.cnp_times[0] / 1e3 if b.cnp_times else None,
                "min_gap_us_sw": min(ga) / 1e3 if ga else None,
                "min_gap_us_rtl": min(gb) / 1e3 if gb else None,
                "mean_shift_us": sum(shift) / len(shift) / 1e3 if shift else None,
                "goodput_gbps_sw": a.goodput_bps / 1e9,
                "goodput_gbps_rtl": b.goodput_bps / 1e9,
                "final_rate_gbps_sw": a.final_rate_bps / 1e9,
                "final_rate_gbps_rtl": b.final_rate_bps / 1e9,
            }
        )
    return rows


def _fmt(v: object) -> str:
    if v is None:
        return "-"
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def markdown(rows: list[dict], explain: str) -> str:
    keys = list(rows[0])
    out = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    out += ["| " + " | ".join(_fmt(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(out) + "\n\n" + explain + "\n"


def explanation(
    stats: FilStats,
    width: int,
    clock_ps: int,
    frame_bytes: int,
    interval_ns: int,
    interval_cycles: int,
) -> str:
    beats = -(-frame_bytes // (width // 8))
    return (
        "Why the CNPs differ (same scenario, seed and switch; only h3's receive path differs):\n"
        f"- The RTL NP decides on the parser's record, which leaves 3 cycles after the frame's "
        f"last beat (roce_parser's RECORD_LATENCY); the MAC hands the RTL a frame once it is fully received and the 64-bit "
        f"datapath streams it in {beats} cycles of {clock_ps / 1e3:g} ns "
        f"({beats * clock_ps / 1e3:.0f} ns for a {frame_bytes} B frame). The Python NP "
        "answers at the arrival instant. A CNP then needs a few cycles more "
        "(record -> pending -> 74-byte frame).\n"
        f"- The interval is counted in clock cycles: {interval_ns} ns -> "
        f"ceil = {interval_cycles} cycles = {interval_cycles * clock_ps / 1e3:.1f} ns.\n"
        "- The host's RC responder also sees each frame later by the same streaming delay, "
        "so ACKs leave later; from the first CNP on the two runs are two trajectories of the "
        "same control loop, not a copy: counts can differ by one per interval boundary that "
        "a CE mark crosses, and rates follow from there.\n"
        f"- RTL run: {stats.records_checked} records cross-checked against decode() and "
        f"p4sim's parser, {stats.cnps} RTL CNPs each equal to the host's own CNP and to the "
        f"NP model's decision, {stats.mismatches} mismatches."
    )


def write(outdir: Path, sw: RunResult, rtl: RunResult, stats: FilStats, extra: dict) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir.mkdir(parents=True, exist_ok=True)
    files = []
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
    for ax, run, what in (
        (axes[0], sw, "software NP (Python)"),
        (axes[1], rtl, "RTL NP (roce_np)"),
    ):
        for key, pts in sorted(run.series["rate"].items()):
            ax.step(
                [t / 1e3 for t, _ in pts], [r / 1e9 for _, r in pts], where="post", lw=1, label=key
            )
        ax.set_title(f"{run.label}: RP rate, {what}")
        ax.set_xlabel("virtual time (us)")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("DCQCN rate (Gb/s)")
    fig.tight_layout()
    p = outdir / "rates_sw_vs_rtl.png"
    fig.savefig(p, dpi=90)
    plt.close(fig)
    files.append(p)
    fig, ax = plt.subplots(figsize=(10, 3))
    qps = sorted({q for _, q in stats.cnp_times})
    for i, f in enumerate(sw.flows):
        ax.plot(
            [t / 1e3 for t in f.cnp_times],
            [i + 0.15] * len(f.cnp_times),
            "x",
            color="tab:blue",
            label="software CNP at the RP" if i == 0 else None,
        )
    for i, f in enumerate(rtl.flows):
        ax.plot(
            [t / 1e3 for t in f.cnp_times],
            [i - 0.15] * len(f.cnp_times),
            "|",
            ms=12,
            color="tab:red",
            label="RTL CNP at the RP" if i == 0 else None,
        )
    ax.plot(
        [t / 1e3 for t, _ in stats.cnp_times],
        [qps.index(q) - 0.3 if q in qps else 0 for _, q in stats.cnp_times],
        ".",
        color="black",
        label="RTL CNP leaves roce_np",
    )
    ax.set_yticks(range(len(sw.flows)), [f.name for f in sw.flows])
    ax.set_xlabel("virtual time (us)")
    ax.set_title("CNP timeline")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    p = outdir / "cnp_timeline.png"
    fig.savefig(p, dpi=90)
    plt.close(fig)
    files.append(p)
    rows = table(sw, rtl)
    md = markdown(rows, explanation(stats, **extra))
    p = outdir / "compare.md"
    p.write_text(md)
    files.append(p)
    p = outdir / "compare.json"
    p.write_text(
        json.dumps(
            {
                "flows": rows,
                "rtl_cnps": stats.cnp_times,
                "records_checked": stats.records_checked,
                "mismatches": stats.mismatches,
            },
            indent=2,
        )
    )
    files.append(p)
    return files

"""What a scenario run leaves behind: a summary table (stdout), PNG plots, a pcap of the
mirror port, and a JSON summary."""

from __future__ import annotations

import json
from pathlib import Path

from controller.text_table import table

from .scenario import RunResult, ScenarioResult


def summary_text(res: ScenarioResult) -> str:
    sc = res.scenario
    out = [f"scenario {sc['name']}: {sc.get('title', '')}".rstrip(": ")]
    for run in res.runs:
        win = (run.duration_ns - run.warmup_ns) / 1e3
        out.append("")
        out.append(
            f"run {run.label}  (seed {run.seed}; {run.duration_ns / 1e3:g} us virtual, "
            f"measured over the last {win:g} us; {run.wall_s:.1f} s wall)"
        )
        rows = []
        total = sum(f.goodput_bps for f in run.flows)
        for f in run.flows:
            share = f.goodput_bps / total * 100 if total else 0.0
            rows.append(
                [
                    f.name,
                    f"{f.goodput_bps / 1e9:.3f}",
                    f"{share:.1f}%",
                    f"{f.mean_rate_bps / 1e9:.2f}",
                    f"{f.final_rate_bps / 1e9:.2f}",
                    str(f.retransmitted),
                    str(f.naks),
                    str(f.timeouts),
                    str(f.ce),
                    str(f.cnps),
                ]
            )
        out.append(
            table(
                rows,
                [
                    "flow",
                    "goodput Gb/s",
                    "share",
                    "RP limit mean",
                    "RP limit end",
                    "retx pkts",
                    "NAKs",
                    "timeouts",
                    "CE rx",
                    "CNPs rx",
                ],
            )
        )
        out.append(
            "RP limit: the DCQCN reaction point's rate limit R_C in Gb/s (the NIC's "
            "pacing ceiling, not what it sent), averaged over the measured window and "
            "at the end; goodput is in-order payload delivered; payload capacity of "
            f"the bottleneck {run.capacity_bps / 1e9:.3f} Gb/s"
        )
        q = run.queue
        c = run.counters
        if q.get("p50") is not None:
            fb = q.get("frame_bytes", 1)
            band = f"; Kmin..Kmax = {q['kmin']}..{q['kmax']} pkts" if "kmin" in q else ""
            out.append(
                f"bottleneck queue: median {q['p50']:.0f} pkts ({q['p50'] * fb / 1e3:.0f} KB), "
                f"mean {q['mean']:.1f}, 10-90% {q['p10']:.0f}..{q['p90']:.0f}, "
                f"max {q['max']:.0f}{band}"
            )
        keys = [
            ("ecn_marked", "CE marks"),
            ("pfc_tx", "PFC sent"),
            ("host_pfc_rx", "PFC received by hosts"),
            ("pfc_rx", "PFC received"),
            ("cnp_tx", "CNPs by switch"),
            ("cnp_rx", "CNPs through switch"),
            ("host_cnps_sent", "CNPs by hosts"),
            ("switch_drops", "pipeline drops"),
            ("tm_drops", "queue drops"),
        ]
        out.append("switch: " + ", ".join(f"{label} {c.get(k, 0)}" for k, label in keys))
        if run.telemetry is not None:
            from controller.telemetry import format_table

            out.append("switch telemetry per port and class (roce_switch.p4 counters):")
            out.append(format_table(run.telemetry))
        for n in dict.fromkeys(run.notes):
            out.append(f"note: {n}")
    out.append("")
    rp_on = bool((sc.get("nic") or {}).get("rp", True))
    out.append(
        "DCQCN parameters used"
        + ("" if rp_on else " (RP rate limiting off in this scenario)")
        + ":"
    )
    out.append(table([list(r) for r in res.runs[0].dcqcn.as_table()], ["parameter", "value"]))
    out.append("")
    out.append(
        table(
            [[v.name, "PASS" if v.ok else "FAIL", v.detail] for v in res.verdicts],
            ["check", "result", "detail"],
        )
    )
    return "\n".join(out)


BIN_US = 100  # event counts (CE marks, PFC frames) are plotted per 100 us of virtual time


def _binned(t_us: list[float], counts: list[int], bin_us: float) -> tuple[list[float], list[int]]:
    """Per-sample event counts summed into fixed bins: (bin start, count)."""
    bins: dict[int, int] = {}
    for t, n in zip(t_us, counts, strict=True):
        b = int(t // bin_us)
        bins[b] = bins.get(b, 0) + n
    if not bins:
        return [], []
    idx = range(min(bins), max(bins) + 1)
    return [i * bin_us for i in idx], [bins.get(i, 0) for i in idx]


def _events(ax, t_us: list[float], counts: list[int], color: str, what: str) -> None:
    x, y = _binned(t_us, counts, BIN_US)
    total = sum(counts)
    ax.bar(x, y, width=BIN_US, align="edge", color=color)
    ax.set_ylabel(f"{what} per {BIN_US} us")
    if not total:
        ax.set_ylim(0, 1)
        ax.text(
            0.5,
            0.5,
            f"no {what} in this run",
            transform=ax.transAxes,
            ha="center",
            va="center",
            color="grey",
        )
    else:
        ax.text(
            0.99, 0.95, f"total {total}", transform=ax.transAxes, ha="right", va="top", fontsize=8
        )


def _per_flow(
    ax,
    t_us: list[float],
    per_flow: dict[str, list[int]],
    what: str,
    lines: dict[str, list[int]] | None = None,
) -> None:
    """Per-flow event counts per BIN_US: bars side by side, optional second series as lines."""
    total = 0
    twin = ax
    names = list(per_flow)
    width = BIN_US / max(1, len(names))
    for i, name in enumerate(names):
        x, y = _binned(t_us, per_flow[name], BIN_US)
        total += sum(per_flow[name])
        ax.bar([v + i * width for v in x], y, width=width, align="edge", label=name)
        if lines and name in lines:  # its own scale: one NAK starts a window of resends
            twin = twin if i else ax.twinx()
            lx, ly = _binned(t_us, lines[name], BIN_US)
            twin.plot([v + BIN_US / 2 for v in lx], ly, lw=1, color="black", label=f"{name} NAKs")
            twin.set_ylabel(f"NAKs per {BIN_US} us")
            twin.set_ylim(0, max([1, *ly]) * 1.3)
    ax.set_ylabel(f"{what} per {BIN_US} us")
    if not total:
        ax.set_ylim(0, 1)
        ax.text(
            0.5,
            0.5,
            f"no {what} in this run",
            transform=ax.transAxes,
            ha="center",
            va="center",
            color="grey",
        )
    else:
        ax.legend(fontsize=7, loc="upper left")
        if twin is not ax:
            twin.legend(fontsize=7, loc="upper right")


def write_plots(run: RunResult, outdir: Path, stem: str, rp_on: bool = True) -> list[Path]:
    """Rates, the watched queue, CE marks and PFC frames over virtual time (one PNG); the
    RP (DCQCN) rate lines only when the scenario's NICs rate-limit (`nic: {rp: true}`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = run.series
    t_us = [t / 1e3 for t in s["t"]]
    warm_us = run.warmup_ns / 1e3
    lossy = any(any(v) for v in s.get("retx", {}).values()) or run.sweep_value is not None
    n = 6 if lossy else 5
    fig, axes = plt.subplots(n, 1, figsize=(9, 2.9 * n), sharex=True)
    if warm_us > 0:  # the summary's numbers come from after the warm-up
        for ax in axes:
            ax.axvspan(0, warm_us, color="0.93", zorder=0)
    ax = axes[0]
    # goodput per sample is quantised to whole packets: show a 100 us moving average
    step = (t_us[1] - t_us[0]) if len(t_us) > 1 else 1.0
    k = max(1, round(100 / step))
    top = 0.0
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, vals) in enumerate(s["goodput"].items()):
        color = colors[i % len(colors)]  # one colour per flow: goodput solid, RP rate dashed
        avg = [
            sum(vals[max(0, j - k + 1) : j + 1]) / len(vals[max(0, j - k + 1) : j + 1])
            for j in range(len(vals))
        ]
        ax.plot(
            t_us,
            [v / 1e9 for v in avg],
            color=color,
            lw=1,
            label=f"{name} goodput ({k * step:g} us avg)",
        )
        rate = s["tx"].get(name, []) if rp_on else []
        if rate:
            ax.plot(
                t_us[: len(rate)],
                [v / 1e9 for v in rate],
                color=color,
                ls="--",
                lw=1,
                label=f"{name} RP limit R_C (DCQCN pacing ceiling)",
            )
        top = max([top, *(v / 1e9 for v in avg), *(v / 1e9 for v in rate)])
    link = run.line_bps / 1e9
    ax.axhline(link, color="grey", lw=0.8, ls=":", label=f"link {link:g} Gb/s")
    ax.set_ylim(0, max(top, link) * 1.3)  # room for the legend above the lines
    ax.set_ylabel("rate (Gb/s)")
    ax.set_title(f"{run.label}: goodput per flow" + (" and the RP's rate limit" if rp_on else ""))
    ax.legend(fontsize=7, loc="upper right", ncol=2)
    ax = axes[1]
    q = run.queue
    if "port" in q:
        ax.plot(t_us, s["queue"], color="tab:red", lw=1, label="depth")
        if "kmin" in q:
            ax.axhline(q["kmin"], color="grey", ls=":", label=f"Kmin ({q['kmin']:g} pkts)")
            ax.axhline(q["kmax"], color="black", ls=":", label=f"Kmax ({q['kmax']:g} pkts)")
        ax.legend(fontsize=7, loc="upper right")
        ax.set_ylim(0, max([1, *s["queue"], q.get("kmax", 0)]) * 1.15)
        if not any(s["queue"]):
            ax.text(
                0.5,
                0.5,
                "the queue stayed empty",
                transform=ax.transAxes,
                ha="center",
                va="center",
                color="grey",
            )
        ax.set_title(f"bottleneck queue: port {q['port']:g}, class {q['class']:g}")
    else:
        ax.set_ylim(0, 1)
        ax.text(
            0.5,
            0.5,
            "no queue watched in this scenario",
            transform=ax.transAxes,
            ha="center",
            va="center",
            color="grey",
        )
        ax.set_title("bottleneck queue")
    ax.set_ylabel("depth (packets)")
    _events(axes[2], t_us, s["ce"], "tab:orange", "CE-marked packets")
    axes[2].set_title("ECN CE-marked packets received by the hosts")
    _events(axes[3], t_us, s["pfc"], "tab:purple", "PFC frames")
    axes[3].set_title("PFC pause frames received by the hosts")
    _per_flow(axes[4], t_us, s.get("cnp", {}), "CNPs")
    axes[4].set_title("CNPs received per flow at the reaction point")
    if lossy:
        _per_flow(axes[5], t_us, s.get("retx", {}), "retransmitted packets", s.get("naks", {}))
        rate = f"drop rate {run.sweep_value:g}" if run.sweep_value is not None else run.label
        axes[5].set_title(f"{rate}: go-back-N retransmissions (bars) and NAKs (line) per flow")
    axes[-1].set_xlabel(
        "virtual time (us)" + ("; grey: warm-up, left out of the summary" if warm_us > 0 else "")
    )
    fig.tight_layout()
    path = outdir / f"{stem}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return [path]


def write_sweep_plot(res: ScenarioResult, outdir: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = sorted(
        ((r.sweep_value or 0.0), sum(f.goodput_bps for f in r.flows) / 1e9) for r in res.runs
    )
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [f"{v * 100:g}%" for v, _ in pts]
    bars = ax.bar(labels, [g for _, g in pts], color="tab:blue")
    base = pts[0][1] or 1.0
    for bar, (_, g) in zip(bars, pts, strict=True):
        ax.annotate(
            f"{g:.2f} Gb/s\n{g / base * 100:.0f}%",
            (bar.get_x() + bar.get_width() / 2, g),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    ax.set_ylim(0, max(g for _, g in pts) * 1.2 or 1)
    ax.set_xlabel("drop rate")
    ax.set_ylabel("goodput (Gb/s)")
    ax.set_title("go-back-N goodput vs drop rate")
    fig.tight_layout()
    path = outdir / "goodput_vs_drop.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def write_pcap(frames: list[tuple], path: Path, snaplen: int = 0) -> Path:
    """Frames (virtual ns, bytes[, direction]) as a nanosecond pcap. Each record keeps the
    frame's true length as its original length; `snaplen` > 0 stores only that many bytes
    of each (smaller files; tshark's InfiniBand dissector then flags RoCE frames "Invalid
    Packet Length" although the record's original length is right: use 0 for clean decodes)."""
    from scapy.utils import RawPcapWriter

    w = RawPcapWriter(str(path), linktype=1, nano=True, sync=False, snaplen=snaplen or 262144)
    w.write_header(None)
    for t_ns, data, *_ in frames:
        kept = data[:snaplen] if snaplen else data
        w.write_packet(
            kept,
            sec=t_ns // 1_000_000_000,
            usec=t_ns % 1_000_000_000,
            caplen=len(kept),
            wirelen=len(data),
        )
    w.close()
    return path


def write_outputs(res: ScenarioResult, outdir: str | Path) -> list[Path]:
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for i, run in enumerate(res.runs):
        stem = res.scenario["name"] if len(res.runs) == 1 else f"{res.scenario['name']}_{i}"
        files += write_plots(run, out, stem, bool((res.scenario.get("nic") or {}).get("rp", True)))
        for port, frames in run.captures.items():
            files.append(write_pcap(frames, out / f"{stem}_mirror_port{port}.pcap"))
        if run.taps:  # every tapped port, both directions, in time order
            tapped = sorted((f for fr in run.taps.values() for f in fr), key=lambda f: f[0])
            ports = "_".join(str(p) for p in sorted(run.taps))
            files.append(write_pcap(tapped, out / f"{stem}_tap_port{ports}.pcap", run.snaplen))
    if len(res.runs) > 1:
        files.append(write_sweep_plot(res, out))
    summary = {
        "scenario": res.scenario["name"],
        "ok": res.ok,
        "verdicts": [{"check": v.name, "ok": v.ok, "detail": v.detail} for v in res.verdicts],
        "runs": [
            {
                "label": r.label,
                "seed": r.seed,
                "sweep_value": r.sweep_value,
                "duration_ns": r.duration_ns,
                "warmup_ns": r.warmup_ns,
                "wall_s": r.wall_s,
                "queue": r.queue,
                "counters": {k: v for k, v in r.counters.items() if isinstance(v, int | float)},
                "flows": [
                    {
                        "name": f.name,
                        "goodput_bps": f.goodput_bps,
                        "retransmitted": f.retransmitted,
                        "naks": f.naks,
                        "timeouts": f.timeouts,
                        "cnps": f.cnps,
                        "ce": f.ce,
                        "final_rate_bps": f.final_rate_bps,
                        "mean_rate_bps": f.mean_rate_bps,
                    }
                    for f in r.flows
                ],
                "capacity_bps": r.capacity_bps,
            }
            for r in res.runs
        ],
        "dcqcn": dict(res.runs[0].dcqcn.as_table()),
    }
    p = out / "summary.json"
    p.write_text(json.dumps(summary, indent=2))
    files.append(p)
    text = out / "summary.txt"
    text.write_text(summary_text(res) + "\n")
    files.append(text)
    return files

"""Plots for docs/benchmarks.md from the benchmarks' JSON output, and the figures as Markdown tables.

Reads (each optional; a missing file skips its plot and says so):

- ``producer.json`` from ``bench/producer_bench.py --sizes ... --json``: throughput against value size;
- ``proxy.json`` from ``bench/proxy_bench.py --json``: the daemon's CPU per message by process (intake reader, event
  loop), beside confluent-kafka producing the same messages directly;
- ``latency.json`` from ``bench/latency_bench.py --json``: send → delivery CDFs per rate;
- the stages of the runs of ``proxy.json`` measured with ``--profile``, and of ``proxy-before.json`` (the same
  command on the code before a change, for a before/after comparison): the daemon's CPU per message by stage;
- ``spark.json`` from ``bench/spark_bench.py --json`` (one or more runs, by row count and codec): Spark's writes,
  reads and write-backs, the data source beside confluent-kafka and the floor.

Writes ``benchmarks-throughput.png``, ``benchmarks-daemon-cpu.png``, ``benchmarks-daemon-stages.png``,
``benchmarks-latency.png`` and ``benchmarks-spark.png`` into ``--out`` (docs/) and prints the tables. Needs
matplotlib (the ``bench`` extra), never imported by the package.

    .venv/bin/python bench/report.py                      # bench/results/*.json -> docs/*.png
    .venv/bin/python bench/report.py --data /tmp/mine --out /tmp/plots
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parent.parent
COLOURS = {
    "bruce.producer": "#2563eb",
    "bruce.producer, no gc": "#93c5fd",
    "bruce.producer, gc frozen": "#60a5fa",
    "bruce.producer send_many": "#1e3a8a",
    "bruce.producer send_many, gc frozen": "#6366f1",
    "confluent-kafka": "#ea580c",
    "aiokafka (await send)": "#059669",
    "kafka-python": "#6b7280",
    "bruce daemon": "#7c3aed",
    "bruce data source": "#2563eb",
    "confluent foreachPartition": "#ea580c",
    "confluent mapInArrow": "#ea580c",
    "floor mapInArrow->noop": "#9ca3af",
    "floor data source->drop": "#d1d5db",
}
DPI = 110


def _load(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        print(f"({path} not found: its plot is skipped)")
        return None
    return json.loads(path.read_text())


def _save(fig: Any, data: dict[str, Any], path: Path) -> Path:
    """The machine footer, the layout, the PNG written and the figure closed."""
    _footer(fig, data)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _footer(fig: Any, data: dict[str, Any]) -> None:
    m = data["machine"]
    fig.text(
        0.99,
        0.01,
        f"{data['date']} · {m['cpu']} x{m['cpus']} · Python {m['python']} · one run on a shared, noisy machine",
        ha="right",
        va="bottom",
        fontsize=7,
        color="#6b7280",
    )


def throughput(data: dict[str, Any], out: Path) -> Path:
    """msgs/s and MB/s against value size, one line per client."""
    by_client: dict[str, list[tuple[int, float]]] = {}
    for r in data["rates"]:
        by_client.setdefault(r["client"], []).append((r["size"], r["msgs_per_s"]))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    for client, points in by_client.items():
        points.sort()
        sizes = [s for s, _ in points]
        dashed = "no gc" in client or "frozen" in client  # variants of ours, beside the defaults
        style = {"color": COLOURS.get(client), "marker": "o", "linestyle": "--" if dashed else "-"}
        left.plot(sizes, [r for _, r in points], label=client, **style)
        right.plot(sizes, [s * r / 1e6 for s, r in points], label=client, **style)
    for ax, ylabel in ((left, "messages per second"), (right, "MB of values per second")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("value size (bytes)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=8)
    fig.suptitle("Producer throughput against value size (acks=1, one partition, tansu)")
    return _save(fig, data, out / "benchmarks-throughput.png")


def daemon_cpu(data: dict[str, Any], out: Path) -> Path:
    """Stacked bars: the daemon's CPU µs per message by process, per configuration; confluent-kafka beside."""
    runs = data["runs"]
    labels = [f"bruce [{r['config']}]" for r in runs]
    reader = [r["reader_cpu_us"] for r in runs]
    loop = [r["loop_cpu_us"] for r in runs]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    x = list(range(len(runs)))
    ax.bar(x, reader, color="#a78bfa", label="intake reader process")
    ax.bar(x, loop, bottom=reader, color="#7c3aed", label="event loop process (route, batch, produce, ACKs)")
    for i, r in enumerate(runs):
        ax.text(i, r["cpu_us"] + 0.05, f"{r['cpu_us']:.2f}", ha="center", fontsize=9)
    if data.get("peer"):
        x.append(len(runs))
        labels.append("confluent-kafka\n(direct, same messages)")
        peer = data["peer"]["cpu_us"]
        ax.bar([len(runs)], [peer], color=COLOURS["confluent-kafka"], label="confluent-kafka, all threads")
        ax.text(len(runs), peer + 0.05, f"{peer:.2f}", ha="center", fontsize=9)
    ax.set_xticks(x, labels, fontsize=9)
    ax.set_ylabel("CPU µs per message")
    ax.set_ylim(0, max(r["cpu_us"] for r in runs) * 1.45)
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(True, axis="y", alpha=0.3)
    s = data["settings"]
    fig.suptitle(f"Daemon CPU per message by process ({s['messages']:,} x {s['value_bytes']} B datagrams)")
    return _save(fig, data, out / "benchmarks-daemon-cpu.png")


READER_COLOURS = ["#ddd6fe", "#c4b5fd", "#a78bfa", "#7c3aed", "#5b21b6", "#4c1d95"]
LOOP_COLOURS = [
    "#bfdbfe",
    "#2563eb",
    "#60a5fa",
    "#93c5fd",
    "#0f766e",
    "#14b8a6",
    "#5eead4",
    "#ca8a04",
    "#facc15",
    "#fde68a",
    "#9ca3af",
    "#d1d5db",
    "#4b5563",
    "#6b7280",
    "#f59e0b",
    "#1e3a8a",
]


def stage_runs(proxy: dict[str, Any] | None, before: dict[str, Any] | None) -> list[tuple[str, list[dict]]]:
    """(label, stages) of every profiled run: the before file's first, then the current one's."""
    runs = []
    for data, when in ((before, "before"), (proxy, "after" if before else "")):
        for r in (data or {}).get("runs", []):
            if r.get("stages"):
                runs.append((f"{r['config']}, {when}".strip(", "), r["stages"]))
    return runs


def daemon_stages(runs: list[tuple[str, list[dict]]], data: dict[str, Any], out: Path) -> Path:
    """Horizontal stacked bars: each profiled run's CPU ns per message, by process and stage."""
    names = list(dict.fromkeys(f"{s['process']}: {s['stage']}" for _, stages in runs for s in stages))
    reader = [n for n in names if n.startswith("intake reader")]
    loop = [n for n in names if n not in reader]
    colour = {n: READER_COLOURS[i % len(READER_COLOURS)] for i, n in enumerate(reader)}
    colour |= {n: LOOP_COLOURS[i % len(LOOP_COLOURS)] for i, n in enumerate(loop)}
    fig, ax = plt.subplots(figsize=(10, 2.4 + 0.7 * len(runs) + 0.16 * ((len(names) + 1) // 2)))
    for y, (_, stages) in enumerate(runs):
        left = 0.0
        for s in stages:
            name = f"{s['process']}: {s['stage']}"
            ns = s["ns_per_msg"]
            ax.barh(y, ns, left=left, color=colour[name], edgecolor="white", linewidth=0.5)
            if ns >= 180:
                ax.text(left + ns / 2, y, f"{ns:.0f}", ha="center", va="center", fontsize=7)
            left += ns
        ax.text(left + 30, y, f"{left / 1000:.2f} µs", va="center", fontsize=9)
    ax.set_yticks(range(len(runs)), [label for label, _ in runs], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("CPU ns per message (both processes)")
    ax.set_xlim(0, max(sum(s["ns_per_msg"] for s in st) for _, st in runs) * 1.15)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[n]) for n in names]
    ax.legend(handles, names, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=2, frameon=False)
    ax.grid(True, axis="x", alpha=0.3)
    s = data["settings"]
    fig.suptitle(f"Daemon CPU per message by stage ({s['messages']:,} x {s['value_bytes']} B datagrams, sampled)")
    return _save(fig, data, out / "benchmarks-daemon-stages.png")


def latency(data: dict[str, Any], out: Path) -> Path:
    """One panel per rate: the CDF of send → delivery, y on a logit scale so the tail (p99, p99.9) is readable."""
    rates = sorted({r["rate"] for r in data["runs"]})
    fig, axes = plt.subplots(1, len(rates), figsize=(4.2 * len(rates), 4.2), sharey=True, squeeze=False)
    for ax, rate in zip(axes[0], rates, strict=True):
        for r in (r for r in data["runs"] if r["rate"] == rate):
            points = [(ms, q) for ms, q in r["cdf_ms"] if 0 < q < 1]
            label = r["client"] if r["client"] != "bruce daemon" else "bruce daemon (datagram → ACK)"
            ax.plot([ms for ms, _ in points], [q for _, q in points], color=COLOURS.get(r["client"]), label=label)
        ax.set_xscale("log")
        ax.set_yscale("logit")
        ax.set_yticks([0.1, 0.5, 0.9, 0.99, 0.999], ["p10", "p50", "p90", "p99", "p99.9"])
        ax.minorticks_off()
        ax.set_xlabel("latency (ms)")
        ax.set_title(f"{rate:,} messages/s")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8, loc="upper left")
    s = data["settings"]
    fig.suptitle(f"Send → delivery latency (acks=1, linger {s['linger_ms']} ms, {s['value_bytes']} B values)")
    return _save(fig, data, out / "benchmarks-latency.png")


def spark(data: dict[str, Any], out: Path) -> Path:
    """One panel per row count: rows/s of each Spark operation and codec, the data source (its ratio to the floor
    above its bar) beside confluent-kafka and the floor."""
    counts = sorted({r["rows"] for r in data["runs"].values()})
    fig, axes = plt.subplots(1, len(counts), figsize=(5.5 * len(counts), 4.4), squeeze=False)
    for ax, count in zip(axes[0], counts, strict=True):
        groups = [(what, r) for r in data["runs"].values() if r["rows"] == count for what in SPARK_OPERATIONS]
        for g, (what, run) in enumerate(groups):
            rates = run["rates"][what]
            floor = rates["floor mapInArrow->noop"]
            for b, (name, rate) in enumerate(rates.items()):
                width = 0.8 / len(rates)
                x = g + (b - (len(rates) - 1) / 2) * width
                ax.bar(x, rate, width=width * 0.92, color=COLOURS.get(name), label=_peer(name))
                if name == "bruce data source":
                    ax.text(x, rate, f"{rate / floor:.2f}x", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(groups)), [f"{what}\n{run['codec']}" for what, run in groups], fontsize=8)
        ax.set_title(f"{count:,} rows of {groups[0][1]['size']} B, {groups[0][1]['partitions']} partitions")
        ax.grid(True, axis="y", alpha=0.3)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.15)  # room for the legend
        ax.yaxis.set_major_formatter(lambda v, _: f"{v / 1e6:g}M" if v >= 1e6 else f"{v / 1e3:g}k")
    axes[0][0].set_ylabel("rows per second (best of the rounds)")
    unique = {}
    for ax in axes[0]:
        handles, labels = ax.get_legend_handles_labels()
        unique |= dict(zip(labels, handles, strict=True))
    axes[0][0].legend(unique.values(), unique.keys(), fontsize=8, loc="upper center", ncol=2)
    fig.suptitle("Spark local[2]: the bruce data source, confluent-kafka in the same job, and the floor (x floor)")
    return _save(fig, data, out / "benchmarks-spark.png")


SPARK_OPERATIONS = ("write", "read", "write-back")


def _peer(name: str) -> str:
    return "confluent-kafka" if name.startswith("confluent") else name


def tables(
    producer: dict | None, proxy: dict | None, lat: dict | None, stages: list | None = None, sparks: dict | None = None
) -> str:
    """The figures as Markdown tables (for docs/benchmarks.md)."""
    out: list[str] = []
    if sparks:
        out += ["| rows | codec | operation | data source | confluent-kafka | floor | vs peer | vs floor |"]
        out += ["|---:|---|---|---:|---:|---:|---:|---:|"]
        for r in sorted(sparks["runs"].values(), key=lambda r: (r["rows"], r["codec"] != "none")):
            for what in SPARK_OPERATIONS:
                rates = r["rates"][what]
                ours, floor = rates["bruce data source"], rates["floor mapInArrow->noop"]
                peer = next((v for k, v in rates.items() if k.startswith("confluent")), None)
                versus = f"{ours / peer:.2f}x" if peer else ""
                out.append(
                    f"| {r['rows']:,} | {r['codec']} | {what} | {ours:,} | {f'{peer:,}' if peer else ''} | {floor:,} "
                    f"| {versus} | {ours / floor:.2f}x |"
                )
        out.append("")
    if producer:
        clients = list(dict.fromkeys(r["client"] for r in producer["rates"]))
        sizes = sorted({r["size"] for r in producer["rates"]})
        rate = {(r["size"], r["client"]): r["msgs_per_s"] for r in producer["rates"]}
        out += ["| value size | " + " | ".join(clients) + " |", "|---|" + "---:|" * len(clients)]
        out += [f"| {s:,} B | " + " | ".join(f"{rate.get((s, c), 0):,}" for c in clients) + " |" for s in sizes]
        out.append("")
    if proxy:
        out += ["| run | msgs/s | CPU µs/msg | event loop | intake reader |", "|---|---:|---:|---:|---:|"]
        for r in proxy["runs"]:
            out.append(
                f"| bruce [{r['config']}] | {r['rate']:,.0f} | {r['cpu_us']:.2f} | {r['loop_cpu_us']:.2f} "
                f"| {r['reader_cpu_us']:.2f} |"
            )
        if proxy.get("peer"):
            p = proxy["peer"]
            out.append(f"| confluent-kafka (direct) | {p['rate']:,.0f} | {p['cpu_us']:.2f} | | |")
        out.append("")
    if stages:
        labels = [label for label, _ in stages]
        rows: dict[tuple[str, str], list[float]] = {}
        for i, (_, st) in enumerate(stages):
            for r in st:
                rows.setdefault((r["process"], r["stage"]), [0.0] * len(stages))[i] = r["ns_per_msg"]
        out += ["| process | stage | " + " | ".join(f"{x} ns/msg" for x in labels) + " |"]
        out += ["|---|---|" + "---:|" * len(stages)]
        out += [f"| {p} | {st} | " + " | ".join(f"{v:,.0f}" for v in ns) + " |" for (p, st), ns in rows.items()]
        totals = [sum(r["ns_per_msg"] for r in st) for _, st in stages]
        out += ["| | all | " + " | ".join(f"**{t:,.0f}**" for t in totals) + " |", ""]
    if lat:
        out += ["| rate | client | reached | p50 ms | p99 ms | p99.9 ms |", "|---:|---|---:|---:|---:|---:|"]
        for r in sorted(lat["runs"], key=lambda r: (r["rate"], r["client"])):
            out.append(
                f"| {r['rate']:,}/s | {r['client']} | {r['achieved']:,}/s | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} "
                f"| {r['p999_ms']:.2f} |"
            )
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=ROOT / "bench" / "results", help="where the JSON files are")
    p.add_argument("--out", type=Path, default=ROOT / "docs", help="where the PNG files go")
    a = p.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    producer = _load(a.data / "producer.json")
    proxy = _load(a.data / "proxy.json")
    lat = _load(a.data / "latency.json")
    before = _load(a.data / "proxy-before.json")
    sparks = _load(a.data / "spark.json")
    for data, plot in ((producer, throughput), (proxy, daemon_cpu), (lat, latency), (sparks, spark)):
        if data is not None:
            print(f"wrote {plot(data, a.out)}")
    stages = stage_runs(proxy, before)
    if stages:
        print(f"wrote {daemon_stages(stages, proxy or before, a.out)}")  # type: ignore[arg-type]
    print()
    print(tables(producer, proxy, lat, stages, sparks))
    return 0


if __name__ == "__main__":
    sys.exit(main())

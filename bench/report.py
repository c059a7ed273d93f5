"""Plots for docs/benchmarks.md from the benchmarks' JSON output, and the figures as Markdown tables.

Reads (each optional; a missing file skips its plot and says so):

- ``producer.json`` from ``bench/producer_bench.py --sizes ... --json``: throughput against value size;
- ``proxy.json`` from ``bench/proxy_bench.py --json``: the daemon's CPU per message by process (intake reader, event
  loop), beside confluent-kafka producing the same messages directly;
- ``latency.json`` from ``bench/latency_bench.py --json``: send → delivery CDFs per rate.

Writes ``benchmarks-throughput.png``, ``benchmarks-daemon-cpu.png`` and ``benchmarks-latency.png`` into ``--out``
(docs/) and prints the tables. Needs matplotlib (the ``bench`` extra), never imported by the package.

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
    ax.axhline(3.5, color="#dc2626", linestyle=":", linewidth=1)
    ax.text(len(x) - 0.55, 3.55, "issue 16 goal: 3.5", color="#dc2626", fontsize=8, ha="right", va="bottom")
    ax.set_xticks(x, labels, fontsize=9)
    ax.set_ylabel("CPU µs per message")
    ax.set_ylim(0, max([r["cpu_us"] for r in runs] + [3.5]) * 1.45)
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(True, axis="y", alpha=0.3)
    s = data["settings"]
    fig.suptitle(f"Daemon CPU per message by process ({s['messages']:,} x {s['value_bytes']} B datagrams)")
    return _save(fig, data, out / "benchmarks-daemon-cpu.png")


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


def tables(producer: dict | None, proxy: dict | None, lat: dict | None) -> str:
    """The figures as Markdown tables (for docs/benchmarks.md)."""
    out: list[str] = []
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
    for data, plot in ((producer, throughput), (proxy, daemon_cpu), (lat, latency)):
        if data is not None:
            print(f"wrote {plot(data, a.out)}")
    print()
    print(tables(producer, proxy, lat))
    return 0


if __name__ == "__main__":
    sys.exit(main())

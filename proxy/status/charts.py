"""The front page's charts: sparklines as inline SVG, server-rendered.

Rules: no script, nothing external; each chart has a text alternative (``aria-label``: now and peak) and a title;
a chart is scaled to its own maximum, which the page states beside it with the time it spans (the chart itself holds
no digit as text). Fewer than two values draw a dashed "no data yet" line.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape


def sparkline(values: Sequence[float], label: str, colour: str, *, width: int = 168, height: int = 40) -> str:
    """A small SVG line of ``values`` (per-second rates, oldest first), scaled to its own maximum (the caller states
    that maximum and the time span beside it)."""
    alt = f"{label}: no data yet" if len(values) < 2 else f"{label}: now {values[-1]:.1f}/s, peak {max(values):.1f}/s"
    head = f'<svg class="spark" viewBox="0 0 {width} {height}" height="{height}" preserveAspectRatio="none" role="img"'
    head += f' aria-label="{escape(alt)}"><title>{escape(label)}</title>'
    if len(values) < 2:
        y = height - 2
        return head + f'<line x1="0" y1="{y}" x2="{width}" y2="{y}" stroke="#c5cad3" stroke-dasharray="3 3"/></svg>'
    top = max(values) or 1.0
    step = width / (len(values) - 1)
    pts = " ".join(f"{i * step:.1f},{height - 2 - (v / top) * (height - 6):.1f}" for i, v in enumerate(values))
    area = f"0,{height} {pts} {width},{height}"
    return (
        head
        + f'<polygon points="{area}" fill="{colour}" fill-opacity="0.12"/>'
        + f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2" stroke-linejoin="round"'
        + ' vector-effect="non-scaling-stroke"/></svg>'
    )

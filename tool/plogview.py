"""plog packets (bruce.wire.plog) as plain values: the kind and the packet's fields.

Rules: the fields go through :class:`bruce.tool.tree.Trees` like any decoded body (bytes as text when UTF-8, else
``{"base64": ...}``); a fragment also names its topic and key tags.
"""

from __future__ import annotations

from typing import Any

from bruce.wire import Command, Fragment, Unboxed

from .tree import Trees


def plog_tree(packet: Unboxed | Command | Fragment) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": type(packet).__name__.lower(), **Trees().tree(packet)}
    if isinstance(packet, Fragment):
        out.update(topic=packet.topic, key=packet.key)
    return out

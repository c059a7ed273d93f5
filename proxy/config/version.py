"""The installed bruce-kafka version, as every page and command reports it."""

from __future__ import annotations

from importlib import metadata


def package_version() -> str:
    """The installed bruce-kafka version ("unknown" when run from a bare source tree)."""
    try:
        return metadata.version("bruce-kafka")
    except metadata.PackageNotFoundError:
        return "unknown"

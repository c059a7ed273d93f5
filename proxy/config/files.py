"""Reading a config file's bytes, bounded, with an error that says why it cannot be read."""

from __future__ import annotations

from pathlib import Path

from .errors import ConfigError

MAX_FILE_BYTES = 16 * 1024 * 1024


def read_config_bytes(path: str | Path) -> bytes:
    """A config file's bytes (at most :data:`MAX_FILE_BYTES`), or a :class:`ConfigError` naming the file."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except (OSError, ValueError) as error:  # ValueError: a NUL in the path
        reason = getattr(error, "strerror", None) or error
        raise ConfigError(f"cannot read the config file: {reason}", source=str(path)) from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"the config file is larger than {MAX_FILE_BYTES} bytes", source=str(path))
    return data

"""The spool's settings: the ``[spool]`` TOML table (each key checked by its ``--spool_*`` option's reader, errors
naming the key), the command line winning over it, and --convert_config writing it back."""

from __future__ import annotations

from pathlib import Path

import pytest

from bruce.proxy.config.errors import ConfigError
from bruce.proxy.config.model import Broker
from bruce.proxy.config.startup import configure, default_config
from bruce.proxy.config.toml_config import load_toml, to_toml
from bruce.proxy.daemon.spooling import spool_config

SPOOL = '\n[spool]\ndir = "/var/spool/bruce"\nfsync_ms = 0\nmax_bytes = 65536\nfull_policy = "discard"\n'


def base_toml() -> str:
    return to_toml(default_config([Broker("k1", 9092)]))


def test_the_spool_table_sets_the_spool_unless_the_command_line_does(tmp_path: Path) -> None:
    source = tmp_path / "bruce.toml"
    source.write_text(base_toml() + SPOOL)
    options, config = configure(["--config_path", str(source), "--spool_max_bytes", "4096"])
    assert (options.spool_dir, options.spool_fsync_ms, options.spool_max_bytes, options.spool_full_policy) == (
        "/var/spool/bruce",
        0,
        4096,
        "discard",
    )
    settings = spool_config(options)
    assert settings is not None and settings.max_bytes == 4096 and settings.segment_bytes == 16 * 1024**2
    assert load_toml(to_toml(config)).spool == config.spool  # --convert_config keeps it


def test_without_a_spool_dir_there_is_no_spool(tmp_path: Path) -> None:
    source = tmp_path / "bruce.toml"
    source.write_text(base_toml())
    options, _ = configure(["--config_path", str(source)])
    assert spool_config(options) is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("fsync = 5", 'spool.fsync: unknown setting; did you mean "fsync_ms"?'),
        ("fsync_ms = -1", "spool.fsync_ms: -1 is out of range"),
        ('full_policy = "drop"', 'spool.full_policy: "drop" is not one of: memory, discard'),
        ("segment_bytes = 100", "spool.segment_bytes: 100 is out of range"),
        ("dir = true", "spool.dir: expected a string or a whole number"),
    ],
)
def test_spool_table_errors_name_the_key(table: str, message: str) -> None:
    with pytest.raises(ConfigError, match="^f.toml: " + message.replace(".", r"\.").replace("?", r"\?")):
        load_toml(base_toml() + "\n[spool]\n" + table + "\n", source="f.toml")

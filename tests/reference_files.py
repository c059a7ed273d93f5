"""Where Bruce's own configuration files live: ../shared/reference beside the repository (CI provides it)."""

from __future__ import annotations

from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference"
BRUCE_CONF = REFERENCE / "bruce_conf.xml"
BRUCE_EXAMPLE_CONF = REFERENCE / "bruce_example_conf.xml"

for _path in (BRUCE_CONF, BRUCE_EXAMPLE_CONF):
    if not _path.is_file():
        raise FileNotFoundError(f"Bruce's reference config {_path} is missing: the tests need ../shared/reference")

"""tests/wire_modern: the warning filter of tests/wire (kafka-python, the interop peer, loads its schemas through a
deprecated importlib call)."""

from __future__ import annotations

from wire.conftest import pytest_configure as pytest_configure

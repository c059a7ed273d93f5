"""The API registry against Kafka's message specifications: every API the data file lists (written from Kafka 4.3's
JSON specs, ``data/api_versions.json``) is registered with the same key, name, highest version and first flexible
version, and decodes every version from 0; nothing else is registered. A change that drifts from the specs, or a new
Kafka version not yet declared, fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bruce.wire.protocol.base import REGISTRY

SPECS = json.loads((Path(__file__).parent / "data" / "api_versions.json").read_text())["apis"]


def test_the_registry_holds_exactly_the_apis_of_the_data_file() -> None:
    assert {api["key"]: api["name"] for api in SPECS} == {key: spec.name for key, spec in REGISTRY.items()}


@pytest.mark.parametrize("api", SPECS, ids=[api["name"] for api in SPECS])
def test_versions_and_flexible_versions_match_the_specs(api: dict) -> None:
    spec = REGISTRY[api["key"]]
    assert (spec.name, spec.versions, spec.first_flexible) == (
        api["name"],
        range(api["max"] + 1),
        api["first_flexible"],
    )
    assert 0 <= api["kafka_4_min"] <= api["max"]
    assert list(spec.requests) == list(spec.responses) == list(spec.versions)
    for version in spec.versions:  # the request and response headers follow the body's flexibility
        assert spec.is_flexible(version) == (api["first_flexible"] is not None and version >= api["first_flexible"])


def test_the_docs_table_lists_the_registry() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "wire.md").read_text()
    rows = re.findall(r"^\| (\d+) \| (\w+) \| v0(?:\u2013v(\d+))? \| (v\d+|\u2014) \| v(\d+) \| `(\w+)` \|$", doc, re.M)
    listed = {
        int(k): (name, int(top or 0), None if flex == "\u2014" else int(flex[1:]), mod)
        for k, name, top, flex, _, mod in rows
    }
    assert listed == {
        key: (spec.name, spec.versions[-1], spec.first_flexible, spec.request_type.__module__.rsplit(".", 1)[1])
        for key, spec in REGISTRY.items()
    }

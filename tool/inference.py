"""The (api key, version) of an answer whose request was not captured, worked out from the frame and what its
connection showed before it.

Rules:
- Candidates: every (key, version) of the registry whose answer layout parses the frame exactly (header and body,
  nothing left over).
- Narrowed, in this order, by what the connection showed (a rule that would leave no candidate is skipped): the
  versions the broker offered in an ApiVersions answer on the connection; the version the client used for the same
  API on the connection (a client settles one version per API per connection); on a connection whose opening was
  captured, the first answer is ApiVersions when ApiVersions parses it (today's clients open with it).
- Decided when one candidate is left, or when those left are versions of one API that read the frame alike (the
  same values; a field one of them lacks is absent from the frame): the API is then known, the version is one of
  ``versions``, and the body is shown with the fields of the first. Otherwise the answer is ambiguous and stays
  bytes, every candidate named: a guess is never shown as a fact.
- Bounded: the parses of the last ``KEPT`` answers of at most ``KEPT_SIZE`` bytes are remembered.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from bruce.wire import (
    API_VERSIONS_KEY,
    ApiSpec,
    ApiVersionsResponse,
    MalformedInput,
    UsageError,
    api_spec,
    api_specs,
    decode_response,
)

Candidate = tuple[int, int]  # (api key, version)
KEPT = 256  # answers whose parses are remembered ...
KEPT_SIZE = 4096  # ... when at most this big (after the correlation id)


@dataclass(eq=False)
class Evidence:
    """What one connection showed so far that tells an answer's API and version."""

    versions: dict[int, int] = field(default_factory=dict)  # api key -> version of its latest request
    offered: dict[int, tuple[int, int]] | None = None  # the broker's ApiVersions ranges
    answers: int = 0

    def request(self, api_key: int, version: int) -> None:
        self.versions[api_key] = version

    def answer(self, api_key: int | None, body: Any) -> None:
        self.answers += 1
        if api_key == API_VERSIONS_KEY and isinstance(body, ApiVersionsResponse) and body.error_code == 0:
            self.offered = body.ranges()


@dataclass(frozen=True, slots=True)
class Inference:
    """The outcome: the API decided (None when ambiguous), its versions that read the frame (one when the version is
    decided), the body, how, and every (key, version) that parsed the frame."""

    api_key: int | None
    versions: tuple[int, ...]
    body: Any
    how: str
    candidates: tuple[Candidate, ...]


def parses(frame: bytes) -> Mapping[Candidate, Any]:
    """Every (api key, version) whose answer layout parses ``frame`` (without its size prefix) exactly, with the
    body it reads. The same bodies recur (a consumer's empty fetches, heartbeats): those of the last ``KEPT`` small
    frames are remembered, by what follows the correlation id (the bodies do not depend on it)."""
    body = frame[4:]
    return _kept(body) if len(body) <= KEPT_SIZE else _parse_all(frame)


@functools.lru_cache(maxsize=KEPT)
def _kept(body: bytes) -> Mapping[Candidate, Any]:
    return MappingProxyType(_parse_all(b"\0\0\0\0" + body))


def _parse_all(frame: bytes) -> dict[Candidate, Any]:
    parsed: dict[Candidate, Any] = {}
    for spec in api_specs():
        for version in spec.responses:
            try:
                parsed[(spec.key, version)] = decode_response(spec.key, version, frame)[1]
            except (MalformedInput, UsageError):
                continue
    return parsed


def infer(parsed: Mapping[Candidate, Any], evidence: Evidence, *, opening: bool) -> Inference:
    """Work out the API and version of an answer from its :func:`parses`; ``opening``: it is the first answer of a
    connection whose start was captured."""
    every = tuple(parsed)
    if not every:
        return Inference(None, (), None, "request not captured; no known answer parses it", ())
    left, reasons = list(every), list[str]()
    rules = (
        ("within the versions the broker offered on this connection", _offered(evidence)),
        ("the version this connection uses for that API", _used(evidence)),
        ("the first answer of a connection is ApiVersions", _opening(opening)),
    )
    for reason, keep in rules:
        narrowed = [c for c in left if keep(c)]
        if narrowed and len(narrowed) < len(left):
            left, reasons = narrowed, [*reasons, reason]
    because = f" ({'; '.join(reasons)})" if reasons else ""
    if len(every) == 1:
        (key, version) = every[0]
        how = "request not captured; the only (api, version) whose answer parses it"
        return Inference(key, (version,), parsed[every[0]], how, every)
    if len(left) == 1:
        (key, version) = left[0]
        how = f"request not captured; {_names(every)} parse it, one fits{because}"
        return Inference(key, (version,), parsed[left[0]], how, every)
    if len({key for key, _ in left}) == 1 and all(parsed[c] == parsed[left[0]] for c in left):
        how = f"request not captured; {_names(tuple(left))} read it alike{because}"
        return Inference(left[0][0], tuple(v for _, v in left), parsed[left[0]], how, every)
    return Inference(None, (), None, f"request not captured; ambiguous: {_names(tuple(left))}{because}", every)


Rule = Callable[[Candidate], bool]


def _offered(evidence: Evidence) -> Rule:
    offered = evidence.offered
    return lambda c: offered is None or (c[0] in offered and offered[c[0]][0] <= c[1] <= offered[c[0]][1])


def _used(evidence: Evidence) -> Rule:
    versions = evidence.versions
    return lambda c: versions.get(c[0], c[1]) == c[1]


def _opening(opening: bool) -> Rule:
    return lambda c: not opening or c[0] == API_VERSIONS_KEY


def _names(candidates: tuple[Candidate, ...]) -> str:
    """``FindCoordinator v1, v2 | InitProducerId v4``."""
    by_key: dict[int, list[int]] = {}
    for key, version in candidates:
        by_key.setdefault(key, []).append(version)
    return " | ".join(f"{_spec(key).name} {', '.join(f'v{v}' for v in versions)}" for key, versions in by_key.items())


def _spec(key: int) -> ApiSpec:
    spec = api_spec(key)
    assert spec is not None  # candidates come from the registry
    return spec

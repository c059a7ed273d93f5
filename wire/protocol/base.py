"""The request/response framework: an API registry keyed by (api key, version), framing, headers, and conversion
between construct containers and frozen dataclasses.

Rules:
- Each API module declares one request and one response dataclass shared by all its versions, builds each version's
  body schema from one field list (:mod:`._versioned`), and registers an :class:`ApiSpec`. A module is imported when
  its key is first looked up in :data:`REGISTRY`, and a version's schema built on first use (:class:`Schemas`), so a
  program pays only for what it uses.
- A dataclass field that a version lacks must have a default; parsing that version leaves the default, building it
  ignores the field. Dataclass field names equal schema field names.
- Every struct in a flexible version ends with ``"tags" / TaggedFields``; the matching dataclass has
  ``tags: dict[int, bytes] | None = None`` (unknown tagged fields, kept raw).
- Frames on the wire are an int32 size followed by the header and body. ``encode_*`` return whole frames (with the
  size); ``decode_*`` take the frame *without* its size prefix, as a stream reader delivers it.
- Header versions: requests use v1 (client id) or v2 (flexible); responses v0 or v1 (flexible), except ApiVersions
  whose response header is always v0 (KIP-511).
- A tool decodes any request frame with :func:`decode_request` (the header names the API and version) and a response
  with :func:`decode_response`, given the key and version of the request it answers (:func:`response_correlation_id`
  pairs them); :func:`api_spec` tells whether a key is known, :func:`peek_request_header` reads the header of any
  request, known or not.
"""

from __future__ import annotations

import dataclasses
import importlib
import struct
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import construct as c

from ..errors import MalformedInput, UsageError
from ..primitives import (
    Int16,
    Int32,
    NullableString,
    TaggedFields,
    build,
    parse,
)
from . import API_MODULES

API_VERSIONS_KEY = 18


class Schemas(Mapping[int, c.Construct]):
    """The body schema of each version in ``versions``, built by ``build(version)`` on first use and kept."""

    def __init__(self, versions: range, build: Callable[[int], c.Construct]) -> None:
        self._versions = versions
        self._build = build
        self._built: dict[int, c.Construct] = {}

    def __getitem__(self, version: int) -> c.Construct:
        schema = self._built.get(version)
        if schema is None:
            if version not in self._versions:
                raise KeyError(version)
            schema = self._built[version] = self._build(version)
        return schema

    def __iter__(self) -> Iterator[int]:
        return iter(self._versions)

    def __len__(self) -> int:
        return len(self._versions)


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One Kafka API: its key, name, per-version body schemas and the dataclasses they convert to."""

    key: int
    name: str
    requests: Mapping[int, c.Construct]
    responses: Mapping[int, c.Construct]
    request_type: type
    response_type: type
    first_flexible: int | None = None  # first flexible version, None if the API has none (in our range)

    @property
    def versions(self) -> range:
        return range(min(self.requests), max(self.requests) + 1)

    def is_flexible(self, version: int) -> bool:
        return self.first_flexible is not None and version >= self.first_flexible


class _Registry(Mapping[int, ApiSpec]):
    """Every API of :data:`API_MODULES` by key, each module imported (and so registered) when its key is first
    looked up, whatever the way (``[key]``, ``get``, ``in``, iteration)."""

    def __init__(self) -> None:
        self._specs: dict[int, ApiSpec] = {}

    def __getitem__(self, api_key: int) -> ApiSpec:
        spec = self._specs.get(api_key)
        if spec is None:
            importlib.import_module(f"{__package__}.{API_MODULES[api_key]}")  # KeyError for an unknown key
            spec = self._specs[api_key]
        return spec

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(API_MODULES))

    def __len__(self) -> int:
        return len(API_MODULES)

    def add(self, spec: ApiSpec) -> None:
        if spec.key in self._specs:
            raise UsageError(f"API key {spec.key} registered twice")
        if API_MODULES.get(spec.key) != spec.request_type.__module__.rsplit(".", 1)[-1]:
            raise UsageError(f"{spec.name}: API key {spec.key} is not its module's in API_MODULES")
        self._specs[spec.key] = spec


REGISTRY = _Registry()
API_REGISTRY = REGISTRY  # the name bruce.wire exports it under
_BY_TYPE: dict[type, ApiSpec] = {}


def register(spec: ApiSpec) -> ApiSpec:
    """Add an API to the registry (each API module calls this once, when it is imported)."""
    if set(spec.requests) != set(spec.responses):
        raise UsageError(f"{spec.name}: request and response versions differ")
    REGISTRY.add(spec)
    _BY_TYPE[spec.request_type] = spec
    _BY_TYPE[spec.response_type] = spec
    return spec


def api_spec(api_key: int) -> ApiSpec | None:
    """The registered API of ``api_key``, or ``None`` for a key this library does not decode."""
    return REGISTRY.get(api_key)


def api_specs() -> tuple[ApiSpec, ...]:
    """Every registered API, by key: name, versions, first flexible version."""
    return tuple(spec for _, spec in sorted(REGISTRY.items()))


def spec_for(api_key: int) -> ApiSpec:
    try:
        return REGISTRY[api_key]
    except KeyError:
        raise UsageError(f"unknown API key {api_key}") from None


# ---------------------------------------------------------------- headers


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None
    tags: dict[int, bytes] | None = None


_REQUEST_HEADER_V1 = c.Struct(
    "api_key" / Int16,
    "api_version" / Int16,
    "correlation_id" / Int32,
    "client_id" / NullableString,  # v1: a classic nullable string even in v2 headers
)
_REQUEST_HEADER_V2 = c.Struct(*_REQUEST_HEADER_V1.subcons, "tags" / TaggedFields)  # v2: + tagged fields
_RESPONSE_HEADER_V0 = c.Struct("correlation_id" / Int32)
_RESPONSE_HEADER_V1 = c.Struct(*_RESPONSE_HEADER_V0.subcons, "tags" / TaggedFields)  # v1: + tagged fields

_SIZE = struct.Struct(">i")
_CORRELATION = struct.Struct(">i")


def peek_request_header(frame: bytes) -> RequestHeader:
    """What every request frame (without its size prefix) starts with, whatever its API and version: key, version,
    correlation id and client id (a flexible header's tagged fields follow and are not read). For a request this
    library does not decode, or one that does not decode."""
    parsed = parse(_REQUEST_HEADER_V1, frame, "request header")  # what follows is not read
    return RequestHeader(parsed.api_key, parsed.api_version, parsed.correlation_id, parsed.client_id)


def request_header_version(api_key: int, version: int) -> int:
    return 2 if spec_for(api_key).is_flexible(version) else 1


def response_header_version(api_key: int, version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if spec_for(api_key).is_flexible(version) else 0


# ---------------------------------------------------------------- dataclass conversion


def _nested_dataclass(hint: Any) -> type | None:
    """The dataclass a type hint holds, directly or inside tuples and optionals (``tuple[X, ...] | None`` -> X)."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint
    for arg in typing.get_args(hint):
        found = _nested_dataclass(arg)
        if found is not None:
            return found
    return None


@cache
def _field_plan(cls: type) -> tuple[tuple[str, type | None], ...]:
    """For each dataclass field: its name and, when it holds dataclasses (directly, in a tuple, or optional), their
    type."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, _nested_dataclass(hints[f.name])) for f in dataclasses.fields(cls))


def from_container(cls: type, obj: Any) -> Any:
    """Convert a parsed construct container (recursively) to the frozen dataclass ``cls``."""
    kwargs = {}
    for name, nested in _field_plan(cls):
        if name not in obj:
            continue  # not in this version: keep the dataclass default
        value = obj[name]
        if nested is not None and value is not None:
            if isinstance(value, list):
                value = tuple(from_container(nested, v) for v in value)
            else:
                value = from_container(nested, value)
        elif isinstance(value, list):
            value = tuple(value)
        kwargs[name] = value
    return cls(**kwargs)


def to_buildable(obj: Any) -> Any:
    """Convert a dataclass (recursively) to the dicts and lists construct builds from."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {name: to_buildable(getattr(obj, name)) for name, _ in _field_plan(type(obj))}
    if isinstance(obj, (tuple, list)):
        return [to_buildable(v) for v in obj]
    return obj


# ---------------------------------------------------------------- encode / decode


def _body_schema(table: Mapping[int, c.Construct], spec: ApiSpec, version: int, what: str) -> c.Construct:
    """The body schema of ``version``; :class:`UsageError` for a version this library does not implement."""
    try:
        return table[version]
    except KeyError:
        raise UsageError(f"{spec.name} {what} v{version} is not implemented") from None


def request_spec(body: Any) -> ApiSpec:
    """The API of a request dataclass; :class:`UsageError` for anything else."""
    spec = _BY_TYPE.get(type(body))
    if spec is None or type(body) is not spec.request_type:
        raise UsageError(f"{type(body).__name__} is not a registered request type")
    return spec


def encode_request(body: Any, *, version: int, correlation_id: int, client_id: str | None = "bruce") -> bytes:
    """A whole request frame (size prefix, header, body) for a request dataclass at ``version``."""
    spec = request_spec(body)
    schema = _body_schema(spec.requests, spec, version, "request")
    header = dict(api_key=spec.key, api_version=version, correlation_id=correlation_id, client_id=client_id, tags=None)
    header_schema = _REQUEST_HEADER_V2 if spec.is_flexible(version) else _REQUEST_HEADER_V1
    payload = build(header_schema, header, "request header") + build(schema, to_buildable(body), spec.name)
    return _SIZE.pack(len(payload)) + payload


def decode_request(frame: bytes) -> tuple[RequestHeader, Any]:
    """Parse a request frame (without its size prefix) into its header and body dataclass."""
    if len(frame) < 8:
        raise MalformedInput(f"request frame of {len(frame)} bytes is shorter than a header")
    api_key, version = struct.unpack_from(">hh", frame)
    spec = REGISTRY.get(api_key)
    if spec is None or version not in spec.requests:
        raise MalformedInput(f"unsupported request: API key {api_key} version {version}")
    frame_schema = _request_frame_schema(api_key, version)
    parsed = parse(frame_schema, frame, f"{spec.name} v{version} request")
    return from_container(RequestHeader, parsed.header), from_container(spec.request_type, parsed.body)


def encode_response(body: Any, *, version: int, correlation_id: int) -> bytes:
    """A whole response frame (size prefix, header, body) for a response dataclass at ``version``."""
    spec = _BY_TYPE.get(type(body))
    if spec is None or type(body) is not spec.response_type:
        raise UsageError(f"{type(body).__name__} is not a registered response type")
    schema = _body_schema(spec.responses, spec, version, "response")
    header_schema = _RESPONSE_HEADER_V1 if response_header_version(spec.key, version) == 1 else _RESPONSE_HEADER_V0
    header = build(header_schema, dict(correlation_id=correlation_id, tags=None), "response header")
    payload = header + build(schema, to_buildable(body), spec.name)
    return _SIZE.pack(len(payload)) + payload


def response_correlation_id(frame: bytes) -> int:
    """The correlation id that starts every response frame (without its size prefix)."""
    if len(frame) < 4:
        raise MalformedInput(f"response frame of {len(frame)} bytes has no correlation id")
    correlation_id: int = _CORRELATION.unpack_from(frame)[0]
    return correlation_id


def decode_response(api_key: int, version: int, frame: bytes) -> tuple[int, Any]:
    """Parse a response frame (without its size prefix) for the request it answers: (correlation id, body)."""
    spec = spec_for(api_key)
    _body_schema(spec.responses, spec, version, "response")  # UsageError for a version we do not implement
    parsed = parse(_response_frame_schema(api_key, version), frame, f"{spec.name} v{version} response")
    return parsed.header.correlation_id, from_container(spec.response_type, parsed.body)


@cache
def _request_frame_schema(api_key: int, version: int) -> c.Construct:
    spec = REGISTRY[api_key]
    header = _REQUEST_HEADER_V2 if spec.is_flexible(version) else _REQUEST_HEADER_V1
    return c.Struct("header" / header, "body" / spec.requests[version], c.Terminated)


@cache
def _response_frame_schema(api_key: int, version: int) -> c.Construct:
    spec = REGISTRY[api_key]
    header = _RESPONSE_HEADER_V1 if response_header_version(api_key, version) == 1 else _RESPONSE_HEADER_V0
    return c.Struct("header" / header, "body" / spec.responses[version], c.Terminated)

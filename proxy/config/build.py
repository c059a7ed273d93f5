"""Build a :class:`Config` from the neutral shape that both file loaders produce: the rules and the value syntax they
share.

The neutral shape is the TOML layout (docs/configuration.md): nested mappings and lists keyed by the TOML names,
holding raw values — strings from XML attributes, typed values from TOML. Each loader deals only with its syntax (XML:
elements, attributes, duplicates, stray text; TOML: the parser) and hands this shape over.

Rules:
- The ``[plog]`` section (TOML only: Bruce's XML has none) is read by :func:`bruce.proxy.plog.listeners_from_section`,
  whose messages already name the table and key.
- Here: which keys exist and which are required, unknown keys (with a suggestion), the value syntax (below), what
  Bruce ignores (the config of a disabled combined-topics entry or of a ``disable`` action, ``min_size`` of type
  ``none``) and the defaults (``size_threshold_percent`` 100, port 9092, no rate limiting).
- The ``[spool]`` table (TOML only) holds the ``--spool_*`` options without their prefix (``dir``, ``fsync_ms``,
  ...); each value is checked by the option's own reader.
- Initial brokers given by the caller (``--initial_brokers``, the embedded broker) replace the file's; the file may
  then leave them out. Brokers the file does list are checked all the same.
- Values are parsed as Bruce's ``conf.cc`` parses them. Surrounding whitespace is ignored. A number is decimal digits
  with an optional leading ``+``; where the ``k`` suffix is allowed (either case, whitespace before it allowed), it
  multiplies by 1024; where it is not, it is an error that says so, never silently ignored. A keyword (``disable``,
  ``unlimited``) is matched in any case and parses to ``None``. Booleans are ``true`` / ``false`` in any case. Names
  are trimmed. TOML integers are taken as they are (never a bool or a float); TOML strings are parsed like XML
  attributes. Negative numbers and numbers above 2**63 - 1 are refused.
- In the model: every rule that relates values (references, 0 vs "disable", ranges); constructing it checks them.
- Every error is a :class:`ConfigError` carrying the neutral ``path`` of the offending key; the loader turns the path
  into its own spelling and adds the file name and, where it knows it, the line.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from bruce.producer import PLAINTEXT, SECURITY_PROPERTIES, SETTINGS, SecurityConfig, read_setting
from bruce.producer import SETTING_NAMES as NAMES
from bruce.wire import BruceError

from .errors import CLIP, ConfigError, Path, clip
from .listeners import ListenerConfig, PlogConfigError, listeners_from_section
from .model import (
    DEFAULT_BROKER_PORT,
    IDEMPOTENCE,
    PRODUCER_PROPERTIES,
    SPOOL_KEYS,
    BatchingConfig,
    BatchLimits,
    Broker,
    CombinedTopics,
    CompressionCodec,
    CompressionConfig,
    CompressionType,
    Config,
    RateLimit,
    RateLimitingConfig,
    TopicAction,
    TopicBatching,
)
from .options import option_specs

T = TypeVar("T")
_MISSING = object()

COMPRESSION_TYPES = {kind.value: kind for kind in CompressionType}
MAX_NUMBER = 2**63 - 1
_DIGITS = re.compile(r"\+?[0-9]+")


def build_config(raw: object, *, actions: Mapping[str, TopicAction], initial_brokers: Sequence[Broker] = ()) -> Config:
    """The :class:`Config` described by ``raw``. ``actions`` maps the format's spellings of the batching actions;
    ``initial_brokers``, when given, replace the file's (which may then be left out)."""
    top = _table(raw, ())
    _known(top, (), ("batching", "compression", "topic_rate_limiting", "initial_brokers", "plog", "kafka", "spool"))
    if "initial_brokers" not in top and not initial_brokers:
        raise ConfigError(
            "is missing: list at least one broker here, or name them with --initial_brokers (or --embedded_broker)",
            path=("initial_brokers",),
        )
    listed = _brokers(top.get("initial_brokers", []), ("initial_brokers",))
    rate_limiting = top.get("topic_rate_limiting")
    kafka, producer = split_producer(_kafka_properties(top.get("kafka", {}), ("kafka",)), ("kafka",))
    config = Config(
        batching=_batching(_required(top, (), "batching"), ("batching",), actions),
        compression=_compression(_required(top, (), "compression"), ("compression",)),
        topic_rate_limiting=(
            RateLimitingConfig.unlimited()
            if rate_limiting is None
            else _rate_limiting(rate_limiting, ("topic_rate_limiting",))
        ),
        initial_brokers=listed or tuple(initial_brokers),
        plog_listeners=_plog(top.get("plog", {})),
        kafka=kafka_security(kafka),
        enable_idempotence=producer.pop(IDEMPOTENCE, None),  # type: ignore[arg-type]  # a bool: read by the settings table
        producer_properties=tuple(producer.items()),
        spool=_spool(top.get("spool", {}), ("spool",)),
    )
    if listed and initial_brokers:  # the file's brokers were checked with the rest; the caller's replace them
        config = dataclasses.replace(config, initial_brokers=tuple(initial_brokers))
    return config


def split_producer(properties: Mapping[str, object], path: Path) -> tuple[dict[str, object], dict[str, object]]:
    """``properties`` split into the security ones and the :data:`PRODUCER_PROPERTIES` (read by the producer's
    settings table: ``"200"`` and ``200`` alike, ``"true"`` a boolean)."""
    security = {k: v for k, v in properties.items() if k not in PRODUCER_PROPERTIES}
    producer = {}
    for key in PRODUCER_PROPERTIES:
        if key in properties:
            try:
                producer[key] = read_setting(SETTINGS[NAMES[key]], properties[key], key)
            except BruceError as error:
                raise ConfigError(str(error).partition(": ")[2], path=(*path, key)) from None
    return security, producer


def kafka_security(properties: Mapping[str, object], base: SecurityConfig = PLAINTEXT) -> SecurityConfig:
    """``base`` with librdkafka security ``properties`` applied (the ``[kafka]`` table, ``--kafka_property``)."""
    try:
        return SecurityConfig.from_mapping({**base.settings(), **properties})
    except BruceError as error:
        key = next((k for k in properties if str(error).startswith(f"{k}:")), None)
        path = ("kafka", key) if key else ("kafka",)
        raise ConfigError(str(error).split(": ", 1)[1] if key else str(error), path=path) from None


def _kafka_properties(raw: object, path: Path) -> dict[str, object]:
    """The ``[kafka]`` table: librdkafka property names (quoted, or TOML's dotted keys) → string or boolean values."""
    flat: dict[str, object] = {}

    def walk(table: Mapping[str, object], prefix: str) -> None:
        for key, value in table.items():
            name = f"{prefix}{key}"
            if isinstance(value, Mapping):
                walk(value, f"{name}.")
            elif isinstance(value, bool | str) or (isinstance(value, int) and name in PRODUCER_PROPERTIES):
                flat[name] = value
            else:
                raise ConfigError("expected a string (or true/false)", path=(*path, name))

    walk(_table(raw, path), "")
    for name in flat:
        if name not in SECURITY_PROPERTIES and name not in PRODUCER_PROPERTIES:
            close = _close(name, [*SECURITY_PROPERTIES, *PRODUCER_PROPERTIES])
            hint = f'; did you mean "{close[0]}"?' if close else ""
            raise ConfigError(f"not a security property bruce takes{hint} (docs/security.md)", path=(*path, name))
    return flat


def _spool(raw: object, path: Path) -> tuple[tuple[str, str | int], ...]:
    """The ``[spool]`` table, each value read as its ``--spool_<key>`` option reads it."""
    table = _table(raw, path)
    _known(table, path, SPOOL_KEYS)
    specs = option_specs()
    out = []
    for key in SPOOL_KEYS:
        if key in table:
            value = table[key]
            if isinstance(value, bool) or not isinstance(value, str | int):
                raise ConfigError("expected a string or a whole number", path=(*path, key))
            reader = specs[f"spool_{key}"].read
            try:
                out.append((key, reader(str(value))))  # type: ignore[misc]  # every --spool_* option has a reader
            except ValueError as error:
                raise ConfigError(str(error), path=(*path, key)) from None
    return tuple(out)


def _plog(raw: object) -> tuple[ListenerConfig, ...]:
    try:
        return listeners_from_section(raw)  # type: ignore[arg-type]  # it checks that raw is a table itself
    except PlogConfigError as error:
        raise ConfigError(str(error)) from None


# -- sections ------------------------------------------------------------------------------------


def _batching(raw: object, path: Path, actions: Mapping[str, TopicAction]) -> BatchingConfig:
    table = _table(raw, path)
    _known(
        table,
        path,
        (
            "named_configs",
            "produce_request_data_limit",
            "message_max_bytes",
            "combined_topics",
            "default_topic",
            "topic_configs",
        ),
    )
    named = _named(table, path, "named_configs", _batch_limits, required=False)
    combined_path = (*path, "combined_topics")
    combined = _table(_required(table, path, "combined_topics"), combined_path)
    _known(combined, combined_path, ("enable", "config"))
    enabled = _value(combined, combined_path, "enable", parse_bool)
    topics_path = (*path, "topic_configs")
    topics = _table(table.get("topic_configs", {}), topics_path)
    return BatchingConfig(
        named_configs=named,
        produce_request_data_limit=_value(table, path, "produce_request_data_limit", _size),
        message_max_bytes=_value(table, path, "message_max_bytes", _size),
        combined_topics=CombinedTopics(enabled, _config_name(combined, combined_path) if enabled else None),
        default_topic=_topic_batching(_required(table, path, "default_topic"), (*path, "default_topic"), actions),
        topic_configs={
            topic: _topic_batching(value, (*topics_path, topic), actions) for topic, value in topics.items()
        },
    )


def _batch_limits(raw: object, path: Path) -> BatchLimits:
    table = _table(raw, path)
    _known(table, path, ("time", "messages", "bytes"))
    return BatchLimits(
        time_ms=_value(table, path, "time", lambda v: parse_number(v, allow_k=False, keyword="disable")),
        messages=_value(table, path, "messages", lambda v: parse_number(v, allow_k=True, keyword="disable")),
        bytes=_value(table, path, "bytes", lambda v: parse_number(v, allow_k=True, keyword="disable")),
    )


def _topic_batching(raw: object, path: Path, actions: Mapping[str, TopicAction]) -> TopicBatching:
    table = _table(raw, path)
    _known(table, path, ("action", "config"))
    action = _value(table, path, "action", lambda v: parse_choice(v, actions, ignore_case=False))
    # Bruce ignores the config of a "disable" action; an empty one counts as absent.
    config = None if action is TopicAction.DISABLE else _config_name(table, path)
    return TopicBatching(action, config)


def _compression(raw: object, path: Path) -> CompressionConfig:
    table = _table(raw, path)
    _known(table, path, ("named_configs", "size_threshold_percent", "default_topic", "topic_configs"))
    percent = _value(table, path, "size_threshold_percent", _plain_number, default=100)
    return CompressionConfig(
        named_configs=_named(table, path, "named_configs", _codec, required=True),
        size_threshold_percent=percent,
        default_topic=_value(table, path, "default_topic", parse_name),
        topic_configs=_topic_names(table, path),
    )


def _codec(raw: object, path: Path) -> CompressionCodec:
    table = _table(raw, path)
    _known(table, path, ("type", "min_size"))
    kind = _value(table, path, "type", lambda v: parse_choice(v, COMPRESSION_TYPES, ignore_case=True))
    if kind is CompressionType.NONE:  # Bruce: optional and ignored for "none" (still checked if given)
        _value(table, path, "min_size", _size, default=0)
        return CompressionCodec(kind)
    if "min_size" not in table:
        raise ConfigError(
            f"is required for {kind} compression: the smallest message set, in bytes, worth compressing",
            path=(*path, "min_size"),
        )
    return CompressionCodec(kind, _value(table, path, "min_size", _size))


def _rate_limiting(raw: object, path: Path) -> RateLimitingConfig:
    table = _table(raw, path)
    _known(table, path, ("named_configs", "default_topic", "topic_configs"))
    return RateLimitingConfig(
        named_configs=_named(table, path, "named_configs", _rate_limit, required=True),
        default_topic=_value(table, path, "default_topic", parse_name),
        topic_configs=_topic_names(table, path),
    )


def _rate_limit(raw: object, path: Path) -> RateLimit:
    table = _table(raw, path)
    _known(table, path, ("interval", "max_count"))
    return RateLimit(
        interval_ms=_value(table, path, "interval", _plain_number),
        max_count=_value(table, path, "max_count", lambda v: parse_number(v, allow_k=True, keyword="unlimited")),
    )


def _brokers(raw: object, path: Path) -> tuple[Broker, ...]:
    if not isinstance(raw, list | tuple):
        raise ConfigError("expected a list of brokers, each with a host and an optional port", path=path)
    brokers = []
    for index, entry in enumerate(raw):
        where = (*path, index)
        table = _table(entry, where)
        _known(table, where, ("host", "port"))
        host = _value(table, where, "host", parse_name)
        brokers.append(Broker(host, _value(table, where, "port", _plain_number, default=DEFAULT_BROKER_PORT)))
    return tuple(brokers)


# -- shared pieces -------------------------------------------------------------------------------


def _size(raw: object) -> int:
    """A number where Bruce allows the k suffix (no keyword, so never None)."""
    return parse_number(raw, allow_k=True) or 0


def _plain_number(raw: object) -> int:
    """A number where Bruce does not allow the k suffix."""
    return parse_number(raw, allow_k=False) or 0


def _config_name(table: Mapping[str, object], path: Path) -> str | None:
    """The optional ``config`` reference of an entry; empty counts as absent."""
    return _value(table, path, "config", parse_name, default=None) or None


def _named(
    table: Mapping[str, object], path: Path, key: str, build: Callable[[object, Path], T], *, required: bool
) -> dict[str, T]:
    """``key``: a table of named configs, names trimmed (Bruce trims them)."""
    where = (*path, key)
    raw = _table(_required(table, path, key) if required else table.get(key, {}), where)
    result: dict[str, T] = {}
    for name, value in raw.items():
        trimmed = name.strip()
        if trimmed in result:
            raise ConfigError(f'defines the named config "{trimmed}" twice', path=(*where, trimmed))
        result[trimmed] = build(value, (*where, trimmed))
    return result


def _topic_names(table: Mapping[str, object], path: Path) -> dict[str, str]:
    """``topic_configs`` of compression and rate limiting: topic → named config."""
    where = (*path, "topic_configs")
    return {
        topic: _at((*where, topic), parse_name, value)
        for topic, value in _table(table.get("topic_configs", {}), where).items()
    }


def _table(raw: object, path: Path) -> Mapping[str, object]:
    if not isinstance(raw, Mapping):
        raise ConfigError("expected a table of settings", path=path)
    return raw


def _required(table: Mapping[str, object], path: Path, key: str) -> object:
    if key not in table:
        raise ConfigError("is missing: this setting is required", path=(*path, key))
    return table[key]


def _value(
    table: Mapping[str, object], path: Path, key: str, parse: Callable[[object], T], *, default: object = _MISSING
) -> T:
    if key not in table and default is not _MISSING:
        return default  # type: ignore[return-value]  # a caller's default is of the type its parse returns
    return _at((*path, key), parse, _required(table, path, key))


def _at(path: Path, parse: Callable[[object], T], raw: object) -> T:
    try:
        return parse(raw)
    except ConfigError as error:
        raise ConfigError(error.problem, path=path) from None


def _close(word: str, known: Sequence[str]) -> list[str]:
    """The known name ``word`` is most likely a misspelling of (none for a word longer than any name could be)."""
    return difflib.get_close_matches(word, known, n=1) if len(word) <= CLIP else []


def _known(table: Mapping[str, object], path: Path, known: Iterable[str]) -> None:
    known = tuple(known)
    for key in table:
        if key not in known:
            close = _close(str(key), known)
            hint = f'; did you mean "{close[0]}"?' if close else f"; expected one of: {', '.join(known)}"
            raise ConfigError(f"unknown setting{hint}", path=(*path, key))


# -- values (Bruce's syntax; see the module rules) ------------------------------------------------------------------


def _show(raw: object) -> str:
    """A raw value as the user wrote it, quoted if it is text."""
    if isinstance(raw, str):
        return json.dumps(clip(raw))
    if isinstance(raw, bool):
        return "true" if raw else "false"
    return str(raw)


def _accepted_forms(*, allow_k: bool, keyword: str | None) -> str:
    forms = ["a whole number"]
    if allow_k:
        forms.append('a number with the k suffix such as "256k" (256 * 1024)')
    if keyword:
        forms.append(f'"{keyword}"')
    return forms[0] if len(forms) == 1 else ", ".join(forms[:-1]) + " or " + forms[-1]


def parse_number(raw: object, *, allow_k: bool, keyword: str | None = None) -> int | None:
    """A non-negative integer, ``None`` for ``keyword``. ``allow_k``: accept the ``k`` suffix (* 1024)."""
    expected = _accepted_forms(allow_k=allow_k, keyword=keyword)
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise ConfigError(f"{_show(raw)} is not valid here: expected {expected}")
    if isinstance(raw, int):
        return _in_range(raw, _show(raw))
    text = raw.strip()
    if keyword is not None and text.lower() == keyword:
        return None
    if not text:
        raise ConfigError(f"the value is empty: expected {expected}")
    multiplier = 1
    if text[-1] in "kK":
        if not allow_k:
            raise ConfigError(
                f"{_show(raw)}: the k suffix (* 1024) is not allowed here; write the whole number"
                + (f' or "{keyword}"' if keyword else "")
            )
        text = text[:-1].rstrip()
        multiplier = 1024
    if not _DIGITS.fullmatch(text):
        raise ConfigError(f"{_show(raw)} is not valid here: expected {expected}")
    digits = text.lstrip("+0") or "0"
    if len(digits) > len(str(MAX_NUMBER)):  # too large, and too long for int() to read
        raise ConfigError(f"{_show(raw)} is too large: the largest accepted number is {MAX_NUMBER}")
    return _in_range(int(digits) * multiplier, _show(raw))


def _in_range(value: int, shown: str) -> int:
    if value < 0:
        raise ConfigError(f"{shown} is negative: expected a number of at least 0")
    if value > MAX_NUMBER:
        raise ConfigError(f"{shown} is too large: the largest accepted number is {MAX_NUMBER}")
    return value


def parse_bool(raw: object) -> bool:
    """``true`` / ``false`` (any case, trimmed), or a TOML boolean."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str):
        text = raw.strip().lower()
        if text in ("true", "false"):
            return text == "true"
    raise ConfigError(f'{_show(raw)} is not valid here: expected "true" or "false"')


def parse_name(raw: object) -> str:
    """A name (of a named config, a topic, a host): a string, trimmed."""
    if not isinstance(raw, str):
        raise ConfigError(f"{_show(raw)} is not valid here: expected a name in quotes")
    return raw.strip()


def parse_choice(raw: object, choices: Mapping[str, T], *, ignore_case: bool) -> T:
    """One of ``choices`` (keys are the spellings; trimmed; case-insensitive if ``ignore_case``)."""
    if isinstance(raw, str):
        text = raw.strip()
        for spelling, value in choices.items():
            if text == spelling or (ignore_case and text.lower() == spelling.lower()):
                return value
    allowed = ", ".join(f'"{spelling}"' for spelling in choices)
    raise ConfigError(f"{_show(raw)} is not valid here: expected one of {allowed}")

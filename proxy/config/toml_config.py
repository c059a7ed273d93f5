"""The same configuration as Bruce's XML file, written in TOML; and ``to_toml``, which renders any :class:`Config`.

Rules:
- The layout (docs/configuration.md) follows the XML element by element, with TOML's snake_case names:
  ``[batching]``, ``[batching.named_configs.NAME]``, ``[batching.topic_configs]``, ``[compression]``,
  ``[topic_rate_limiting]``, ``[[initial_brokers]]``. Batching actions are ``per_topic``, ``combined_topics``,
  ``disable``. Only TOML has ``[[plog.listener]]`` tables (docs/plog.md).
- Values are TOML integers, or strings parsed exactly like the XML attributes (``"256k"``, ``"disable"``,
  ``"unlimited"``); the keys, requirements and every rule are the XML loader's (``build.py``, the model).
- Errors name the file and the key path (``batching.named_configs.low_latency.time``); syntax errors also the line.
- Before the standard ``tomllib`` reads it, one linear scan refuses (naming the line) arrays and inline tables nested
  deeper than :data:`MAX_NESTING`, dotted keys of more than :data:`MAX_KEY_PARTS` parts and numbers longer than
  :data:`MAX_NUMBER_CHARS`: ``tomllib`` recurses once per level (a deep file would end in RecursionError), its time
  and memory grow with the square of a key's parts, and its number pattern takes ~120 bytes per digit. Everything
  else it reads in time and memory linear in the file.
- ``[kafka]`` holds librdkafka's security properties (docs/security.md) and the producer properties of
  :data:`~bruce.proxy.config.model.PRODUCER_PROPERTIES`, quoted (``"security.protocol"``) or as TOML dotted keys.
  ``to_toml`` writes secrets only by reference (``file:``/``env:``): a literal one is left out with a comment, so
  the output never holds a password (and fails to load until it is given again).
- ``to_toml`` writes a file that loads back to an equal :class:`Config`: sizes that are whole KiB as ``"Nk"``,
  keys quoted when they are not bare TOML keys, no ``[topic_rate_limiting]`` when nothing is limited, and in each
  ``[[plog.listener]]`` only the settings that differ from their defaults (protocol, port and topic always).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import fields

from bruce.producer import Secret, SecurityConfig

from .build import build_config
from .errors import ConfigError
from .listeners import ListenerConfig
from .model import BatchLimits, Broker, CompressionType, Config, RateLimitingConfig, TopicAction, TopicBatching, dotted

TOML_ACTIONS = {action.value: action for action in TopicAction}


def load_toml(data: bytes | str, *, source: str = "<toml config>", initial_brokers: Sequence[Broker] = ()) -> Config:
    """Validate a TOML config given as text (or UTF-8 bytes); ``source`` names it in errors. ``initial_brokers``,
    when given, replace the file's (which may then be left out)."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ConfigError(
                f"a TOML file must be UTF-8 ({error.reason} at byte {error.start})", source=source
            ) from None
    _check_shape(data, source)
    try:
        raw = tomllib.loads(data)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"not valid TOML: {error}", source=source) from None
    except RecursionError:  # deeper than the scan saw (a string it read otherwise than tomllib)
        raise ConfigError(f"arrays and inline tables nest too deep: {_BEYOND}", source=source) from None
    try:
        return build_config(raw, actions=TOML_ACTIONS, initial_brokers=initial_brokers)
    except ConfigError as error:
        raise error.located(source=source, where=dotted(error.path or ())) from None


MAX_NESTING = 32
"""The deepest arrays and inline tables may nest (a table header counts its brackets too)."""
MAX_KEY_PARTS = 32
"""The most parts a dotted key may have (``a.b.c`` has 3)."""
MAX_NUMBER_CHARS = 100
"""The most digits (and ``_``) in a row outside strings, and the longest hexadecimal number (``0x`` included)."""

# What the scan sees: strings and comments whole (their content is skipped), and the characters it counts. Every
# repetition is possessive (*+, ++): a pattern that could backtrack keeps state for each repetition (~90 bytes), which
# on a string of 16 MiB of escapes would cost over a GiB.
_TOKENS = re.compile(
    r'"""(?:[^"\\]++|\\[\s\S]?|"(?!""))*+(?:"""|\Z)'  # multi-line basic string
    r"|'''(?:[^']++|'(?!''))*+(?:'''|\Z)"  # multi-line literal string
    r'|"(?:[^"\\\n]++|\\.?)*+"?'  # basic string (to the end of its line at most)
    r"|'[^'\n]*+'?"  # literal string
    r"|#[^\n]*+"  # comment
    r"|[\[\]{}.]"
    rf"|(?<![0-9_])[0-9_]{{{MAX_NUMBER_CHARS + 1},}}"  # digits too many (matched from the start of their run)
    rf"|(?<![0-9A-Za-z_])0x[0-9A-Fa-f_]{{{MAX_NUMBER_CHARS - 1},}}"  # a hexadecimal number too long
)
_NOT_IN_A_KEY = re.compile(r"[^ \tA-Za-z0-9_-]")  # between two dots of a dotted key: a bare part and spaces


_BEYOND = "more than bruce reads (a limit of bruce, not of TOML)"


def _check_shape(text: str, source: str) -> None:
    """Refuse what ``tomllib`` cannot read in bounded memory and time (module rules), naming the line."""
    depth = parts = end = 0
    for token in _TOKENS.finditer(text):
        start, end_before, end = token.start(), end, token.end()
        first = text[start]
        if parts and _NOT_IN_A_KEY.search(text, end_before, start):
            parts = 0  # a separator or a value: the next dot starts another run
        if first in "[{":
            depth, parts = depth + 1, 0
            if depth > MAX_NESTING:
                raise _refuse(text, start, source, f"arrays and inline tables nest deeper than {MAX_NESTING} levels")
        elif first in "]}":
            depth, parts = max(depth - 1, 0), 0
        elif first == ".":
            parts += 1
            if parts >= MAX_KEY_PARTS:
                raise _refuse(text, start, source, f"a dotted key has more than {MAX_KEY_PARTS} parts")
        elif first == "#":
            parts = 0
        elif first not in "\"'":
            raise _refuse(text, start, source, f"a number is longer than {MAX_NUMBER_CHARS} characters")


def _refuse(text: str, at: int, source: str, problem: str) -> ConfigError:
    line = text.count("\n", 0, at) + 1
    return ConfigError(f"{problem}: {_BEYOND}", source=source, line=line)


# -- rendering -----------------------------------------------------------------------------------


def to_toml(config: Config, *, comment: str | None = None) -> str:
    """``config`` as a TOML file (``comment`` becomes a leading comment block)."""
    printable = "".join(c if c.isprintable() or c == "\n" else "?" for c in comment or "")
    lines = [f"# {line}".rstrip() for line in printable.split("\n") if comment]
    batching = config.batching
    lines += [
        "[batching]",
        f"produce_request_data_limit = {_size(batching.produce_request_data_limit)}",
        f"message_max_bytes = {_size(batching.message_max_bytes)}",
        "combined_topics = "
        + _inline(
            [
                ("enable", _bool(batching.combined_topics.enabled)),
                *_optional_name("config", batching.combined_topics.config),
            ]
        ),
        f"default_topic = {_topic_batching(batching.default_topic)}",
    ]
    for name, limits in batching.named_configs.items():
        lines += ["", f"[batching.named_configs.{_key(name)}]", *_limits(limits)]
    if batching.topic_configs:
        lines += ["", "[batching.topic_configs]"]
        lines += [f"{_key(topic)} = {_topic_batching(choice)}" for topic, choice in batching.topic_configs.items()]

    compression = config.compression
    lines += [
        "",
        "[compression]",
        f"size_threshold_percent = {compression.size_threshold_percent}",
        f"default_topic = {_string(compression.default_topic)}",
        "",
        "[compression.named_configs]",
    ]
    for name, codec in compression.named_configs.items():
        fields = [("type", _string(codec.type.value))]
        if codec.type is not CompressionType.NONE:
            fields.append(("min_size", _size(codec.min_size)))
        lines.append(f"{_key(name)} = {_inline(fields)}")
    lines += _topic_names("compression", compression.topic_configs.items())

    limiting = config.topic_rate_limiting
    if limiting != RateLimitingConfig.unlimited():
        lines += ["", "[topic_rate_limiting]", f"default_topic = {_string(limiting.default_topic)}", ""]
        lines += ["[topic_rate_limiting.named_configs]"]
        for name, limit in limiting.named_configs.items():
            count = _string("unlimited") if limit.max_count is None else _size(limit.max_count)
            lines.append(f"{_key(name)} = {_inline([('interval', str(limit.interval_ms)), ('max_count', count)])}")
        lines += _topic_names("topic_rate_limiting", limiting.topic_configs.items())

    for broker in config.initial_brokers:
        lines += ["", "[[initial_brokers]]", f"host = {_string(broker.host)}", f"port = {broker.port}"]
    for listener in config.plog_listeners:
        lines += ["", "[[plog.listener]]", *_listener(listener)]
    lines += _kafka(config.kafka, config.enable_idempotence, config.producer_properties)
    if config.spool:
        lines += ["", "[spool]"]
        lines += [f"{k} = {_string(v) if isinstance(v, str) else v}" for k, v in config.spool]
    return "\n".join(lines) + "\n"


def _kafka(security: SecurityConfig, idempotence: bool | None, producer: tuple[tuple[str, int], ...]) -> list[str]:
    """The ``[kafka]`` table; a secret given literally is left out (with a comment saying how to give it)."""
    entries = [] if idempotence is None else [f'"enable.idempotence" = {_bool(idempotence)}']
    entries += [f"{_string(name)} = {value}" for name, value in producer]
    for name, value in security.settings().items():
        if isinstance(value, Secret):
            if value.reference is None:
                entries.append(f'# {name}: given literally, not written here; give it as "file:/path" or "env:VAR"')
                continue
            value = value.reference
        entries.append(f"{_string(name)} = {_bool(value) if isinstance(value, bool) else _string(str(value))}")
    return ["", "[kafka]", *entries] if entries else []


def _listener(listener: ListenerConfig) -> list[str]:
    default = ListenerConfig(protocol=listener.protocol, port=listener.port, topic=listener.topic)
    out = []
    for f in fields(ListenerConfig):
        value = getattr(listener, f.name)
        if value is None or (value == getattr(default, f.name) and f.name not in ("protocol", "port", "topic")):
            continue
        if isinstance(value, bool):
            out.append(f"{f.name} = {_bool(value)}")
        elif isinstance(value, int | float):
            out.append(f"{f.name} = {value!r}")
        else:
            out.append(f"{f.name} = {_string(value)}")
    return out


def _limits(limits: BatchLimits) -> list[str]:
    def limit(value: int | None, *, allow_k: bool) -> str:
        if value is None:
            return _string("disable")
        return _size(value) if allow_k else str(value)

    return [
        f"time = {limit(limits.time_ms, allow_k=False)}",
        f"messages = {limit(limits.messages, allow_k=True)}",
        f"bytes = {limit(limits.bytes, allow_k=True)}",
    ]


def _topic_batching(choice: TopicBatching) -> str:
    return _inline([("action", _string(choice.action.value)), *_optional_name("config", choice.config)])


def _topic_names(section: str, items: Iterable[tuple[str, str]]) -> list[str]:
    entries = [f"{_key(topic)} = {_string(name)}" for topic, name in items]
    return ["", f"[{section}.topic_configs]", *entries] if entries else []


def _optional_name(key: str, name: str | None) -> list[tuple[str, str]]:
    return [] if name is None else [(key, _string(name))]


def _inline(fields: list[tuple[str, str]]) -> str:
    return "{ " + ", ".join(f"{key} = {value}" for key, value in fields) + " }"


def _size(value: int) -> str:
    """A size where the k suffix is allowed: whole KiB as ``"Nk"``."""
    return _string(f"{value // 1024}k") if value and value % 1024 == 0 else str(value)


def _bool(value: bool) -> str:
    return "true" if value else "false"


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else _string(name)


def _string(text: str) -> str:
    """A TOML basic string."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'

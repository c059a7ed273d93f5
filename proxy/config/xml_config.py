"""Bruce's XML config file (docs/bruce-compatibility.md#config-file), read with Bruce's exact rules.

Rules:
- The document starts with an XML declaration whose encoding is US-ASCII (any case); the root is ``<bruceConfig>``.
- Every element is known, at most once where Bruce allows one, with only its known attributes; leaves are empty;
  any non-whitespace text (CDATA included) is an error. Comments and processing instructions are ignored.
  Named items (``<config name>``, ``<topic name>``) need a name and must not repeat one.
- Safe parsing with the standard library's expat (what ``xml.etree`` is built on; used directly for the
  declaration and line numbers): a DOCTYPE, any entity declaration or external entity is refused before it is
  processed.
- One pass, no element tree: each element is checked against what its parent allows when expat reports its start
  tag, and the first thing Bruce does not allow ends the reading. So no element nests deeper than Bruce's five
  levels, and memory and time grow linearly with the file (at most ``MAX_FILE_BYTES``, checked by the caller).
- The elements map onto the neutral (TOML-shaped) settings of ``build.py`` through the table :data:`BRUCE_CONFIG`;
  value syntax, required settings and every semantic rule are shared with the TOML loader (``build.py``, the model).
- Errors name the file, the line and the element path (``batching/namedConfigs/config[name="low_latency"]/time``,
  attributes as ``.../combinedTopics/@config``; names, tags and text longer than 60 characters cut). The first
  problem in the file is the one reported. A file that is not well-formed gets expat's line, column and
  reason, what most likely caused it when that can be told (a ``--`` in a comment, an unclosed element, a bare
  ``&``), and the usual causes (:data:`USUAL_CAUSES`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NoReturn, cast
from xml.parsers import expat

from .build import build_config
from .errors import CLIP, ConfigError, Path, clip
from .model import Broker, Config, TopicAction

XML_ACTIONS = {
    "perTopic": TopicAction.PER_TOPIC,
    "combinedTopics": TopicAction.COMBINED_TOPICS,
    "disable": TopicAction.DISABLE,
}


@dataclass(frozen=True, slots=True)
class Leaf:
    """An empty element whose attributes are settings (XML attribute → neutral key).

    ``scalar``: the element stands for that one attribute's value (``<time value="500"/>`` → ``time = "500"``);
    ``required``: the attribute must be present (value elements).
    """

    attrs: Mapping[str, str]
    scalar: str | None = None
    required: bool = False


@dataclass(frozen=True, slots=True)
class Node:
    """An element holding sub-elements, each at most once (XML tag → (neutral key, spec))."""

    children: Mapping[str, tuple[str, Spec]]


@dataclass(frozen=True, slots=True)
class Items:
    """An element holding repeated ``tag`` items: keyed by their ``name`` attribute, or a list if not ``named``."""

    tag: str
    item: Leaf | Node
    named: bool = True
    trim_names: bool = True


Spec = Leaf | Node | Items

_ABSENT = object()  # an optional scalar attribute left out


def _value() -> Leaf:
    """A value element: ``<time value="500"/>``."""
    return Leaf({"value": "value"}, scalar="value", required=True)


_TOPIC_CONFIG = Leaf({"config": "config"}, scalar="config")

BRUCE_CONFIG = Node(
    {
        "batching": (
            "batching",
            Node(
                {
                    "namedConfigs": (
                        "named_configs",
                        Items(
                            "config",
                            Node(
                                {
                                    "time": ("time", _value()),
                                    "messages": ("messages", _value()),
                                    "bytes": ("bytes", _value()),
                                }
                            ),
                        ),
                    ),
                    "produceRequestDataLimit": ("produce_request_data_limit", _value()),
                    "messageMaxBytes": ("message_max_bytes", _value()),
                    "combinedTopics": ("combined_topics", Leaf({"enable": "enable", "config": "config"})),
                    "defaultTopic": ("default_topic", Leaf({"action": "action", "config": "config"})),
                    "topicConfigs": (
                        "topic_configs",
                        Items("topic", Leaf({"action": "action", "config": "config"}), trim_names=False),
                    ),
                }
            ),
        ),
        "compression": (
            "compression",
            Node(
                {
                    "namedConfigs": ("named_configs", Items("config", Leaf({"type": "type", "minSize": "min_size"}))),
                    "sizeThresholdPercent": ("size_threshold_percent", _value()),
                    "defaultTopic": ("default_topic", _TOPIC_CONFIG),
                    "topicConfigs": ("topic_configs", Items("topic", _TOPIC_CONFIG, trim_names=False)),
                }
            ),
        ),
        "topicRateLimiting": (
            "topic_rate_limiting",
            Node(
                {
                    "namedConfigs": (
                        "named_configs",
                        Items("config", Leaf({"interval": "interval", "maxCount": "max_count"})),
                    ),
                    "defaultTopic": ("default_topic", _TOPIC_CONFIG),
                    "topicConfigs": ("topic_configs", Items("topic", _TOPIC_CONFIG, trim_names=False)),
                }
            ),
        ),
        "initialBrokers": ("initial_brokers", Items("broker", Leaf({"host": "host", "port": "port"}), named=False)),
        # bruce-kafka's extension: <kafka><property name="security.protocol" value="SASL_SSL"/></kafka>
        "kafka": ("kafka", Items("property", _value())),
    }
)
"""Bruce's elements, mapped onto the neutral settings of ``build.py``."""


def load_xml(data: bytes | str, *, source: str = "<xml config>", initial_brokers: Sequence[Broker] = ()) -> Config:
    """Validate a Bruce XML config given as bytes (or text); ``source`` names it in errors. ``initial_brokers``,
    when given, replace the file's (which may then be left out)."""
    reader = _Reader(source)
    raw = reader.read(data.encode() if isinstance(data, str) else data)
    try:
        return build_config(raw, actions=XML_ACTIONS, initial_brokers=initial_brokers)
    except ConfigError as error:
        path = error.path or ()
        raise error.located(source=source, where=xml_where(path), line=_line_of(path, reader.lines)) from None


def xml_where(path: Path) -> str:
    """A neutral path in XML: ``("batching", "combined_topics", "config")`` → ``batching/combinedTopics/@config``."""
    parts: list[str] = []
    spec: Spec | None = BRUCE_CONFIG
    for key in path:
        if isinstance(spec, Node):
            tag = next((t for t, (k, _) in spec.children.items() if k == key), None)
            parts.append(tag or clip(str(key)))
            spec = spec.children[tag][1] if tag else None
        elif isinstance(spec, Items):
            parts.append(f"{spec.tag}[{key + 1}]" if isinstance(key, int) else f'{spec.tag}[name="{clip(key)}"]')
            spec = spec.item
        elif isinstance(spec, Leaf):
            attr = next((a for a, k in spec.attrs.items() if k == key), clip(str(key)))
            parts.append(f"@{attr}")
            spec = None
        else:
            parts.append(clip(str(key)))
    if isinstance(spec, Leaf) and spec.scalar is not None and spec.scalar != "value":
        parts.append(f"@{spec.scalar}")
    return "/".join(parts) or "bruceConfig"


def _line_of(path: Path, lines: Mapping[Path, int]) -> int | None:
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return None


# -- reading: one pass, each element checked against its parent's spec as expat reports it -------------------------


@dataclass(slots=True)
class _Open:
    """An element being read: where it stands, what it may hold, and the neutral value built so far."""

    tag: str
    spec: Spec
    path: Path
    line: int
    where: str
    value: object  # Node: dict; Items: dict (named) or list; Leaf: its value
    seen: dict[str, int] = field(default_factory=dict)  # child tag (Node) or item name (Items) → first line
    counts: dict[str, int] = field(default_factory=dict)  # children per tag so far (the [n] in error paths)


class _Reader:
    """Reads a config file with expat, checking every element, attribute and piece of text as it comes: the first
    thing Bruce does not allow ends the reading with its error. What is kept is the neutral settings (no element
    tree), so memory follows what the file legitimately holds and the depth never exceeds Bruce's own."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: dict[Path, int] = {}
        self.stack: list[_Open] = []
        self.declared = False
        self.root: _Open | None = None
        self.parser = expat.ParserCreate()

    def read(self, data: bytes) -> object:
        if not data.strip():
            raise ConfigError("the config file is empty", source=self.source)
        parser = self.parser
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.ordered_attributes = True
        parser.buffer_text = False  # each piece of text reports its own line
        parser.XmlDeclHandler = self.on_declaration
        parser.StartDoctypeDeclHandler = self.refuse
        parser.EntityDeclHandler = self.refuse
        parser.ExternalEntityRefHandler = self.refuse
        parser.StartElementHandler = self.on_start
        parser.EndElementHandler = self.on_end
        parser.CharacterDataHandler = self.on_text
        try:
            parser.Parse(data, True)
        except expat.ExpatError as error:
            problem = f"not well-formed XML: {expat.ErrorString(error.code)} (column {error.offset + 1})"
            raise ConfigError(
                problem + _diagnosis(data, error, self.stack), source=self.source, line=error.lineno
            ) from None
        assert self.root is not None  # expat refuses a document without an element
        return self.root.value

    def error(self, problem: str, where: str | None = None, line: int | None = None) -> ConfigError:
        return ConfigError(problem, source=self.source, where=where, line=line or self.parser.CurrentLineNumber)

    def refuse(self, *_: object) -> NoReturn:
        raise self.error("a DOCTYPE or entity declaration is not allowed in a config file")

    def on_declaration(self, version: str, encoding: str | None, standalone: int) -> None:
        # Checked here, before expat looks the encoding up (an unknown one would fail outside ExpatError).
        if encoding is None or encoding.upper() != "US-ASCII":
            found = "no encoding" if encoding is None else f'encoding="{clip(encoding)}"'
            raise self.error(
                f'the XML declaration has {found}: Bruce requires config files to declare encoding="US-ASCII" '
                "(a rule kept here so that one file works with both); write "
                '<?xml version="1.0" encoding="US-ASCII"?> as the first line',
                line=1,
            )
        self.declared = True

    def on_start(self, tag: str, flat: list[str]) -> None:
        attrs = list(zip(flat[::2], flat[1::2], strict=True))
        if not self.declared:
            raise self.error(
                'the file must start with the XML declaration <?xml version="1.0" encoding="US-ASCII"?>', line=1
            )
        if not self.stack:
            if tag != "bruceConfig":
                raise self.error(
                    f"the root element is <{clip(tag)}>; a Bruce config file's root element is <bruceConfig>"
                )
            self.root = self.open(tag, BRUCE_CONFIG, (), "bruceConfig", attrs, named=False)
            return
        parent = self.stack[-1]
        where = _child_where(parent, tag, attrs)
        spec = parent.spec
        if isinstance(spec, Leaf):
            raise self.error(f"unexpected element <{clip(tag)}>: this element must be empty", parent.where)
        if isinstance(spec, Node):
            if tag not in spec.children:
                raise self.unknown(tag, parent, spec.children)
            if tag in parent.seen:
                raise self.error(
                    f"<{tag}> appears twice (first on line {parent.seen[tag]}); Bruce allows it once", where
                )
            parent.seen[tag] = self.parser.CurrentLineNumber
            key, child_spec = spec.children[tag]
            child = self.open(tag, child_spec, (*parent.path, key), where, attrs, named=False)
            if child.value is not _ABSENT:
                cast(dict[str, object], parent.value)[key] = child.value
            return
        if tag != spec.tag:
            raise self.unknown(tag, parent, {spec.tag: None})
        if not spec.named:
            listed = cast(list[object], parent.value)
            listed.append(self.open(tag, spec.item, (*parent.path, len(listed)), where, attrs, named=False).value)
            return
        name = dict(attrs).get("name")
        if name is None:
            raise self.error('the attribute "name" is missing', where)
        if spec.trim_names:
            name = name.strip()
        if name in parent.seen:
            raise self.error(f'the name "{clip(name)}" is used twice (first on line {parent.seen[name]})', where)
        parent.seen[name] = self.parser.CurrentLineNumber
        value = self.open(tag, spec.item, (*parent.path, name), where, attrs, named=True).value
        if value is _ABSENT:  # a topic without its config="…"
            raise self.error(f'the attribute "{cast(Leaf, spec.item).scalar}" is missing', where)
        cast(dict[str, object], parent.value)[name] = value

    def open(self, tag: str, spec: Spec, path: Path, where: str, attrs: list[tuple[str, str]], *, named: bool) -> _Open:
        """Check a new element's attributes, note its line and make it the innermost open element."""
        line = self.parser.CurrentLineNumber
        self.lines[path] = line
        allowed = {"name"} if named else set()
        value: object
        if isinstance(spec, Leaf):
            self.check_attributes(attrs, allowed | set(spec.attrs), where)
            values = {spec.attrs[name]: text for name, text in attrs if name != "name"}
            if spec.scalar is None:
                value = values
            elif spec.required and spec.scalar not in values:
                raise self.error(f'the attribute "{spec.scalar}" is missing', where)
            else:
                value = values.get(spec.scalar, _ABSENT)
        else:
            self.check_attributes(attrs, allowed, where)
            value = [] if isinstance(spec, Items) and not spec.named else {}
        element = _Open(tag, spec, path, line, where, value)
        self.stack.append(element)
        return element

    def check_attributes(self, attrs: list[tuple[str, str]], allowed: set[str], where: str) -> None:
        for name, _ in attrs:
            if name not in allowed:
                hint = f"; it accepts: {', '.join(sorted(allowed))}" if allowed else "; it takes no attributes"
                raise self.error(f'unexpected attribute "{clip(name)}"{hint}', where)

    def on_end(self, tag: str) -> None:
        self.stack.pop()

    def on_text(self, text: str) -> None:
        if self.stack and not text.isspace():
            problem = f'unexpected text "{clip(text.strip())}": only elements and attributes belong here'
            raise self.error(problem, self.stack[-1].where)

    def unknown(self, tag: str, parent: _Open, known: Mapping[str, object]) -> ConfigError:
        close = difflib.get_close_matches(tag, list(known), n=1) if len(tag) <= CLIP else []
        hint = f"; did you mean <{close[0]}>?" if close else "; expected " + ", ".join(f"<{t}>" for t in known)
        return self.error(f"unexpected element <{clip(tag)}>{hint}", parent.where)


USUAL_CAUSES = (
    "`--` inside a comment (XML allows none between <!-- and -->), an unescaped & or < (write &amp; or &lt;), "
    "a missing or misspelt closing tag"
)
"""What most often makes a hand-edited config file not well-formed, named in the error beside expat's position."""
_INVALID_TOKEN = expat.errors.codes[expat.errors.XML_ERROR_INVALID_TOKEN]
_TAG_ENDS = {
    expat.errors.codes[expat.errors.XML_ERROR_TAG_MISMATCH],
    expat.errors.codes[expat.errors.XML_ERROR_NO_ELEMENTS],
}


def _diagnosis(data: bytes, error: expat.ExpatError, open_elements: Sequence[_Open]) -> str:
    """What most likely made ``data`` not well-formed where expat stopped, then the usual causes."""
    lines = data.decode("ascii", errors="replace").splitlines() or [""]
    line = lines[min(error.lineno, len(lines)) - 1]
    before = "\n".join([*lines[: error.lineno - 1], line[: error.offset + 1]])
    likely = ""
    if before.rfind("<!--") > before.rfind("-->"):
        likely = "this comment holds `--`"
    elif error.code in _TAG_ENDS and open_elements:
        element = open_elements[-1]
        likely = f"<{element.tag}> (line {element.line}) is not closed"
    elif error.code == _INVALID_TOKEN and "&" in line[: error.offset + 1]:
        likely = "an unescaped & (write &amp;)"
    return f": {likely} (the usual causes: {USUAL_CAUSES})" if likely else f"; the usual causes: {USUAL_CAUSES}"


def _child_where(parent: _Open, tag: str, attrs: list[tuple[str, str]]) -> str:
    """The error path of a new child of ``parent``: ``tag[name="…"]``, or ``tag[n]`` for a repeated (or broker)
    element; counts kept per parent, so a long list of siblings costs no more per element than a short one."""
    count = parent.counts[tag] = parent.counts.get(tag, 0) + 1
    name = next((value for key, value in attrs if key == "name"), None)
    step = tag
    if name is not None:
        step = f'{tag}[name="{clip(name)}"]'
    elif count > 1 or tag == "broker":
        step = f"{tag}[{count}]"
    return step if parent.where == "bruceConfig" else f"{parent.where}/{step}"

"""Bruce's XML config file (docs/bruce-compatibility.md#config-file), read with Bruce's exact rules.

Rules:
- The document starts with an XML declaration whose encoding is US-ASCII (any case); the root is ``<bruceConfig>``.
- Every element is known, at most once where Bruce allows one, with only its known attributes; leaves are empty;
  any non-whitespace text (CDATA included) is an error. Comments and processing instructions are ignored.
  Named items (``<config name>``, ``<topic name>``) need a name and must not repeat one.
- Safe parsing with the standard library's expat (what ``xml.etree`` is built on; used directly for the
  declaration and line numbers): a DOCTYPE, any entity declaration or external entity is refused before it is
  processed.
- The elements map onto the neutral (TOML-shaped) settings of ``build.py`` through the table :data:`BRUCE_CONFIG`;
  value syntax, required settings and every semantic rule are shared with the TOML loader (``build.py``, the model).
- Errors name the file, the line and the element path (``batching/namedConfigs/config[name="low_latency"]/time``,
  attributes as ``.../combinedTopics/@config``). A file that is not well-formed gets expat's line, column and
  reason, what most likely caused it when that can be told (a ``--`` in a comment, an unclosed element, a bare
  ``&``), and the usual causes (:data:`USUAL_CAUSES`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NoReturn
from xml.parsers import expat

from .build import build_config
from .errors import ConfigError, Path
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
    root = _parse(data.encode() if isinstance(data, str) else data, source)
    lines: dict[Path, int] = {}
    raw = _Converter(source, lines).convert(root, BRUCE_CONFIG, ())
    try:
        return build_config(raw, actions=XML_ACTIONS, initial_brokers=initial_brokers)
    except ConfigError as error:
        path = error.path or ()
        raise error.located(source=source, where=xml_where(path), line=_line_of(path, lines)) from None


def xml_where(path: Path) -> str:
    """A neutral path in XML: ``("batching", "combined_topics", "config")`` → ``batching/combinedTopics/@config``."""
    parts: list[str] = []
    spec: Spec | None = BRUCE_CONFIG
    for key in path:
        if isinstance(spec, Node):
            tag = next((t for t, (k, _) in spec.children.items() if k == key), None)
            parts.append(tag or str(key))
            spec = spec.children[tag][1] if tag else None
        elif isinstance(spec, Items):
            parts.append(f"{spec.tag}[{key + 1}]" if isinstance(key, int) else f'{spec.tag}[name="{key}"]')
            spec = spec.item
        elif isinstance(spec, Leaf):
            attr = next((a for a, k in spec.attrs.items() if k == key), str(key))
            parts.append(f"@{attr}")
            spec = None
        else:
            parts.append(str(key))
    if isinstance(spec, Leaf) and spec.scalar is not None and spec.scalar != "value":
        parts.append(f"@{spec.scalar}")
    return "/".join(parts) or "bruceConfig"


def _line_of(path: Path, lines: Mapping[Path, int]) -> int | None:
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return None


# -- parsing -------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Element:
    tag: str
    attrs: list[tuple[str, str]]
    line: int
    where: str
    children: list[_Element] = field(default_factory=list)
    text: list[tuple[str, int]] = field(default_factory=list)  # non-whitespace text and its line


def _parse(data: bytes, source: str) -> _Element:
    if not data.strip():
        raise ConfigError("the config file is empty", source=source)
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.ordered_attributes = True
    parser.buffer_text = False  # each piece of text reports its own line
    stack: list[_Element] = []
    roots: list[_Element] = []
    declaration: list[str] = []

    def refuse(*_: object) -> NoReturn:
        raise ConfigError(
            "a DOCTYPE or entity declaration is not allowed in a config file",
            source=source,
            line=parser.CurrentLineNumber,
        )

    def on_declaration(version: str, encoding: str | None, standalone: int) -> None:
        # Checked here, before expat looks the encoding up (an unknown one would fail outside ExpatError).
        if encoding is None or encoding.upper() != "US-ASCII":
            found = "no encoding" if encoding is None else f'encoding="{encoding}"'
            raise ConfigError(
                f'the XML declaration has {found}; Bruce config files declare encoding="US-ASCII"',
                source=source,
                line=1,
            )
        declaration.append(encoding)

    def on_start(tag: str, flat: list[str]) -> None:
        attrs = list(zip(flat[::2], flat[1::2], strict=True))
        parent = stack[-1] if stack else None
        where = _child_where(parent, tag, dict(attrs))
        element = _Element(tag, attrs, parser.CurrentLineNumber, where)
        (parent.children if parent else roots).append(element)
        stack.append(element)

    def on_end(tag: str) -> None:
        stack.pop()

    def on_text(text: str) -> None:
        if stack and text.strip():
            stack[-1].text.append((text.strip(), parser.CurrentLineNumber))

    parser.XmlDeclHandler = on_declaration
    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    parser.StartElementHandler = on_start
    parser.EndElementHandler = on_end
    parser.CharacterDataHandler = on_text
    try:
        parser.Parse(data, True)
    except expat.ExpatError as error:
        problem = f"not well-formed XML: {expat.ErrorString(error.code)} (column {error.offset + 1})"
        raise ConfigError(
            problem + _diagnosis(data, error, stack),
            source=source,
            line=error.lineno,
        ) from None
    if not declaration:
        raise ConfigError(
            'the file must start with the XML declaration <?xml version="1.0" encoding="US-ASCII"?>',
            source=source,
            line=1,
        )
    (root,) = roots
    if root.tag != "bruceConfig":
        raise ConfigError(
            f"the root element is <{root.tag}>; a Bruce config file's root element is <bruceConfig>",
            source=source,
            line=root.line,
        )
    return root


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


def _diagnosis(data: bytes, error: expat.ExpatError, open_elements: Sequence[_Element]) -> str:
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


def _child_where(parent: _Element | None, tag: str, attrs: Mapping[str, str]) -> str:
    if parent is None:
        return tag
    step = tag
    if "name" in attrs:
        step = f'{tag}[name="{attrs["name"]}"]'
    else:
        count = 1 + sum(1 for child in parent.children if child.tag == tag)
        if count > 1 or tag == "broker":
            step = f"{tag}[{count}]"
    return step if parent.where == "bruceConfig" else f"{parent.where}/{step}"


# -- elements → neutral settings ----------------------------------------------------------------------------------


_ABSENT = object()


class _Converter:
    """Walks the element tree along a spec, checking XML structure and building the neutral settings."""

    def __init__(self, source: str, lines: dict[Path, int]) -> None:
        self.source = source
        self.lines = lines

    def error(self, element: _Element, problem: str, line: int | None = None) -> ConfigError:
        return ConfigError(problem, source=self.source, where=element.where, line=line or element.line)

    def convert(self, element: _Element, spec: Spec, path: Path, *, named: bool = False) -> object:
        self.lines[path] = element.line
        if element.text:
            text, line = element.text[0]
            raise self.error(
                element, f'unexpected text "{_clip(text)}": only elements and attributes belong here', line
            )
        if isinstance(spec, Leaf):
            return self.leaf(element, spec, named)
        self.check_attributes(element, {"name"} if named else set())
        if isinstance(spec, Node):
            return self.node(element, spec, path)
        return self.items(element, spec, path)

    def check_attributes(self, element: _Element, allowed: set[str]) -> None:
        for name, _ in element.attrs:
            if name not in allowed:
                hint = f"; it accepts: {', '.join(sorted(allowed))}" if allowed else "; it takes no attributes"
                raise self.error(element, f'unexpected attribute "{name}"{hint}')

    def leaf(self, element: _Element, spec: Leaf, named: bool) -> object:
        if element.children:
            child = element.children[0]
            raise self.error(element, f"unexpected element <{child.tag}>: this element must be empty", child.line)
        self.check_attributes(element, set(spec.attrs) | ({"name"} if named else set()))
        values = {spec.attrs[name]: value for name, value in element.attrs if name != "name"}
        if spec.scalar is None:
            return values
        if spec.required and spec.scalar not in values:
            raise self.error(element, f'the attribute "{spec.scalar}" is missing')
        return values.get(spec.scalar, _ABSENT)

    def node(self, element: _Element, spec: Node, path: Path) -> dict[str, object]:
        result: dict[str, object] = {}
        seen: dict[str, _Element] = {}
        for child in element.children:
            if child.tag not in spec.children:
                raise self.unknown(child, element, spec.children)
            if child.tag in seen:
                first = seen[child.tag].line
                raise self.error(child, f"<{child.tag}> appears twice (first on line {first}); Bruce allows it once")
            seen[child.tag] = child
            key, child_spec = spec.children[child.tag]
            value = self.convert(child, child_spec, (*path, key))
            if value is not _ABSENT:
                result[key] = value
        return result

    def items(self, element: _Element, spec: Items, path: Path) -> object:
        named: dict[str, object] = {}
        listed: list[object] = []
        first_line: dict[str, int] = {}
        for child in element.children:
            if child.tag != spec.tag:
                raise self.unknown(child, element, {spec.tag: None})
            if not spec.named:
                listed.append(self.convert(child, spec.item, (*path, len(listed))))
                continue
            name = dict(child.attrs).get("name")
            if name is None:
                raise self.error(child, 'the attribute "name" is missing')
            if spec.trim_names:
                name = name.strip()
            if name in named:
                raise self.error(child, f'the name "{name}" is used twice (first on line {first_line[name]})')
            first_line[name] = child.line
            named[name] = self.convert(child, spec.item, (*path, name), named=True)
        return named if spec.named else listed

    def unknown(self, child: _Element, parent: _Element, known: Mapping[str, object]) -> ConfigError:
        close = difflib.get_close_matches(child.tag, list(known), n=1)
        expected = "; expected " + ", ".join(f"<{tag}>" for tag in known)
        hint = f"; did you mean <{close[0]}>?" if close else expected
        return ConfigError(
            f"unexpected element <{child.tag}>{hint}", source=self.source, where=parent.where, line=child.line
        )


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"

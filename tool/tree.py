"""A decoded body (bruce.wire's frozen dataclasses, whatever the API) as a tree of plain values for the outputs.

Rules:
- Generic: dataclass fields become keys, tuples lists; nothing here knows an API by name, so
  every API the registry gains is shown without a change here. Given the version's schema, only the fields that
  version has are shown (a dataclass serves every version; the others keep defaults that were never on the wire).
- A field named ``records`` holding bytes is a :class:`RecordSet` (decoded lazily by the output, batch by batch),
  tagged with the topic and partition of the structs around it (``name``/``topic``/``topic_name``, or ``topic_id``
  resolved through the names seen in Metadata answers; ``index``/``partition``/``partition_index``).
- Other bytes: a 16-byte ``*_id`` is a UUID in Kafka's notation (URL-safe base64, unpadded); printable UTF-8 text
  stays text; anything else is ``{"base64": ...}``. A group's protocol ``metadata`` / ``assignment`` (JoinGroup,
  SyncGroup, DescribeGroups) that reads exactly as the consumer protocol gets it decoded beside it
  (``consumer_subscription`` / ``consumer_assignment``). Unknown tagged fields (``tags``) are ``{tag: hex}``;
  absent ones are left out.
- Names beside numbers: a non-zero ``error_code`` gets its name (``error_name``), an ``api_key`` its API's
  (``api_name``), a ``topic_id`` without a name the name a Metadata answer earlier in the capture gave it (``topic``).
- Fields in the order they are on the wire when the version's schema is given, else the dataclass's.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bruce.wire import (
    ASSIGNMENT_SCHEMAS,
    SUBSCRIPTION_SCHEMAS,
    MalformedInput,
    api_spec,
    decode_assignment,
    decode_subscription,
    errorcodes,
)

from .records import text_or_base64

_TOPIC_FIELDS = ("topic", "topic_name", "name")
_PARTITION_FIELDS = ("partition_index", "partition", "index")
# The group APIs' opaque bytes, read as the consumer protocol when they are that: field -> (sibling, decoder, schemas)
_CONSUMER_PROTOCOL: dict[str, tuple[str, Callable[[bytes], Any], Mapping[int, Any]]] = {
    "metadata": ("consumer_subscription", decode_subscription, SUBSCRIPTION_SCHEMAS),
    "member_metadata": ("consumer_subscription", decode_subscription, SUBSCRIPTION_SCHEMAS),
    "assignment": ("consumer_assignment", decode_assignment, ASSIGNMENT_SCHEMAS),
    "member_assignment": ("consumer_assignment", decode_assignment, ASSIGNMENT_SCHEMAS),
}
MAX_TOPIC_IDS = 100_000


@dataclass(frozen=True, slots=True)
class RecordSet:
    """The records of one partition in a request or answer, still encoded."""

    data: bytes
    topic: str | None
    partition: int | None
    scope: str = "log"  # "produce" in requests, "log" in answers: their producer sequences are checked apart


def printable_or_base64(raw: bytes) -> str | dict[str, str]:
    """Text when the bytes are UTF-8 without control characters (tabs and newlines allowed), else base64."""
    text = text_or_base64(raw)
    if isinstance(text, str) and not text.isprintable() and not text.replace("\t", "").replace("\n", "").isprintable():
        return {"base64": base64.b64encode(raw).decode("ascii")}
    return text if text is not None else {"base64": ""}


def uuid_text(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


class Trees:
    """Turns bodies into trees; remembers topic ids → names from the Metadata answers it sees."""

    def __init__(self) -> None:
        self.topic_ids: dict[bytes, str] = {}
        self.scope = "log"

    def tree(self, body: Any, *, scope: str = "log", schema: Any = None) -> dict[str, Any]:
        """``body`` as plain values; ``schema``, the construct schema it was parsed with, limits the fields shown."""
        self.scope = scope
        value = self._value(body, None, None, "", schema_fields(schema) if schema is not None else None)
        return value if isinstance(value, dict) else {"value": value}

    def _value(self, obj: Any, topic: str | None, partition: int | None, name: str, fields: Fields = None) -> Any:
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return self._struct(obj, topic, partition, name, fields)
        if isinstance(obj, tuple | list):
            return [self._value(v, topic, partition, name, fields) for v in obj]
        if isinstance(obj, bytes | bytearray | memoryview):
            raw = bytes(obj)
            if name == "records":
                return RecordSet(raw, topic, partition, self.scope)
            if name.endswith("_id") and len(raw) == 16:
                return uuid_text(raw)
            return printable_or_base64(raw)
        return obj

    def _struct(
        self, obj: Any, topic: str | None, partition: int | None, parent: str, fields: Fields
    ) -> dict[str, Any]:
        names = [f.name for f in dataclasses.fields(obj)]
        if fields is not None:  # the version's fields, in the order they are on the wire
            names = [name for name in fields if name in set(names)]
        values = {name: getattr(obj, name) for name in names}
        topic_id = values.get("topic_id")
        for key in _TOPIC_FIELDS:
            if isinstance(values.get(key), str) and (key != "name" or "topic" in parent or parent == "responses"):
                topic = values[key]
                break
        else:
            if isinstance(topic_id, bytes) and topic_id in self.topic_ids:
                topic = self.topic_ids[topic_id]
        name = values.get("name")
        if (
            isinstance(topic_id, bytes)
            and len(topic_id) == 16
            and isinstance(name, str)
            and len(self.topic_ids) < MAX_TOPIC_IDS
        ):
            self.topic_ids[topic_id] = name
        for key in _PARTITION_FIELDS:
            if isinstance(values.get(key), int) and not isinstance(values.get(key), bool):
                partition = values[key]
                break
        named = any(isinstance(values.get(key), str) for key in _TOPIC_FIELDS)
        out: dict[str, Any] = {}
        for key, value in values.items():
            if key == "tags":
                if value:
                    out["tags"] = {str(tag): bytes(raw).hex() for tag, raw in value.items()}
                continue
            out[key] = self._value(value, topic, partition, key, fields.get(key) if fields is not None else None)
            if key in _CONSUMER_PROTOCOL and isinstance(value, bytes) and value:
                sibling, decode, schemas = _CONSUMER_PROTOCOL[key]
                try:
                    found = decode(value)
                    shown = schema_fields(schemas[min(found.version, max(schemas))])
                    out[sibling] = self._value(found, topic, partition, sibling, shown)
                except MalformedInput:
                    pass  # another protocol's bytes (Connect, streams): shown as they are
            if key == "error_code" and isinstance(value, int) and value:
                out["error_name"] = errorcodes.lookup(value).name
            elif key == "api_key" and isinstance(value, int) and (spec := api_spec(value)) is not None:
                out["api_name"] = spec.name  # ApiVersions' ranges
            elif key == "topic_id" and topic is not None and not named:
                out["topic"] = topic  # the name a Metadata answer gave this id
        return out


Fields = dict[str, "Fields"] | None  # a struct's field names, each with its own fields (None: not a struct)


def schema_fields(schema: Any) -> Fields:
    """The field names a construct schema holds, nested: structs by their subcons' names, arrays and adapters by what
    they wrap, a struct's tagged fields by the names they decode to. None for anything that is not a struct."""
    seen = 0
    while not hasattr(schema, "subcons") and hasattr(schema, "subcon") and seen < 16:
        tagged = getattr(schema, "tagged", None)
        if isinstance(tagged, dict):  # a struct with named tagged fields
            found = schema_fields(schema.subcon) or {}
            return found | {name: schema_fields(sub) for name, sub in tagged.values()}
        schema, seen = schema.subcon, seen + 1
    subcons = getattr(schema, "subcons", None)
    if not isinstance(subcons, list):
        return None
    return {sub.name: schema_fields(sub) for sub in subcons if isinstance(getattr(sub, "name", None), str)}


def topics_of(tree: Any, parent: str = "") -> set[str]:
    """The topic names a tree mentions (for ``--topic``)."""
    found: set[str] = set()
    if isinstance(tree, dict):
        for key, value in tree.items():
            if isinstance(value, str) and (
                key in ("topic", "topic_name") or (key == "name" and ("topic" in parent or parent == "responses"))
            ):
                found.add(value)
            elif isinstance(value, RecordSet) and value.topic is not None:
                found.add(value.topic)
            elif key == "topics" and isinstance(value, list) and all(isinstance(v, str) for v in value):
                found.update(value)  # a consumer's subscription
            else:
                found |= topics_of(value, key)
    elif isinstance(tree, list):
        for value in tree:
            found |= topics_of(value, parent)
    return found

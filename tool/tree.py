"""A decoded body (bruce.wire's frozen dataclasses, whatever the API) as a tree of plain values for the outputs.

Rules:
- Generic: dataclass fields become keys in declaration order, tuples lists; nothing here knows an API by name, so
  every API the registry gains is shown without a change here. Given the version's schema, only the fields that
  version has are shown (a dataclass serves every version; the others keep defaults that were never on the wire).
- A field named ``records`` holding bytes is a :class:`RecordSet` (decoded lazily by the output, batch by batch),
  tagged with the topic and partition of the structs around it (``name``/``topic``/``topic_name``, or ``topic_id``
  resolved through the names seen in Metadata answers; ``index``/``partition``/``partition_index``).
- Other bytes: a 16-byte ``*_id`` is a UUID in Kafka's notation (URL-safe base64, unpadded); UTF-8 text stays text;
  anything else is ``{"base64": ...}``. Unknown tagged fields (``tags``) are ``{tag: hex}``; absent ones are left
  out. A non-zero ``error_code`` gets its name beside it (``error_name``).
"""

from __future__ import annotations

import base64
import dataclasses
from dataclasses import dataclass
from typing import Any

from bruce.wire import errorcodes

from .records import text_or_base64

_TOPIC_FIELDS = ("topic", "topic_name", "name")
_PARTITION_FIELDS = ("partition_index", "partition", "index")
MAX_TOPIC_IDS = 100_000


@dataclass(frozen=True, slots=True)
class RecordSet:
    """The records of one partition in a request or answer, still encoded."""

    data: bytes
    topic: str | None
    partition: int | None
    scope: str = "log"  # "produce" in requests, "log" in answers: their producer sequences are checked apart


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
            return text_or_base64(raw)
        return obj

    def _struct(
        self, obj: Any, topic: str | None, partition: int | None, parent: str, fields: Fields
    ) -> dict[str, Any]:
        values = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if fields is None or f.name in fields}
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
        out: dict[str, Any] = {}
        for key, value in values.items():
            if key == "tags":
                if value:
                    out["tags"] = {str(tag): bytes(raw).hex() for tag, raw in value.items()}
                continue
            out[key] = self._value(value, topic, partition, key, fields.get(key) if fields is not None else None)
            if key == "error_code" and isinstance(value, int) and value:
                out["error_name"] = errorcodes.lookup(value).name
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
            else:
                found |= topics_of(value, key)
    elif isinstance(tree, list):
        for value in tree:
            found |= topics_of(value, parent)
    return found

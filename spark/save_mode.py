"""The default save mode of ``df.write.format("bruce").save()``: Append, as Spark's Kafka sink takes it.

Rules:
- Spark's Kafka sink accepts Append and ErrorIfExists (the default; to a topic it means Append) and refuses Overwrite
  and Ignore. Spark refuses ErrorIfExists itself for every Python data source, before the source is asked
  (``UNSUPPORTED_DATA_SOURCE_SAVE_MODE``), so a bare ``.save()`` could not work from inside the data source.
- :func:`default_to_append` (run by :func:`bruce.spark.register`) therefore wraps pyspark's ``DataFrameWriter.save``
  once per process: a write whose format is ``bruce`` and whose mode is unset, ``error``, ``errorifexists`` or
  ``default`` is saved in Append mode. Every other write, and every other format, is left exactly as it was.
- Classic pyspark keeps the format and mode in the JVM, so the wrapper notes them as ``format()`` and ``mode()`` are
  called; Spark Connect's writer keeps them in Python (``_write.source``, ``_write.mode``).
"""

from __future__ import annotations

import functools
from typing import Any

_ERROR_IF_EXISTS = (None, "error", "errorifexists", "default")


def _is_bruce(source: Any) -> bool:
    return str(source).lower() in ("bruce", "bruce.spark.brucedatasource")


def _wrap_classic(cls: Any) -> None:
    original_format, original_mode, original_save = cls.format, cls.mode, cls.save

    @functools.wraps(original_format)
    def format(self: Any, source: str) -> Any:
        self._bruce_source = source
        return original_format(self, source)

    @functools.wraps(original_mode)
    def mode(self: Any, saveMode: str | None) -> Any:
        if saveMode is not None:
            self._bruce_mode = saveMode
        return original_mode(self, saveMode)

    @functools.wraps(original_save)
    def save(self: Any, path: Any = None, format: Any = None, mode: Any = None, *args: Any, **options: Any) -> Any:
        source = format or getattr(self, "_bruce_source", None)
        given = mode if mode is not None else getattr(self, "_bruce_mode", None)
        if _is_bruce(source) and (given is None or str(given).lower() in _ERROR_IF_EXISTS):
            mode = "append"
        return original_save(self, path, format, mode, *args, **options)

    save._bruce_append = True  # type: ignore[attr-defined]  # a mark on the function: default_to_append wraps once
    cls.format, cls.mode, cls.save = format, mode, save


def _wrap_connect(cls: Any) -> None:
    original_save = cls.save

    @functools.wraps(original_save)
    def save(self: Any, path: Any = None, format: Any = None, mode: Any = None, *args: Any, **options: Any) -> Any:
        source = format or self._write.source
        given = mode if mode is not None else self._write.mode
        if _is_bruce(source) and (given is None or str(given).lower() in _ERROR_IF_EXISTS):
            mode = "append"
        return original_save(self, path, format, mode, *args, **options)

    save._bruce_append = True  # type: ignore[attr-defined]  # a mark on the function: default_to_append wraps once
    cls.save = save


def default_to_append() -> None:
    """Make Append the default save mode of ``format("bruce")`` in this process (see the module rules)."""
    from pyspark.sql.readwriter import DataFrameWriter

    if not getattr(DataFrameWriter.save, "_bruce_append", False):
        _wrap_classic(DataFrameWriter)
    try:
        from pyspark.sql.connect.readwriter import DataFrameWriter as ConnectWriter
    except (ImportError, SystemExit):  # Spark Connect's client dependencies are not installed: nothing to wrap
        return  # (SystemExit: pyspark exits instead of raising in a process whose __main__ has no file, ``python -c``)
    if not getattr(ConnectWriter.save, "_bruce_append", False):
        _wrap_connect(ConnectWriter)

"""The two optional C extensions; everything else about the distribution is in pyproject.toml.

Both are optional: where no C compiler (or no Python headers) is found, the build goes on without them and the Python
code makes the same bytes (the tests prove it). ``BRUCE_NO_EXTENSIONS=1`` turns them off at run time.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        # The spool's record encoder (docs/spool.md#performance): ~10x the Python encoder.
        Extension("bruce.proxy.spool._speedups", ["proxy/spool/_speedups.c"], optional=True),
        # bruce.wire's record encoders and columnar decoder (docs/wire.md, "The optional C encoders"): RecordBatch v2
        # records and magic 0/1 message sets from columns, record batches from Arrow-layout columns, and Fetch answers'
        # records into columns (tests/wire/test_wire_speedups.py, tests/wire_modern/test_columns.py,
        # tests/wire_modern/test_column_batch.py).
        Extension(
            "bruce.wire._speedups",
            ["wire/_speedups.c", "wire/_columns.c", "wire/_messages.c", "wire/_encode.c"],
            depends=["wire/_columns.h", "wire/_utf8.h", "wire/_varint.h"],
            optional=True,
        ),
    ]
)

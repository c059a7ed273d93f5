"""Kafka request/response APIs. Importing this package registers every API module with :mod:`.base`'s registry, so
``encode_request`` / ``decode_response`` know them all. One import per API module. :data:`REGISTRY` (every
registered API by key, ``bruce.wire.API_REGISTRY``) is complete once this package is imported."""

from . import add_partitions_to_txn as add_partitions_to_txn
from . import api_versions as api_versions
from . import create_topics as create_topics
from . import end_txn as end_txn
from . import fetch as fetch
from . import find_coordinator as find_coordinator
from . import init_producer_id as init_producer_id
from . import list_offsets as list_offsets
from . import metadata as metadata
from . import produce as produce
from . import sasl_authenticate as sasl_authenticate
from . import sasl_handshake as sasl_handshake
from .base import REGISTRY as REGISTRY

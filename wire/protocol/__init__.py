"""Kafka request/response APIs. Importing this package registers every API module with :mod:`.base`'s registry, so
``encode_request`` / ``decode_response`` know them all. One import per API module; Produce requests are written
directly (:mod:`.produce_frame`), proven equal to their schema."""

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
from .base import FRAME_ENCODERS
from .produce_frame import encode_produce_frame

FRAME_ENCODERS[produce.ProduceRequest] = encode_produce_frame

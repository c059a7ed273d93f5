"""bruce.wire: pure codecs for Bruce's input datagrams, plog packets and the Kafka protocol (see docs/wire.md).

Rules: bytes in, values out, no sockets, clocks or threads; nothing imported from the other layers. Every parser raises
:class:`~bruce.wire.errors.MalformedInput` (or a subclass) for any bad input and nothing else; every builder raises
:class:`~bruce.wire.errors.UsageError` for what cannot be encoded. construct schemas are the specification of each
format; a hand-written fast path sits next to its schema only with a differential test proving them equal.

The names other packages use are exported here (``from bruce.wire import BruceError``). They load on first use
(:func:`__getattr__`), so a client that needs the datagram format and the errors does not pay for building every
Kafka schema; the ``TYPE_CHECKING`` imports below give type checkers the same names.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import errorcodes, plog
    from .columns import BatchColumns, BatchFacts, BinaryColumn, RecordColumns, decode_columns
    from .compression import Codec, DecompressionBudget
    from .crc import crc32c
    from .datagram import (
        TOPIC_MAX,
        DatagramKind,
        any_partition_layout,
        build_any_partition,
        build_partition_key,
        parse_datagram,
        peek_topic,
    )
    from .errors import BruceError, MalformedInput, UnsupportedApiKey, UnsupportedVersion, UsageError
    from .messageset import MESSAGE_OVERHEAD, build_message_set, build_message_set_columns, decode_message_set
    from .plog import (
        KEY_TAG,
        TOPIC_TAG,
        Command,
        Fragment,
        Unboxed,
        last_tag,
        murmur2,
        murmur3_32,
        parse_packet,
        plog_partition_key,
    )
    from .protocol import find_coordinator
    from .protocol.add_partitions_to_txn import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
    from .protocol.api_versions import KEY as API_VERSIONS_KEY
    from .protocol.api_versions import ApiVersionsRequest, ApiVersionsResponse, decode_api_versions_response
    from .protocol.base import decode_response, encode_request, request_spec
    from .protocol.end_txn import EndTxnRequest
    from .protocol.fetch import (
        READ_COMMITTED,
        READ_UNCOMMITTED,
        AbortedTransaction,
        FetchPartition,
        FetchPartitionResponse,
        FetchRequest,
        FetchResponse,
        FetchTopic,
    )
    from .protocol.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
    from .protocol.list_offsets import EARLIEST, LATEST, ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
    from .protocol.metadata import MetadataResponse, metadata_request
    from .protocol.produce import PartitionProduceData, ProduceRequest, TopicProduceData
    from .protocol.produce_frame import produce_frame
    from .protocol.sasl_authenticate import KEY as SASL_AUTHENTICATE
    from .protocol.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
    from .protocol.sasl_handshake import KEY as SASL_HANDSHAKE
    from .protocol.sasl_handshake import SaslHandshakeRequest
    from .recordbatch import (
        build_record_batch,
        build_record_batch_columns,
        build_value_batch,
        decode_record_batch,
        with_producer_identity,
    )
    from .recordbatch_schema import HEADER_SIZE as RECORD_BATCH_HEADER_SIZE
    from .recordbatch_schema import RecordInput
    from .records import Record, decode_records, decompression_limit, entry_spans
    from .topic_name import LEGAL, topic_name_problem
    from .versions import (
        ADD_PARTITIONS_TO_TXN,
        END_TXN,
        FETCH,
        FIND_COORDINATOR,
        INIT_PRODUCER_ID,
        LIST_OFFSETS,
        METADATA,
        PRODUCE,
        Generation,
        ProtocolChoice,
        choose_versions,
    )

_EXPORTS: dict[str, tuple[str, str | None]] = {  # name -> (module, its name there; None: the module itself)
    "BruceError": ("errors", "BruceError"),
    "MalformedInput": ("errors", "MalformedInput"),
    "UnsupportedApiKey": ("errors", "UnsupportedApiKey"),
    "UnsupportedVersion": ("errors", "UnsupportedVersion"),
    "UsageError": ("errors", "UsageError"),
    "TOPIC_MAX": ("datagram", "TOPIC_MAX"),
    "DatagramKind": ("datagram", "DatagramKind"),
    "any_partition_layout": ("datagram", "any_partition_layout"),
    "build_any_partition": ("datagram", "build_any_partition"),
    "build_partition_key": ("datagram", "build_partition_key"),
    "parse_datagram": ("datagram", "parse_datagram"),
    "peek_topic": ("datagram", "peek_topic"),
    "LEGAL": ("topic_name", "LEGAL"),
    "topic_name_problem": ("topic_name", "topic_name_problem"),
    "crc32c": ("crc", "crc32c"),
    "Codec": ("compression", "Codec"),
    "DecompressionBudget": ("compression", "DecompressionBudget"),
    "MESSAGE_OVERHEAD": ("messageset", "MESSAGE_OVERHEAD"),
    "decode_message_set": ("messageset", "decode_message_set"),
    "build_record_batch": ("recordbatch", "build_record_batch"),
    "decode_record_batch": ("recordbatch", "decode_record_batch"),
    "Record": ("records", "Record"),
    "decode_records": ("records", "decode_records"),
    "decompression_limit": ("records", "decompression_limit"),
    "BatchColumns": ("columns", "BatchColumns"),
    "BatchFacts": ("columns", "BatchFacts"),
    "BinaryColumn": ("columns", "BinaryColumn"),
    "RecordColumns": ("columns", "RecordColumns"),
    "decode_columns": ("columns", "decode_columns"),
    "entry_spans": ("records", "entry_spans"),
    "KEY_TAG": ("plog", "KEY_TAG"),
    "TOPIC_TAG": ("plog", "TOPIC_TAG"),
    "Command": ("plog", "Command"),
    "Fragment": ("plog", "Fragment"),
    "Unboxed": ("plog", "Unboxed"),
    "last_tag": ("plog", "last_tag"),
    "murmur3_32": ("plog", "murmur3_32"),
    "parse_packet": ("plog", "parse_packet"),
    "plog_partition_key": ("plog", "plog_partition_key"),
    "FETCH": ("versions", "FETCH"),
    "LIST_OFFSETS": ("versions", "LIST_OFFSETS"),
    "METADATA": ("versions", "METADATA"),
    "READ_COMMITTED": ("protocol.fetch", "READ_COMMITTED"),
    "READ_UNCOMMITTED": ("protocol.fetch", "READ_UNCOMMITTED"),
    "AbortedTransaction": ("protocol.fetch", "AbortedTransaction"),
    "FetchPartition": ("protocol.fetch", "FetchPartition"),
    "FetchPartitionResponse": ("protocol.fetch", "FetchPartitionResponse"),
    "FetchRequest": ("protocol.fetch", "FetchRequest"),
    "FetchResponse": ("protocol.fetch", "FetchResponse"),
    "FetchTopic": ("protocol.fetch", "FetchTopic"),
    "EARLIEST": ("protocol.list_offsets", "EARLIEST"),
    "LATEST": ("protocol.list_offsets", "LATEST"),
    "ListOffsetsPartition": ("protocol.list_offsets", "ListOffsetsPartition"),
    "ListOffsetsRequest": ("protocol.list_offsets", "ListOffsetsRequest"),
    "ListOffsetsTopic": ("protocol.list_offsets", "ListOffsetsTopic"),
    "metadata_request": ("protocol.metadata", "metadata_request"),
    "RECORD_BATCH_HEADER_SIZE": ("recordbatch_schema", "HEADER_SIZE"),
    "errorcodes": ("errorcodes", None),
    "plog": ("plog", None),
    "build_value_batch": ("recordbatch", "build_value_batch"),
    "build_record_batch_columns": ("recordbatch", "build_record_batch_columns"),
    "API_VERSIONS_KEY": ("protocol.api_versions", "KEY"),
    "decode_api_versions_response": ("protocol.api_versions", "decode_api_versions_response"),
    "decode_response": ("protocol.base", "decode_response"),
    "encode_request": ("protocol.base", "encode_request"),
    "produce_frame": ("protocol.produce_frame", "produce_frame"),
    "request_spec": ("protocol.base", "request_spec"),
    "find_coordinator": ("protocol.find_coordinator", None),
    "FIND_COORDINATOR": ("versions", "FIND_COORDINATOR"),
    "InitProducerIdRequest": ("protocol.init_producer_id", "InitProducerIdRequest"),
    "InitProducerIdResponse": ("protocol.init_producer_id", "InitProducerIdResponse"),
    "MetadataResponse": ("protocol.metadata", "MetadataResponse"),
    "murmur2": ("plog", "murmur2"),
    "PartitionProduceData": ("protocol.produce", "PartitionProduceData"),
    "ProduceRequest": ("protocol.produce", "ProduceRequest"),
    "TopicProduceData": ("protocol.produce", "TopicProduceData"),
    "with_producer_identity": ("recordbatch", "with_producer_identity"),
    "PRODUCE": ("versions", "PRODUCE"),
    "build_message_set": ("messageset", "build_message_set"),
    "build_message_set_columns": ("messageset", "build_message_set_columns"),
    "RecordInput": ("recordbatch_schema", "RecordInput"),
    "SASL_AUTHENTICATE": ("protocol.sasl_authenticate", "KEY"),
    "SaslAuthenticateRequest": ("protocol.sasl_authenticate", "SaslAuthenticateRequest"),
    "SaslAuthenticateResponse": ("protocol.sasl_authenticate", "SaslAuthenticateResponse"),
    "SASL_HANDSHAKE": ("protocol.sasl_handshake", "KEY"),
    "SaslHandshakeRequest": ("protocol.sasl_handshake", "SaslHandshakeRequest"),
    "ProtocolChoice": ("versions", "ProtocolChoice"),
    "INIT_PRODUCER_ID": ("versions", "INIT_PRODUCER_ID"),
    "Generation": ("versions", "Generation"),
    "AddPartitionsToTxnRequest": ("protocol.add_partitions_to_txn", "AddPartitionsToTxnRequest"),
    "AddPartitionsToTxnTopic": ("protocol.add_partitions_to_txn", "AddPartitionsToTxnTopic"),
    "EndTxnRequest": ("protocol.end_txn", "EndTxnRequest"),
    "ADD_PARTITIONS_TO_TXN": ("versions", "ADD_PARTITIONS_TO_TXN"),
    "END_TXN": ("versions", "END_TXN"),
    "ApiVersionsRequest": ("protocol.api_versions", "ApiVersionsRequest"),
    "ApiVersionsResponse": ("protocol.api_versions", "ApiVersionsResponse"),
    "choose_versions": ("versions", "choose_versions"),
}
__all__ = [
    "ADD_PARTITIONS_TO_TXN",
    "API_VERSIONS_KEY",
    "EARLIEST",
    "END_TXN",
    "FETCH",
    "FIND_COORDINATOR",
    "INIT_PRODUCER_ID",
    "KEY_TAG",
    "LATEST",
    "LEGAL",
    "LIST_OFFSETS",
    "MESSAGE_OVERHEAD",
    "METADATA",
    "PRODUCE",
    "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "RECORD_BATCH_HEADER_SIZE",
    "SASL_AUTHENTICATE",
    "SASL_HANDSHAKE",
    "TOPIC_MAX",
    "TOPIC_TAG",
    "AbortedTransaction",
    "AddPartitionsToTxnRequest",
    "AddPartitionsToTxnTopic",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "BatchColumns",
    "BatchFacts",
    "BinaryColumn",
    "BruceError",
    "Codec",
    "Command",
    "DatagramKind",
    "DecompressionBudget",
    "EndTxnRequest",
    "FetchPartition",
    "FetchPartitionResponse",
    "FetchRequest",
    "FetchResponse",
    "FetchTopic",
    "Fragment",
    "Generation",
    "InitProducerIdRequest",
    "InitProducerIdResponse",
    "ListOffsetsPartition",
    "ListOffsetsRequest",
    "ListOffsetsTopic",
    "MalformedInput",
    "MetadataResponse",
    "PartitionProduceData",
    "ProduceRequest",
    "ProtocolChoice",
    "Record",
    "RecordColumns",
    "RecordInput",
    "SaslAuthenticateRequest",
    "SaslAuthenticateResponse",
    "SaslHandshakeRequest",
    "TopicProduceData",
    "Unboxed",
    "UnsupportedApiKey",
    "UnsupportedVersion",
    "UsageError",
    "any_partition_layout",
    "build_any_partition",
    "build_message_set",
    "build_message_set_columns",
    "build_partition_key",
    "build_record_batch",
    "build_record_batch_columns",
    "build_value_batch",
    "choose_versions",
    "crc32c",
    "decode_api_versions_response",
    "decode_columns",
    "decode_message_set",
    "decode_record_batch",
    "decode_records",
    "decode_response",
    "decompression_limit",
    "encode_request",
    "entry_spans",
    "errorcodes",
    "find_coordinator",
    "last_tag",
    "metadata_request",
    "murmur2",
    "murmur3_32",
    "parse_datagram",
    "parse_packet",
    "peek_topic",
    "plog",
    "plog_partition_key",
    "produce_frame",
    "request_spec",
    "topic_name_problem",
    "with_producer_identity",
]


def __getattr__(name: str) -> object:
    """Load an exported name from its module on first use, then keep it here."""
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    loaded = importlib.import_module(f"{__name__}.{module}")
    value = loaded if attribute is None else getattr(loaded, attribute)
    globals()[name] = value
    return value

"""bruce.wire: pure codecs for Bruce's input datagrams, plog packets and the Kafka protocol (see docs/wire.md).

Rules: bytes in, values out, no sockets, clocks or threads; nothing imported from the other layers. Every parser raises
:class:`~bruce.wire.errors.MalformedInput` (or a subclass) for any bad input and nothing else; every builder raises
:class:`~bruce.wire.errors.UsageError` for what cannot be encoded. construct schemas are the specification of each
format; a hand-written fast path sits next to its schema only with a differential test proving them equal.

The names other packages use are exported here (``from bruce.wire import BruceError``), listed once: the
``TYPE_CHECKING`` re-exports below, which type checkers read and :func:`bruce.wire.face.lazy_face` serves, each name
loaded on first use, so a client that needs the datagram format and the errors does not pay for building every Kafka
schema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .face import lazy_face as lazy_face  # the other packages' lazy faces use it too

if TYPE_CHECKING:  # the face: what other packages import (bruce.wire.face reads this list)
    from . import errorcodes as errorcodes
    from . import plog as plog
    from .column_batch import ColumnSizes as ColumnSizes
    from .column_batch import HeaderColumn as HeaderColumn
    from .column_batch import ProduceColumns as ProduceColumns
    from .column_batch import build_column_batch as build_column_batch
    from .column_batch import column_sizes as column_sizes
    from .column_batch import murmur2_column as murmur2_column
    from .columns import BatchColumns as BatchColumns
    from .columns import BatchFacts as BatchFacts
    from .columns import BinaryColumn as BinaryColumn
    from .columns import RecordColumns as RecordColumns
    from .columns import decode_columns as decode_columns
    from .compression import Codec as Codec
    from .compression import DecompressionBudget as DecompressionBudget
    from .crc import crc32c as crc32c
    from .datagram import TOPIC_MAX as TOPIC_MAX
    from .datagram import DatagramKind as DatagramKind
    from .datagram import any_partition_layout as any_partition_layout
    from .datagram import build_any_partition as build_any_partition
    from .datagram import build_old_v0 as build_old_v0
    from .datagram import build_partition_key as build_partition_key
    from .datagram import parse_datagram as parse_datagram
    from .datagram import peek_topic as peek_topic
    from .errors import BruceError as BruceError
    from .errors import MalformedInput as MalformedInput
    from .errors import UnsupportedApiKey as UnsupportedApiKey
    from .errors import UnsupportedVersion as UnsupportedVersion
    from .errors import UsageError as UsageError
    from .messageset import MESSAGE_OVERHEAD as MESSAGE_OVERHEAD
    from .messageset import build_message_set as build_message_set
    from .messageset import build_message_set_columns as build_message_set_columns
    from .messageset import decode_message_set as decode_message_set
    from .plog import KEY_TAG as KEY_TAG
    from .plog import TOPIC_TAG as TOPIC_TAG
    from .plog import Command as Command
    from .plog import Fragment as Fragment
    from .plog import Unboxed as Unboxed
    from .plog import last_tag as last_tag
    from .plog import murmur2 as murmur2
    from .plog import murmur3_32 as murmur3_32
    from .plog import parse_packet as parse_packet
    from .plog import plog_partition_key as plog_partition_key
    from .protocol import find_coordinator as find_coordinator
    from .protocol.add_partitions_to_txn import AddPartitionsToTxnRequest as AddPartitionsToTxnRequest
    from .protocol.add_partitions_to_txn import AddPartitionsToTxnTopic as AddPartitionsToTxnTopic
    from .protocol.api_versions import API_VERSIONS_KEY as API_VERSIONS_KEY
    from .protocol.api_versions import ApiVersionsRequest as ApiVersionsRequest
    from .protocol.api_versions import ApiVersionsResponse as ApiVersionsResponse
    from .protocol.api_versions import decode_api_versions_response as decode_api_versions_response
    from .protocol.base import API_REGISTRY as API_REGISTRY
    from .protocol.base import ApiSpec as ApiSpec
    from .protocol.base import RequestHeader as RequestHeader
    from .protocol.base import api_spec as api_spec
    from .protocol.base import api_specs as api_specs
    from .protocol.base import decode_request as decode_request
    from .protocol.base import decode_response as decode_response
    from .protocol.base import encode_request as encode_request
    from .protocol.base import peek_request_header as peek_request_header
    from .protocol.base import request_spec as request_spec
    from .protocol.base import response_correlation_id as response_correlation_id
    from .protocol.consumer_protocol import ASSIGNMENT_SCHEMAS as ASSIGNMENT_SCHEMAS
    from .protocol.consumer_protocol import SUBSCRIPTION_SCHEMAS as SUBSCRIPTION_SCHEMAS
    from .protocol.consumer_protocol import ConsumerAssignment as ConsumerAssignment
    from .protocol.consumer_protocol import ConsumerSubscription as ConsumerSubscription
    from .protocol.consumer_protocol import ConsumerTopicPartitions as ConsumerTopicPartitions
    from .protocol.consumer_protocol import decode_assignment as decode_assignment
    from .protocol.consumer_protocol import decode_subscription as decode_subscription
    from .protocol.consumer_protocol import encode_assignment as encode_assignment
    from .protocol.consumer_protocol import encode_subscription as encode_subscription
    from .protocol.end_txn import EndTxnRequest as EndTxnRequest
    from .protocol.fetch import READ_COMMITTED as READ_COMMITTED
    from .protocol.fetch import READ_UNCOMMITTED as READ_UNCOMMITTED
    from .protocol.fetch import AbortedTransaction as AbortedTransaction
    from .protocol.fetch import FetchPartition as FetchPartition
    from .protocol.fetch import FetchPartitionResponse as FetchPartitionResponse
    from .protocol.fetch import FetchRequest as FetchRequest
    from .protocol.fetch import FetchResponse as FetchResponse
    from .protocol.fetch import FetchTopic as FetchTopic
    from .protocol.init_producer_id import InitProducerIdRequest as InitProducerIdRequest
    from .protocol.init_producer_id import InitProducerIdResponse as InitProducerIdResponse
    from .protocol.list_offsets import EARLIEST as EARLIEST
    from .protocol.list_offsets import LATEST as LATEST
    from .protocol.list_offsets import ListOffsetsPartition as ListOffsetsPartition
    from .protocol.list_offsets import ListOffsetsRequest as ListOffsetsRequest
    from .protocol.list_offsets import ListOffsetsTopic as ListOffsetsTopic
    from .protocol.metadata import MetadataResponse as MetadataResponse
    from .protocol.metadata import metadata_request as metadata_request
    from .protocol.produce import PartitionProduceData as PartitionProduceData
    from .protocol.produce import ProduceRequest as ProduceRequest
    from .protocol.produce import TopicProduceData as TopicProduceData
    from .protocol.produce_frame import produce_frame as produce_frame
    from .protocol.sasl_authenticate import SASL_AUTHENTICATE as SASL_AUTHENTICATE
    from .protocol.sasl_authenticate import SaslAuthenticateRequest as SaslAuthenticateRequest
    from .protocol.sasl_authenticate import SaslAuthenticateResponse as SaslAuthenticateResponse
    from .protocol.sasl_handshake import SASL_HANDSHAKE as SASL_HANDSHAKE
    from .protocol.sasl_handshake import SaslHandshakeRequest as SaslHandshakeRequest
    from .recordbatch import build_record_batch as build_record_batch
    from .recordbatch import build_record_batch_columns as build_record_batch_columns
    from .recordbatch import build_value_batch as build_value_batch
    from .recordbatch import decode_record_batch as decode_record_batch
    from .recordbatch import with_producer_identity as with_producer_identity
    from .recordbatch_schema import RECORD_BATCH_HEADER_SIZE as RECORD_BATCH_HEADER_SIZE
    from .recordbatch_schema import RecordInput as RecordInput
    from .records import Record as Record
    from .records import decode_records as decode_records
    from .records import decompression_limit as decompression_limit
    from .records import entry_spans as entry_spans
    from .topic_name import LEGAL as LEGAL
    from .topic_name import topic_name_problem as topic_name_problem
    from .versions import ADD_PARTITIONS_TO_TXN as ADD_PARTITIONS_TO_TXN
    from .versions import END_TXN as END_TXN
    from .versions import FETCH as FETCH
    from .versions import FIND_COORDINATOR as FIND_COORDINATOR
    from .versions import INIT_PRODUCER_ID as INIT_PRODUCER_ID
    from .versions import LIST_OFFSETS as LIST_OFFSETS
    from .versions import METADATA as METADATA
    from .versions import PRODUCE as PRODUCE
    from .versions import Generation as Generation
    from .versions import ProtocolChoice as ProtocolChoice
    from .versions import choose_versions as choose_versions

__getattr__ = lazy_face(__name__, __file__)

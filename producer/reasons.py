"""Why a message was not delivered: the discard reason names shared by the producer, the daemon, counters, discard
reports and the discard log.

Rules: names are Bruce's (docs/bruce-compatibility.md#discard-log) where Bruce has one; the values are the exact strings
written to the discard log and shown on the status pages. Never rename a member: users alert on these strings.
"""

from __future__ import annotations

from enum import StrEnum


class DiscardReason(StrEnum):
    # Intake (input datagrams)
    MALFORMED = "MALFORMED"
    API_KEY = "API_KEY"  # unsupported input API key; logged as API_KEY(n)
    VERSION = "VERSION"  # unsupported input version; logged as VERSION(n)
    NO_MEM = "NO_MEM"  # the message budget (msg_buffer_max) is full
    LONG_MSG = "LONG_MSG"  # too long: over the datagram limit or the broker's message.max.bytes
    SPOOL_FULL = "SPOOL_FULL"  # the spool held --spool_max_bytes, with --spool_full_policy discard
    SPOOL_CORRUPT = "SPOOL_CORRUPT"  # a spooled record failed its CRC at replay (docs/spool.md)
    # Routing
    BAD_TOPIC = "BAD_TOPIC"
    BAD_TOPIC_NAME = "BAD_TOPIC_NAME"  # a name Kafka refuses (bruce.wire.topic_name); never sent to a broker
    NO_AVAILABLE_PARTITIONS = "NO_AVAILABLE_PARTITIONS"
    RATE_LIMIT = "RATE_LIMIT"
    TOPIC_AUTOCREATE_FAIL = "TOPIC_AUTOCREATE_FAIL"  # no broker agreed to create the topic
    TOPIC_CREATE_TIMEOUT = "TOPIC_CREATE_TIMEOUT"  # asked to create the topic; not in metadata by the deadline
    # Delivery
    KAFKA_ERROR_ACK = "KAFKA_ERROR_ACK"
    DELIVERY_ATTEMPT_LIMIT = "DELIVERY_ATTEMPT_LIMIT"
    SERVER_SHUTDOWN = "SERVER_SHUTDOWN"
    # Library use (bruce.producer.Producer)
    MESSAGE_TIMEOUT = (
        "MESSAGE_TIMEOUT"  # not delivered within message_timeout_ms (or a caller's timeout, given to close())
    )
    PRODUCER_CLOSED = "PRODUCER_CLOSED"  # close() deadline passed with the message undelivered
    TRANSACTION_ABORTED = "TRANSACTION_ABORTED"  # its transaction was aborted (or failed) before it was written
    AUTHENTICATION_FAILED = "AUTHENTICATION_FAILED"  # every bootstrap broker refused authentication (TLS or SASL)
    BUG = "BUG"

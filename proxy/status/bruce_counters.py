"""``/counters/plain`` and ``/counters/json`` in Bruce's shape: a fixed catalogue of Bruce's counter names.

Rules:
- The pages list exactly the names of :data:`SERVED`, each once, in the catalogue's order, from the daemon's start
  (0 until used). The set never changes while the daemon runs, so Bruce's monitoring scripts (which refuse a repeated
  name and want the same names in consecutive reports) read every report.
- Each served name is a sum of *terms* over the daemon's counter sets: ``"Name"`` sums every label of ``Name``,
  ``"Name{k=v}"`` only that label value, and a leading ``-`` subtracts. A name with no terms is always 0: Bruce counts
  something that cannot happen here, and its scripts read the name (each such entry says why).
- Bruce renamed some counters between releases; an old name that counts exactly what a served name counts is served
  with the same value (``_RENAMED``). Where Bruce split one count in two (a send and a receive thread), the whole is
  served, and the two halves its scripts of those releases read and add (``_SIDES``): the receive side carries the
  whole, the send side is 0, so their sum is the whole and nothing counts twice. Other halves are not served.
- :data:`ABSENT` holds Bruce's names that mean nothing here (threads, buffers and wire details of Bruce's own
  design): they are not served. docs/bruce-counters.md lists both tables; a test keeps them in step.
- Labelled detail (per broker, topic, reason, page) and the daemon's own names stay on ``/metrics``.
- Where a served name counts differently from Bruce, the meaning says so. The failures Bruce's counters script judges
  are counted once per episode (a broker's first failure after it last answered, a refresh that failed and kept
  failing until it succeeded), not once per retry, as Bruce's pause-and-refresh cycle counts them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .source import CounterSet

LOCATION = "bruce"


@dataclass(frozen=True, slots=True)
class Entry:
    """One served Bruce name: what it means here and how it is computed (module rules)."""

    meaning: str
    terms: tuple[str, ...] = ()


def _e(meaning: str, *terms: str) -> Entry:
    return Entry(meaning, terms)


_ZERO = "Never counts here: "
_ACK_CODES = {
    "OffsetOutOfRange": "OFFSET_OUT_OF_RANGE",
    "InvalidMessage": "CORRUPT_MESSAGE",
    "UnknownTopicOrPartition": "UNKNOWN_TOPIC_OR_PARTITION",
    "InvalidMessageSize": "INVALID_FETCH_SIZE",
    "LeaderNotAvailable": "LEADER_NOT_AVAILABLE",
    "NotLeaderForPartition": "NOT_LEADER_OR_FOLLOWER",
    "RequestTimedOut": "REQUEST_TIMED_OUT",
    "BrokerNotAvailable": "BROKER_NOT_AVAILABLE",
    "ReplicaNotAvailable": "REPLICA_NOT_AVAILABLE",
    "MessageSizeTooLarge": "MESSAGE_TOO_LARGE",
    "StaleControllerEpochCode": "STALE_CONTROLLER_EPOCH",
    "OffsetMetadataTooLargeCode": "OFFSET_METADATA_TOO_LARGE",
    "Unknown": "UNKNOWN_SERVER_ERROR",
}
# Kafka 0.9 codes, named by Bruce's later releases (a "Code" suffix added to the name).
_ACK_CODES_09 = {
    "GroupLoadInProgress": "COORDINATOR_LOAD_IN_PROGRESS",
    "GroupCoordinatorNotAvailable": "COORDINATOR_NOT_AVAILABLE",
    "NotCoordinatorForGroup": "NOT_COORDINATOR",
    "InvalidTopic": "INVALID_TOPIC_EXCEPTION",
    "RecordListTooLarge": "RECORD_LIST_TOO_LARGE",
    "NotEnoughReplicas": "NOT_ENOUGH_REPLICAS",
    "NotEnoughReplicasAfterAppend": "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    "InvalidRequiredAcks": "INVALID_REQUIRED_ACKS",
    "IllegalGeneration": "ILLEGAL_GENERATION",
    "InconsistentGroupProtocol": "INCONSISTENT_GROUP_PROTOCOL",
    "InvalidGroupId": "INVALID_GROUP_ID",
    "UnknownMemberId": "UNKNOWN_MEMBER_ID",
    "InvalidSessionTimeout": "INVALID_SESSION_TIMEOUT",
    "RebalanceInProgress": "REBALANCE_IN_PROGRESS",
    "InvalidCommitOffsetSize": "INVALID_COMMIT_OFFSET_SIZE",
    "TopicAuthorizationFailed": "TOPIC_AUTHORIZATION_FAILED",
    "GroupAuthorizationFailed": "GROUP_AUTHORIZATION_FAILED",
    "ClusterAuthorizationFailed": "CLUSTER_AUTHORIZATION_FAILED",
}
# Another release's name for the same count: served with the same value as the name it maps to.
_RENAMED = {
    "UnixDgInputAgentGotOkMsg": "InputThreadGotOkMsg",
    "UnixDgInputAgentForwardMsg": "InputThreadForwardMsg",
    "InputThreadDiscardMsgMalformed": "InputAgentDiscardMsgMalformed",
    "InputThreadDiscardMsgNoMem": "InputAgentDiscardMsgNoMem",
    "InputThreadDiscardMsgUnsupportedApiKey": "InputAgentDiscardMsgUnsupportedApiKey",
    "InputThreadDiscardMsgUnsupportedVersion": "InputAgentDiscardMsgUnsupportedVersion",
    "InputThreadDiscardPartitionKeyMsgUnsupportedApiVersion": "InputAgentDiscardPartitionKeyMsgUnsupportedApiVersion",
    "InputThreadDiscardOldOldFormatMsgMalformed": "InputAgentDiscardOldOldFormatMsgMalformed",
    "InputThreadDiscardOldOldFormatMsgNoMem": "InputAgentDiscardOldOldFormatMsgNoMem",
    "SenderConnectFail": "ConnectorConnectFail",
    "ReceiverSocketBrokerClose": "ConnectorSocketBrokerClose",
    "ReceiveThreadGotSuccessfulAck": "ConnectorGotSuccessfulAck",
    "ReceiveThreadGotResendAck": "ConnectorGotResendAck",
    "ReceiveThreadGotPauseAck": "ConnectorGotPauseAck",
    "ReceiveThreadGotDiscardAck": "ConnectorGotDiscardAck",
}
_METADATA_PARSE = _ZERO + "a metadata answer that does not parse is a failed round (GetMetadataFail, /metrics)."
_PRODUCE_PARSE = _ZERO + "a produce response that does not parse is a ConnectorProtocolError (/metrics) and a pause."
_BUG = _ZERO + "no such internal state exists in this implementation."
_HTTP = _ZERO + "a failing status page answers 500 and counts StatusHandlerError (/metrics)."

_CURRENT: dict[str, Entry] = {
    # Messages
    "MsgCreate": _e("Messages accepted (budget charged); MsgCreate - MsgDestroy = messages held.", "MsgCreate"),
    "MsgDestroy": _e("Messages settled (delivered or discarded; budget released).", "MsgDestroy"),
    "MsgUnprocessedDestroy": _e(_ZERO + "every message is settled exactly once by the accounting."),
    "InputThreadGotOkMsg": _e("Datagrams that became messages.", "InputAgentGotOkMsg"),
    "InputThreadForwardMsg": _e("Messages passed on to routing (same as InputThreadGotOkMsg).", "InputAgentGotOkMsg"),
    "InputAgentDiscardMsgUnsupportedApiKey": _e(
        "Datagrams with an unknown API key.", "InputAgentDiscardMsgUnsupportedApiKey"
    ),
    "InputAgentDiscardMsgUnsupportedVersion": _e(
        "Legacy-format datagrams of an unsupported version.", "InputAgentDiscardMsgUnsupportedVersion"
    ),
    "InputAgentDiscardAnyPartitionMsgUnsupportedApiVersion": _e(
        "AnyPartition datagrams of an unsupported API version.",
        "InputAgentDiscardAnyPartitionMsgUnsupportedApiVersion",
    ),
    "InputAgentDiscardPartitionKeyMsgUnsupportedApiVersion": _e(
        "PartitionKey datagrams of an unsupported API version.",
        "InputAgentDiscardPartitionKeyMsgUnsupportedApiVersion",
    ),
    "InputAgentDiscardOldOldFormatMsgMalformed": _e(_ZERO + "the `topic body` input format is not supported."),
    "InputAgentDiscardOldOldFormatMsgNoMem": _e(_ZERO + "the `topic body` input format is not supported."),
    "InputAgentDiscardMsgMalformed": _e(
        "Malformed datagrams, and datagrams over --max_input_msg_size (Bruce reads those truncated: malformed).",
        "InputAgentDiscardMsgMalformed",
        "InputAgentDiscardMsgTooLong",
    ),
    "InputAgentDiscardMsgNoMem": _e(
        "Messages refused because the message budget was full.", "InputAgentDiscardMsgNoMem"
    ),
    # Routing and discards
    "DiscardBadTopicMsgOnRoute": _e("Messages for a topic the cluster does not have.", "DiscardBadTopicMsgOnRoute"),
    "DiscardLongMsg": _e("Messages over the broker's message size limit.", "DiscardLongMsg"),
    "DiscardNoAvailablePartition": _e(
        "Messages for a topic without a usable partition.", "DiscardNoAvailablePartition"
    ),
    "DiscardDueToRateLimit": _e("Messages over their topic's rate limit.", "DiscardDueToRateLimit"),
    "DiscardOnTopicAutocreateFail": _e(
        "Messages whose topic could not be created.", "DiscardOnTopicAutocreateFail", "DiscardOnTopicCreateTimeout"
    ),
    "DiscardOnFailedDeliveryAttemptLimit": _e(
        "Messages that failed --max_failed_delivery_attempts times.", "Discard{reason=DELIVERY_ATTEMPT_LIMIT}"
    ),
    "DiscardBadTopicOnReroute": _e(
        "Messages held while their topic vanished from the cluster.",
        "Discard{reason=BAD_TOPIC}",
        "-DiscardBadTopicMsgOnRoute",
    ),
    "DiscardDeletedTopicMsg": _e(_ZERO + "counted in DiscardBadTopicOnReroute."),
    "DiscardNoLongerAvailableTopicMsg": _e(
        "Messages held while their topic lost every usable partition.",
        "Discard{reason=NO_AVAILABLE_PARTITIONS}",
        "-DiscardNoAvailablePartition",
    ),
    "DiscardNoAvailablePartitionOnReroute": _e(_ZERO + "counted in DiscardNoLongerAvailableTopicMsg."),
    "PossibleDuplicateMsg": _e(
        "Messages sent again after a lost connection (may be stored twice).", "PossibleDuplicateMsg"
    ),
    "TopicHasNoAvailablePartitions": _e(
        _ZERO + "a topic without partitions is a discard (DiscardNoAvailablePartition)."
    ),
    "NoDiscardQuery": _e("Discard report periods nobody asked for (a report may be lost).", "NoDiscardQuery"),
    # Metadata
    "GetMetadataSuccess": _e("Metadata rounds answered (startup, every refresh, every pause).", "GetMetadataSuccess"),
    "GetMetadataFail": _e(
        "Metadata refreshes that failed: once per failing episode (retries until the next success are not counted "
        "again); per broker and round on /metrics as MetadataBrokerFail.",
        "GetMetadataFail",
    ),
    "InitialGetMetadataFail": _e(
        "As GetMetadataFail, before the first metadata ever arrived.", "InitialGetMetadataFail"
    ),
    "MetadataUpdated": _e("Metadata answers applied.", "GetMetadataSuccess"),
    "RefreshMetadataSuccess": _e("Metadata rounds answered (same as GetMetadataSuccess).", "GetMetadataSuccess"),
    "MetadataChangedOnRefresh": _e("Metadata answers that changed the cluster view.", "MetadataChanged"),
    "MetadataUnchangedOnRefresh": _e(
        "Metadata answers that did not change the cluster view.", "GetMetadataSuccess", "-MetadataChanged"
    ),
    "ConnectFailOnTryGetMetadata": _e(
        "Brokers that failed a metadata request: once per broker per episode (until it answers again).",
        "ConnectFailOnTryGetMetadata",
    ),
    "MetadataHasEmptyBrokerList": _e(_ZERO + "an answer without brokers is a failed round (GetMetadataFail)."),
    "MetadataHasEmptyTopicList": _e(_ZERO + "an answer without topics is a brand-new cluster: a valid view."),
    "BadMetadataResponse": _e(_METADATA_PARSE),
    "BadMetadataContent": _e(_METADATA_PARSE),
    "BadMetadataResponseSize": _e(_METADATA_PARSE),
    "MetadataResponseHasExtraJunk": _e(_METADATA_PARSE),
    "MetadataResponseBadTopicNameLen": _e(_METADATA_PARSE),
    "MetadataResponseBadBrokerHostLen": _e(_METADATA_PARSE),
    "MetadataResponseBadBrokerPort": _e(_METADATA_PARSE),
    "MetadataResponseInvalidLeaderNodeId": _e(_METADATA_PARSE),
    "MetadataResponseNegativeBrokerCount": _e(_METADATA_PARSE),
    "MetadataResponseNegativeBrokerNodeId": _e(_METADATA_PARSE),
    "MetadataResponseNegativeCaughtUpReplicaNodeId": _e(_METADATA_PARSE),
    "MetadataResponseNegativePartitionCaughtUpReplicaCount": _e(_METADATA_PARSE),
    "MetadataResponseNegativePartitionCount": _e(_METADATA_PARSE),
    "MetadataResponseNegativePartitionId": _e(_METADATA_PARSE),
    "MetadataResponseNegativePartitionReplicaCount": _e(_METADATA_PARSE),
    "MetadataResponseNegativeReplicaNodeId": _e(_METADATA_PARSE),
    "MetadataResponseNegativeTopicCount": _e(_METADATA_PARSE),
    "MetadataResponseRead1LostTcpConnection": _e(_ZERO + "counted in ConnectFailOnTryGetMetadata."),
    "MetadataResponseRead1TimedOut": _e(_ZERO + "counted in ConnectFailOnTryGetMetadata."),
    "MetadataResponseRead2LostTcpConnection": _e(_ZERO + "counted in ConnectFailOnTryGetMetadata."),
    "MetadataResponseRead2TimedOut": _e(_ZERO + "counted in ConnectFailOnTryGetMetadata."),
    "MetadataResponseRead2UnexpectedEnd": _e(_ZERO + "counted in ConnectFailOnTryGetMetadata."),
    "ReadMetadataResponse2Fail": _e(_ZERO + "counted in ConnectFailOnTryGetMetadata."),
    "SendMetadataRequestFail": _e(_ZERO + "counted in ConnectFailOnTryGetMetadata."),
    "SendMetadataRequestLostTcpConnection": _e(_ZERO + "counted in ConnectFailOnTryGetMetadata."),
    "SendMetadataRequestTimedOut": _e(_ZERO + "counted in ConnectFailOnTryGetMetadata."),
    "TopicAutocreateSuccess": _e("Topics created on demand.", "TopicAutocreateOk"),
    "TopicAutocreateGotErrorResponse": _e("Topic creations refused by the broker.", "TopicAutocreateFail"),
    "TopicAutocreateNoTopicInResponse": _e("Topic creations nobody answered.", "TopicAutocreateNoAnswer"),
    # Connections to brokers
    "ConnectorConnectFail": _e(
        "Produce connections that could not be opened: once per broker per episode (per attempt on /metrics as "
        "ConnectorConnectAttemptFail).",
        "ConnectorConnectFail",
    ),
    "ConnectorSocketError": _e("Produce connections lost to a socket error.", "ConnectorSocketError"),
    "ConnectorSocketBrokerClose": _e("Produce connections closed by the broker.", "ConnectorSocketBrokerClose"),
    "ConnectorSocketTimeout": _e(
        "Produce connections given up for an unanswered request.", "ConnectorSocketTimeout", "ConnectorRequestTimeout"
    ),
    "ConnectorTruncateLongTimeout": _e(_ZERO + "timeouts are bounded when configured."),
    "ConnectorGotSuccessfulAck": _e("Messages acknowledged without error.", "AckOk"),
    "ConnectorGotResendAck": _e("Messages sent again after a retriable ACK error.", "MsgResend"),
    "ConnectorGotPauseAck": _e("ACK errors that started a pause.", "GotPauseAck"),
    "ConnectorGotDiscardAck": _e("Messages discarded for an ACK error.", "Discard{reason=KAFKA_ERROR_ACK}"),
    "CorrelationIdMismatch": _e(_PRODUCE_PARSE),
    "BadProduceResponse": _e(_PRODUCE_PARSE),
    "BadProduceResponseSize": _e(_PRODUCE_PARSE),
    "BadKafkaResponseSize": _e(_PRODUCE_PARSE),
    "ProduceResponseBadPartitionCount": _e(_PRODUCE_PARSE),
    "ProduceResponseBadTopicCount": _e(_PRODUCE_PARSE),
    "ProduceResponseBadTopicNameLength": _e(_PRODUCE_PARSE),
    "ProduceResponseUnexpectedPartition": _e(
        "Produce responses naming a partition not asked for.", "ProduceResponseUnexpectedPartition"
    ),
    "ProduceResponseUnexpectedTopic": _e(_ZERO + "counted in ProduceResponseUnexpectedPartition."),
    "ProduceResponseShortPartitionList": _e("Produce responses missing a partition.", "ProduceResponseShort"),
    "ProduceResponseShortTopicList": _e(_ZERO + "counted in ProduceResponseShortPartitionList."),
    "AckErrorNone": _e("Messages acknowledged without error (as ConnectorGotSuccessfulAck).", "AckOk"),
    **{
        f"AckError{bruce}": _e(f"Messages answered with error {code}.", f"AckError{{code={code}}}")
        for bruce, code in _ACK_CODES.items()
    },
    "AckErrorUndocumented": _e(
        "Messages answered with an error code Bruce's Kafka 0.8 protocol does not name.",
        "AckError",
        *(f"-AckError{{code={code}}}" for code in _ACK_CODES.values()),
    ),
    "AckNotRequired": _e("Messages sent with --required_acks 0 (no answer awaited).", "AckNotRequired"),
    "MsgSetCompressionYes": _e("Message sets sent compressed.", "MsgSetCompressionYes"),
    "MsgSetCompressionNo": _e("Message sets sent uncompressed.", "MsgSetCompressionNo"),
    "MsgSetNotCompressible": _e(
        "Message sets that compressed too little and went uncompressed.", "MsgSetCompressionNotCompressible"
    ),
    "MsgSetCompressionError": _e(
        "Message sets whose compression failed (sent uncompressed).", "MsgSetCompressionError"
    ),
    "PauseStarted": _e("Pauses: stop sending, refresh metadata, resend.", "Pause"),
    # Internal consistency checks Bruce's counters script reads
    "BugDispatchBatchOutOfRangeIndex": _e(_BUG),
    "BugDispatchMsgOutOfRangeIndex": _e(_BUG),
    "BugGetAckWaitQueueOutOfRangeIndex": _e(_BUG),
    "BugAllTopicsEmpty": _e(_BUG),
    "BugMsgListMultipleTopics": _e(_BUG),
    "BugMsgSetEmpty": _e(_BUG),
    "BugMultiPartitionGroupEmpty": _e(_BUG),
    "BugProduceRequestEmpty": _e(_BUG),
    # Status pages
    "MongooseHttpRequest": _e("Status page requests.", "StatusRequest"),
    "MongooseGetServerInfoRequest": _e("/server_info requests.", "StatusRequest{page=server_info}"),
    "MongooseGetCountersRequest": _e("/counters requests.", "StatusRequest{page=counters}"),
    "MongooseGetDiscardsRequest": _e("/discards requests.", "StatusRequest{page=discards}"),
    "MongooseGetMetadataFetchTimeRequest": _e(
        "/metadata_fetch_time requests.", "StatusRequest{page=metadata_fetch_time}"
    ),
    "MongooseGetQueueStatsRequest": _e("/queues requests.", "StatusRequest{page=queues}"),
    "MongooseStdException": _e(_HTTP),
    "MongooseUnknownException": _e(_HTTP),
    "MongooseUrlDecodeError": _e(_ZERO + "a malformed request is answered 400 by the HTTP server (StatusBadRequest)."),
    "MongooseEventLog": _e(_ZERO + "the HTTP server's own errors are logged, not counted."),
    # Bruce's later releases: the ACK result by name, and the Kafka 0.9 error codes
    "AckOk": _e("Messages acknowledged without error (as ConnectorGotSuccessfulAck).", "AckOk"),
    **{
        f"AckError{bruce}Code": _e(
            f"Messages answered with error {code} (also in AckErrorUndocumented, which keeps Bruce's Kafka 0.8 list).",
            f"AckError{{code={code}}}",
        )
        for bruce, code in _ACK_CODES_09.items()
    },
}
# Releases with a send and a receive thread per broker counted a lost connection or an unanswered request on one
# side; their counters script adds the two sides to its socket errors (whole name: (receive side, send side)).
_SIDES = {
    "ConnectorSocketError": ("ReceiverSocketError", "SenderSocketError"),
    "ConnectorSocketTimeout": ("ReceiverSocketTimeout", "SenderSocketTimeout"),
}
SERVED: dict[str, Entry] = {
    **_CURRENT,
    **{
        old: _e(f"As {new} (its name in another Bruce release).", *_CURRENT[new].terms) for old, new in _RENAMED.items()
    },
    **{
        name: entry
        for whole, (receive, send) in _SIDES.items()
        for name, entry in (
            (
                receive,
                _e(f"As {whole}, for releases with a send and a receive thread per broker.", *_CURRENT[whole].terms),
            ),
            (send, _e(_ZERO + f"counted in {receive} (their scripts add the two sides: {whole}).")),
        )
    },
}

_THREADS = "Bruce's thread and queue life cycle; this daemon is one event loop (no such steps)."
_SERIALIZE = "Bruce's serialisation steps; this daemon builds requests in one step (see MsgSent on /metrics)."
_TRUNCATED = "A field-by-field parse check of Bruce's Kafka 0.8 reader; unparseable answers are counted as a whole."
_PER_FORMAT = "Datagrams are not counted per input format (the discards are, per reason)."
_BUFFER = "Bruce's receive buffer management; this daemon reads each response whole."


def _split(name: str) -> str:
    return f"One side of {name} (served) in releases with a send and a receive thread per broker."


ABSENT: dict[str, str] = {
    **dict.fromkeys(
        (
            "ConnectorCheckInputQueue",
            "ConnectorCleanupAfterJoin",
            "ConnectorDoSocketRead",
            "ConnectorFinishRun",
            "ConnectorFinishWaitShutdownAck",
            "ConnectorStartConnect",
            "ConnectorStartFastShutdown",
            "ConnectorStartRun",
            "ConnectorStartSlowShutdown",
            "ConnectorStartWaitShutdownAck",
            "ConnectorQueueImmediateResendMsgSet",
            "ConnectorQueueNoAckMsgs",
            "ConnectorQueuePauseAndResendMsgSet",
            "DispatchOneBatch",
            "DispatchOneMsg",
            "FinishDispatcherJoinAll",
            "StartDispatcherFastShutdown",
            "StartDispatcherJoinAll",
            "StartDispatcherSlowShutdown",
            "StartKafkaDispatcher",
            "RouterThreadFinishPause",
            "RouterThreadGetMsgList",
            "RouterThreadStartPause",
            "RouteMsgBatchList",
            "RouteSingleAnyPartitionMsg",
            "RouteSingleMsg",
            "RouteSinglePartitionKeyMsg",
            "BatchExpiryDetected",
            "SetBatchExpiry",
            "PerTopicBatchAnyPartition",
            "StartRefreshMetadata",
            "FinishRefreshMetadata",
            "StartSendMetadataRequest",
            "LastDispatcherThreadFinished",
        ),
        _THREADS,
    ),
    **dict.fromkeys(("SerializeMsg", "SerializeMsgSet", "SerializeProduceRequest", "SerializeTopicGroup"), _SERIALIZE),
    **dict.fromkeys(
        (
            *(f"MetadataResponseIncomplete{i}" for i in range(1, 10)),
            *(f"ProduceResponseTruncated{i}" for i in range(1, 6)),
        ),
        _TRUNCATED,
    ),
    **dict.fromkeys(
        (
            "InputAgentProcessAnyPartitionMsg",
            "InputAgentProcessPartitionKeyMsg",
            "InputAgentProcessOldFormatMsg",
            "InputAgentProcessOldOldFormatMsg",
        ),
        _PER_FORMAT,
    ),
    "ConnectorConnectSuccess": "Per-connection successes are not counted (ConnectedBrokers is a gauge on /metrics).",
    "ConnectorSocketReadSuccess": "Socket reads are not counted.",
    "ConnectorGotOkProduceResponse": "Counted per message instead (AckOk on /metrics).",
    "ConnectorGotDiscardAndPauseAck": "Counted in ConnectorGotDiscardAck and ConnectorGotPauseAck.",
    "SendProduceRequestOk": "Requests are not counted; messages sent are (MsgSent on /metrics).",
    "SkipOutOfServiceBroker": "Brokers without partitions are simply not connected to.",
    "ConnectSuccessOnTryGetMetadata": "Successes are counted per round (GetMetadataSuccess).",
    "ConnectFailOnTopicAutocreate": "Counted in TopicAutocreateNoTopicInResponse.",
    "ConnectSuccessOnTopicAutocreate": "Successes are counted per topic (TopicAutocreateSuccess).",
    "TopicAutocreateUnexpectedTopicInResponse": "Counted in TopicAutocreateNoTopicInResponse.",
    "MetadataResponseRead1Success": "Successes are counted per round (GetMetadataSuccess).",
    "MetadataResponseReadSuccess": "Successes are counted per round (GetMetadataSuccess).",
    "SendMetadataRequestSuccess": "Successes are counted per round (GetMetadataSuccess).",
    "SendMetadataRequestUnexpectedEnd": "Counted in ConnectFailOnTryGetMetadata.",
    # Names of Bruce's other releases (a send and a receive thread per broker; an input thread)
    **dict.fromkeys(
        (
            "ConnectorStart",
            "ConnectorStartJoinAll",
            "ConnectorFinishJoinAll",
            "BrokerMsgQueueNotify",
            "BrokerMsgQueueSkipNotify",
            "SenderCheckInputQueue",
            "SenderFinishRun",
            "SenderFinishWaitShutdownAck",
            "SenderHandleResendRequest",
            "SenderStartConnect",
            "SenderStartFastShutdown",
            "SenderStartRun",
            "SenderStartSlowShutdown",
            "SenderStartWaitShutdownAck",
            "ReceiverCheckSendFinishedQueue",
            "ReceiverDoSocketRead",
            "ReceiverFinishRun",
            "ReceiverFinishWaitForConnect",
            "ReceiverFinishWaitShutdownAck",
            "ReceiverStartFastShutdown",
            "ReceiverStartRun",
            "ReceiverStartSlowShutdown",
            "ReceiverStartWaitForConnect",
            "ReceiverStartWaitShutdownAck",
            "ReceiveThreadQueueResendList",
        ),
        _THREADS,
    ),
    **dict.fromkeys(("ReceiveBufCheckSpace", "ReceiveBufGrow", "ReceiveBufMove"), _BUFFER),
    **dict.fromkeys(
        (
            "CombinedTopicsBatchAnyPartition",
            "CombinedTopicsBatchPartitionKey",
            "NoBatchAnyPartition",
            "NoBatchPartitionKey",
            "PerTopicBatchPartitionKey",
        ),
        "Which batcher took a message is not counted.",
    ),
    "ReceiverSocketTimeoutUnknown": _split("ConnectorSocketTimeout"),
    "SenderConnectSuccess": "Per-connection successes are not counted (ConnectedBrokers is a gauge on /metrics).",
    "ReceiverSocketReadSuccess": "Socket reads are not counted.",
    "ReceiveThreadGotOkProduceResponse": "Counted per message instead (AckOk on /metrics).",
    "ReceiveThreadGotErrorProduceResponse": "Counted per message and error code instead (AckError on /metrics).",
    "ReceiveThreadGotDiscardAndPauseAck": "Counted in ConnectorGotDiscardAck and ConnectorGotPauseAck.",
    **dict.fromkeys(
        ("InputThreadProcessOldFormatMsg", "InputThreadProcessOldOldFormatMsg", "InputThreadProcessPartitionKeyMsg"),
        _PER_FORMAT,
    ),
    "MongooseGetVersionRequest": "Requests for a /version page; this daemon has none (the version is on /server_info).",
    "MongooseGetMsgStatsRequest": "Requests for a /msg_stats page; this daemon has none.",
}


def _value(term: str, totals: dict[str, int], labelled: dict[tuple[str, str, str], int]) -> int:
    sign = -1 if term.startswith("-") else 1
    term = term.lstrip("-")
    if "{" not in term:
        return sign * totals.get(term, 0)
    name, label = term[:-1].split("{", 1)
    key, value = label.split("=", 1)
    return sign * labelled.get((name, key, value), 0)


def bruce_counters(counter_sets: Iterable[tuple[str, CounterSet]]) -> list[tuple[str, int]]:
    """Every served name with its value now, in the catalogue's order (never negative)."""
    totals: dict[str, int] = {}
    labelled: dict[tuple[str, str, str], int] = {}
    for _, counters in counter_sets:
        for name, labels, value in counters.items():
            totals[name] = totals.get(name, 0) + value
            for k, v in labels:
                labelled[(name, k, v)] = labelled.get((name, k, v), 0) + value
    return [(name, max(0, sum(_value(t, totals, labelled) for t in e.terms))) for name, e in SERVED.items()]

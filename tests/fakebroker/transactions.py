"""The fake cluster's transaction coordinator (fault injection for transactional producers).

Rules:
- Broker 1 coordinates every transactional id (FindCoordinator, key type 1). InitProducerId with a transactional id
  keeps one producer id per transactional id and raises its epoch at every call, which fences the older producers:
  their AddPartitionsToTxn and EndTxn get PRODUCER_FENCED (90), as Kafka answers. With a producer id and epoch
  (KIP-360) that are not the current ones it answers PRODUCER_FENCED too.
- AddPartitionsToTxn records the partitions of the open transaction; EndTxn records ``(transactional id, committed,
  partitions)`` in :attr:`TxnCoordinator.ended` and closes the transaction. No markers are written (the records stay
  in the log, which tests read back raw).
- Faults scripted for these APIs (``broker.script(api_key, Fault.error(code))``) answer that error instead (for
  AddPartitionsToTxn: for every partition of the request).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bruce.wire.protocol import add_partitions_to_txn as aptt
from bruce.wire.protocol import end_txn, find_coordinator, init_producer_id

PRODUCER_FENCED = 90
KEYS = {find_coordinator.KEY, aptt.KEY, end_txn.KEY}
FIRST_TXN_PRODUCER_ID = 0x5000


@dataclass(slots=True)
class TxnState:
    producer_id: int
    epoch: int = 0
    partitions: set[tuple[str, int]] = field(default_factory=set)


class TxnCoordinator:
    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.ids: dict[str, TxnState] = {}
        self.ended: list[tuple[str, bool, frozenset[tuple[str, int]]]] = []

    def init_producer_id(self, body: Any, fault: Any, seen: Any) -> init_producer_id.InitProducerIdResponse:
        if fault.kind == "error":
            seen.outcome = f"error {fault.code}"
            return init_producer_id.InitProducerIdResponse(error_code=fault.code)
        state = self.ids.get(body.transactional_id)
        if state is None:
            state = self.ids[body.transactional_id] = TxnState(FIRST_TXN_PRODUCER_ID + len(self.ids), -1)
        elif body.producer_id != -1 and (body.producer_id, body.producer_epoch) != (state.producer_id, state.epoch):
            seen.outcome = "fenced"
            return init_producer_id.InitProducerIdResponse(error_code=PRODUCER_FENCED)
        state.epoch += 1
        state.partitions.clear()  # an open transaction of an older epoch is aborted
        seen.outcome = f"producer id {state.producer_id:#x} epoch {state.epoch}"
        return init_producer_id.InitProducerIdResponse(0, state.producer_id, state.epoch)

    def answer(self, api_key: int, body: Any, fault: Any, seen: Any) -> Any:
        error = fault.code if fault.kind == "error" else 0
        if error:
            seen.outcome = f"error {error}"
        if api_key == find_coordinator.KEY:
            node = self.cluster.brokers[1]
            keys = body.coordinator_keys or (body.key,)
            coordinators = tuple(find_coordinator.Coordinator(k, 1, "127.0.0.1", node.port, error) for k in keys)
            if body.coordinator_keys:
                return find_coordinator.FindCoordinatorResponse(coordinators=coordinators)
            return find_coordinator.FindCoordinatorResponse(
                error_code=error, node_id=1, host="127.0.0.1", port=node.port
            )
        state = self.ids.get(body.transactional_id)
        if not error and (state is None or (body.producer_id, body.producer_epoch) != (state.producer_id, state.epoch)):
            error = PRODUCER_FENCED
            seen.outcome = "fenced"
        if api_key == aptt.KEY:
            results = tuple(
                aptt.AddPartitionsToTxnTopicResult(
                    t.name, tuple(aptt.AddPartitionsToTxnPartitionResult(p, error) for p in t.partitions)
                )
                for t in body.topics
            )
            if not error and state is not None:
                state.partitions.update((t.name, p) for t in body.topics for p in t.partitions)
            return aptt.AddPartitionsToTxnResponse(0, results)
        if not error and state is not None:
            self.ended.append((body.transactional_id, body.committed, frozenset(state.partitions)))
            state.partitions.clear()
        return end_txn.EndTxnResponse(0, error)

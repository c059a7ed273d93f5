"""The transactional producer's link to its transaction coordinator: found by FindCoordinator (key type 1, the
transactional id), then one connection for InitProducerId, AddPartitionsToTxn and EndTxn.

Rules:
- FindCoordinator goes to the brokers of the producer's cluster view (the bootstrap servers before the first view),
  each in turn; the coordinator's own connection is kept until it fails or the coordinator moves.
- Retried, with an exponential backoff from ``retry_backoff_ms`` up to 1 s, as librdkafka does: transport failures,
  COORDINATOR_NOT_AVAILABLE and NOT_COORDINATOR (the coordinator is looked up again), COORDINATOR_LOAD_IN_PROGRESS and
  CONCURRENT_TRANSACTIONS (the same coordinator is asked again; the latter while it still writes the markers of the
  previous transaction). Every other answer goes back to the caller, who classifies it.
- Every call is bounded by its deadline (loop time): past it, :class:`CoordinatorTimeout` (retriable: the caller may
  call again), naming the last error seen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from bruce.wire import FIND_COORDINATOR, BruceError, errorcodes
from bruce.wire import find_coordinator as fc

from ..config import ProducerConfig
from ..counters import Counters
from ..errors import TransportError
from ..transport import BrokerConnection, ExponentialBackoff, Timeouts, open_connection

RETRY_BACKOFF_MAX_MS = 1000  # librdkafka's retry.backoff.max.ms
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 14, 15, 16
CONCURRENT_TRANSACTIONS = 51
_FIND_AGAIN = frozenset({COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR})
_ASK_AGAIN = frozenset({COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS})


class CoordinatorTimeout(BruceError):
    """The coordinator did not give a final answer within the deadline (retriable)."""

    reason = "TIMED_OUT"


class CoordinatorLink:
    """Requests to the transaction coordinator of ``transactional_id``; see the module's rules."""

    def __init__(
        self,
        config: ProducerConfig,
        timeouts: Timeouts,
        brokers: Callable[[], list[tuple[str, int]]],
        counters: Counters | None = None,
    ) -> None:
        assert config.transactional_id is not None
        self.key = config.transactional_id
        self.config = config
        self.timeouts = timeouts
        self.brokers = brokers  # where FindCoordinator may go
        self.conn: BrokerConnection | None = None
        self.retries = 0  # requests sent again (transport failures and the retriable errors above)
        self.counters = counters or Counters()

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    async def call(self, build: Callable[[BrokerConnection], tuple[Any, int]], error_of: Callable[[Any], int],
                   deadline: float) -> Any:  # fmt: skip
        """Send ``build(conn)``'s ``(request, version)`` to the coordinator until it gives an answer that is not
        retried here (``error_of(answer)`` is its error code); returns that answer."""
        backoff = ExponentialBackoff(max(self.config.retry_backoff_ms, 1), RETRY_BACKOFF_MAX_MS)
        last = detail = "no answer"
        attempts = 0
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    if attempts:
                        self.retries += 1
                        self.counters.inc("TransactionCoordinatorRetry", labels=(("error", last),))
                        await asyncio.sleep(max(backoff.next_delay(), self.config.retry_backoff_ms) / 1000)
                    attempts += 1
                    conn = self.conn if self.conn is not None and self.conn.alive else await self._find()
                    request, version = build(conn)
                    answer = await conn.request(request, version)
            except TimeoutError:
                what = f"transaction coordinator for {self.key!r}: no final answer ({detail})"
                raise CoordinatorTimeout(what) from None
            except TransportError as e:
                self.close()
                last = str(e.reason)
                detail = str(e)
                continue
            code = error_of(answer)
            if code in _FIND_AGAIN:
                self.close()
            if code not in _FIND_AGAIN and code not in _ASK_AGAIN:
                return answer
            last = detail = errorcodes.lookup(code).name

    async def _find(self) -> BrokerConnection:
        """Connect to the coordinator (FindCoordinator to each known broker in turn)."""
        self.close()
        errors: list[str] = []
        for host, port in self.brokers():
            try:
                conn = await self._open(host, port)
            except TransportError as e:
                errors.append(str(e))
                continue
            try:
                version = conn.versions.version(FIND_COORDINATOR) if conn.versions is not None else 0
                request = fc.find_coordinator_request([self.key], key_type=fc.TRANSACTION, version=version)
                answer = (await conn.request(request, version)).by_key(request).get(self.key)
            except (TransportError, BruceError) as e:
                errors.append(str(e))
                continue
            finally:
                conn.close()
            if answer is None or answer.error_code:
                name = "no answer for the key" if answer is None else errorcodes.lookup(answer.error_code).name
                errors.append(f"{host}:{port} FindCoordinator: {name}")
                continue
            self.conn = await self._open(answer.host, answer.port)
            return self.conn
        raise TransportError("; ".join(errors) or "no broker to ask", reason="COORDINATOR_NOT_AVAILABLE")

    async def _open(self, host: str, port: int) -> BrokerConnection:
        config = self.config
        return await open_connection(
            host, port, config.wire_client_id, self.timeouts, "modern", security=config.security
        )

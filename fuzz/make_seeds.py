"""Write the seed corpora of the wire harnesses (datagram, messageset, produce_response, metadata_response).

Run after changing a format: ``python fuzz/make_seeds.py``. Seeds are small valid inputs of every kind the harness
reads; the fuzzer mutates them.
"""

from __future__ import annotations

from pathlib import Path

from bruce.wire.compression import Codec
from bruce.wire.datagram import build_any_partition, build_old_v0, build_partition_key
from bruce.wire.messageset import build_message_set
from bruce.wire.protocol import metadata as m
from bruce.wire.protocol import produce as p
from bruce.wire.protocol.base import encode_response

CORPUS = Path(__file__).resolve().parent / "corpus"


def datagrams() -> list[bytes]:
    return [
        build_any_partition("topic", b"value", b"key", timestamp=0x123),
        build_any_partition("t", b"", timestamp=0),
        build_partition_key("topic", b"value", partition_key=0x444, timestamp=1),
        build_old_v0("topic", b"body", timestamp=2),
    ]


def message_sets() -> list[bytes]:
    messages = [(b"key", b"value" * 4, 5), (None, b"v", 6), (b"k", None, 7)]
    return [build_message_set(messages, magic=magic, codec=codec) for magic in (0, 1) for codec in list(Codec)[:4]]


def produce_responses() -> list[bytes]:
    partition = p.PartitionProduceResponse(
        1, 6, 0x444, 5, 6, (p.BatchIndexAndErrorMessage(0, "bad"),), "msg", p.LeaderIdAndEpoch(2, 3)
    )
    response = p.ProduceResponse((p.TopicProduceResponse("t", (partition,)),), 1, (p.NodeEndpoint(2, "h", 9092),))
    return [bytes([v]) + encode_response(response, version=v, correlation_id=7)[4:] for v in range(12)]


def metadata_responses() -> list[bytes]:
    partition = m.MetadataResponsePartition(0, 1, 2, (2, 3), (2,), 4, (3,))
    topic = m.MetadataResponseTopic(0, "t", (partition,), bytes(range(16)), False, 5)
    response = m.MetadataResponse((m.MetadataResponseBroker(2, "h", 9092, "r"),), (topic,), 1, "c", 2, 3)
    return [bytes([v]) + encode_response(response, version=v, correlation_id=7)[4:] for v in range(13)]


def main() -> None:
    for name, seeds in [
        ("datagram", datagrams()),
        ("messageset", message_sets()),
        ("produce_response", produce_responses()),
        ("metadata_response", metadata_responses()),
    ]:
        folder = CORPUS / name
        folder.mkdir(parents=True, exist_ok=True)
        for i, seed in enumerate(seeds):
            (folder / f"seed-{i:02d}").write_bytes(seed)


if __name__ == "__main__":
    main()

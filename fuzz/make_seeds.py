"""Write the seed corpora of the wire harnesses: datagram, messageset, recordbatch, columns and response (plog keeps
its own).

Run after changing a format: ``python fuzz/make_seeds.py``. Seeds are small valid inputs of every kind a harness
reads, with every field present; the fuzzer mutates them. The folders are rewritten whole.
"""

from __future__ import annotations

from pathlib import Path

from bruce.wire.compression import Codec
from bruce.wire.crc import crc32c
from bruce.wire.datagram import build_any_partition, build_old_v0, build_partition_key
from bruce.wire.messageset import build_message_set
from bruce.wire.protocol import add_partitions_to_txn as apt
from bruce.wire.protocol import api_versions as av
from bruce.wire.protocol import create_topics as ct
from bruce.wire.protocol import end_txn as et
from bruce.wire.protocol import fetch as f
from bruce.wire.protocol import find_coordinator as fc
from bruce.wire.protocol import init_producer_id as ipi
from bruce.wire.protocol import list_offsets as lo
from bruce.wire.protocol import metadata as m
from bruce.wire.protocol import produce as p
from bruce.wire.protocol.base import REGISTRY, encode_request, encode_response
from bruce.wire.recordbatch import build_record_batch

CORPUS = Path(__file__).resolve().parent / "corpus"
REQUEST_MARKER = 0xFF  # as in fuzz_response.py
RECORDS = [(b"key", b"value" * 4, 5, [("h", b"x")]), (None, b"v", 6, None), (b"k", None, 7, [("n", None)])]


def datagrams() -> list[bytes]:
    return [
        build_any_partition("topic", b"value", b"key", timestamp=0x123),
        build_any_partition("t", b"", timestamp=0),
        build_partition_key("topic", b"value", partition_key=0x444, timestamp=1),
        build_old_v0("topic", b"body", timestamp=2),
    ]


def message_sets() -> list[bytes]:
    messages = [(key, value, ts) for key, value, ts, _ in RECORDS]
    return [build_message_set(messages, magic=magic, codec=codec) for magic in (0, 1) for codec in list(Codec)[:4]]


def record_batches() -> list[bytes]:
    batches = [build_record_batch(RECORDS, codec=codec, base_offset=3) for codec in Codec]
    idempotent = build_record_batch(RECORDS, producer_id=0x444, producer_epoch=3, base_sequence=2**31 - 2)
    return [*batches, idempotent, batches[0] + batches[1]]


def logs() -> list[bytes]:
    """What a Fetch answer's records may hold: each kind of entry alone (record batches of every codec, a
    transaction's marker, message sets of both magics), then all of them back to back."""
    marker = bytearray(build_record_batch([(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x07", 8, None)], base_offset=9))
    marker[22] |= 0x30  # control and transactional attributes (low byte of the int16)
    marker[17:21] = crc32c(bytes(marker[21:])).to_bytes(4, "big")
    entries = [*record_batches()[:-1], bytes(marker), *message_sets()]
    return [*entries, b"".join(entries)]


def _responses() -> dict[int, object]:
    """One response per API with every field of every version set."""
    produce_partition = p.PartitionProduceResponse(
        1, 6, 0x444, 5, 6, (p.BatchIndexAndErrorMessage(0, "bad"),), "msg", p.LeaderIdAndEpoch(2, 3)
    )
    partition = m.MetadataResponsePartition(0, 1, 2, (2, 3), (2,), 4, (3,))
    fetched = f.FetchPartitionResponse(
        0, 0, 9, 8, 1, (f.AbortedTransaction(5, 2),), -1, record_batches()[-1] + message_sets()[1]
    )
    return {
        p.KEY: p.ProduceResponse(
            (p.TopicProduceResponse("t", (produce_partition,)),), 1, (p.NodeEndpoint(2, "h", 9092, "r"),)
        ),
        f.KEY: f.FetchResponse((f.FetchTopicResponse("t", (fetched,)),), 1, 0, 7),
        lo.KEY: lo.ListOffsetsResponse(
            (lo.ListOffsetsTopicResponse("t", (lo.ListOffsetsPartitionResponse(0, 0, (4, 2), 5, 4, 1),)),), 1
        ),
        m.KEY: m.MetadataResponse(
            (m.MetadataResponseBroker(2, "h", 9092, "r"),),
            (m.MetadataResponseTopic(0, "t", (partition,), bytes(range(16)), False, 5),),
            1,
            "c",
            2,
            3,
        ),
        av.KEY: av.ApiVersionsResponse(0, (av.ApiVersionRange(0, 0, 11), av.ApiVersionRange(3, 0, 12)), 1),
        ipi.KEY: ipi.InitProducerIdResponse(0, 0x444, 3, 1, 0x555, 6),
        fc.KEY: fc.FindCoordinatorResponse(1, 15, "m", 2, "h", 9092, (fc.Coordinator("k", 2, "h", 9092, 15, "m"),)),
        apt.KEY: apt.AddPartitionsToTxnResponse(
            1, (apt.AddPartitionsToTxnTopicResult("t", (apt.AddPartitionsToTxnPartitionResult(0, 51),)),)
        ),
        et.KEY: et.EndTxnResponse(1, 90),
        ct.KEY: ct.CreateTopicsResponse(
            (
                ct.CreatableTopicResult(
                    "t", 0, bytes(16), "m", 3, 1, (ct.CreatableTopicConfigResult("k", "v", False, 1, False),)
                ),
            ),
            1,
        ),
    }


def _requests() -> list[object]:
    return [
        p.ProduceRequest((p.TopicProduceData("t", (p.PartitionProduceData(0, record_batches()[0]),)),)),
        m.metadata_request(["t"], version=4),
        f.FetchRequest((f.FetchTopic("t", (f.FetchPartition(0, 5),)),)),
        lo.ListOffsetsRequest((lo.ListOffsetsTopic("t", (lo.ListOffsetsPartition(0, lo.EARLIEST),)),)),
        av.ApiVersionsRequest(),
        ct.CreateTopicsRequest((ct.CreatableTopic("t", 3, 1, configs=(ct.CreatableTopicConfig("k", "v"),)),)),
        ipi.InitProducerIdRequest("tx", 5, 0x444, 3, True, True),
        fc.FindCoordinatorRequest("k", fc.TRANSACTION, ("k", "l")),
        apt.AddPartitionsToTxnRequest("tx", 0x444, 3, (apt.AddPartitionsToTxnTopic("t", (0, 2)),)),
        et.EndTxnRequest("tx", 0x444, 3, True),
    ]


def responses_and_requests() -> list[bytes]:
    """Every response at every version (API key and version bytes first), then requests at their first and last."""
    seeds = []
    for key, body in sorted(_responses().items()):
        for version in REGISTRY[key].versions:
            frame = encode_response(body, version=version, correlation_id=7)[4:]
            seeds.append(bytes([key, version]) + frame)
    for body in _requests():
        spec = next(spec for spec in REGISTRY.values() if spec.request_type is type(body))
        for version in (spec.versions[0], spec.versions[-1]):
            frame = encode_request(body, version=version, correlation_id=7, client_id="c")[4:]
            seeds.append(bytes([REQUEST_MARKER]) + frame)
    return seeds


def main() -> None:
    for name, seeds in [
        ("datagram", datagrams()),
        ("messageset", message_sets()),
        ("recordbatch", record_batches()),
        ("columns", logs()),
        ("response", responses_and_requests()),
    ]:
        folder = CORPUS / name
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
        for i, seed in enumerate(seeds):
            (folder / f"seed-{i:02d}").write_bytes(seed)


if __name__ == "__main__":
    main()

"""Version choice: table tests over real ApiVersions answers (Kafka 0.8 to 4.x, tansu), and the forcing setting."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bruce.wire.errors import UsageError
from bruce.wire.protocol.base import REGISTRY
from bruce.wire.versions import (
    ADD_PARTITIONS_TO_TXN,
    API_VERSIONS,
    CREATE_TOPICS,
    END_TXN,
    FETCH,
    FIND_COORDINATOR,
    INIT_PRODUCER_ID,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
    Generation,
    IncompatibleBroker,
    choose_versions,
    magic_for_produce,
    our_versions,
)

from . import api_versions_answers as answers

OURS = {PRODUCE: range(12), FETCH: range(13), LIST_OFFSETS: range(10), METADATA: range(13), API_VERSIONS: range(5),
        CREATE_TOPICS: range(8), FIND_COORDINATOR: range(7), INIT_PRODUCER_ID: range(7),
        ADD_PARTITIONS_TO_TXN: range(4), END_TXN: range(4)}  # fmt: skip
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
SASL = {SASL_HANDSHAKE: range(2), SASL_AUTHENTICATE: range(3)}

# broker answer -> (Produce, Fetch, ListOffsets, Metadata, ApiVersions, CreateTopics) versions, magic, zstd, negotiated
TABLE = {
    "0.8 (closes the connection)": (answers.KAFKA_0_8, (0, 0, 0, 0, None, None), 0, False, False),
    "0.10.0": (answers.KAFKA_0_10_0, (2, 2, 0, 1, 0, None), 1, False, True),
    "0.11": (answers.KAFKA_0_11, (3, 5, 2, 4, 1, 2), 2, False, True),
    "2.8": (answers.KAFKA_2_8, (9, 12, 6, 11, 3, 7), 2, True, True),
    "3.9": (answers.KAFKA_3_9, (11, 12, 9, 12, 4, 7), 2, True, True),
    "4.0 (advertises Produce v0, rejects v0-v2)": (answers.KAFKA_4_0, (11, 12, 9, 12, 4, 7), 2, True, True),
    "tansu 0.6": (answers.TANSU_0_6, (11, 12, 9, 12, 4, 7), 2, True, True),
}
KEYS = (PRODUCE, FETCH, LIST_OFFSETS, METADATA, API_VERSIONS, CREATE_TOPICS)


@pytest.mark.parametrize("broker", list(TABLE))
def test_choice_per_broker(broker: str) -> None:
    answer, versions, magic, zstd, negotiated = TABLE[broker]
    choice = choose_versions(answer, OURS)
    assert tuple(choice.version(k) if choice.supports(k) else None for k in KEYS) == versions
    assert (choice.magic, choice.zstd, choice.negotiated) == (magic, zstd, negotiated)
    for key in KEYS:  # never a version the broker does not advertise
        if choice.supports(key) and answer is not None:
            low, high = answer[key]
            assert low <= choice.version(key) <= high


# broker answer -> InitProducerId version, idempotent produce possible, client-side epoch bump (KIP-360)
IDEMPOTENCE = {
    "0.8 (closes the connection)": (None, False, False),
    "0.10.0": (None, False, False),
    "0.11": (0, True, False),
    "2.8": (4, True, True),
    "3.9": (5, True, True),
    "4.0 (advertises Produce v0, rejects v0-v2)": (5, True, True),
    "tansu 0.6": (5, True, True),
}


@pytest.mark.parametrize("broker", list(TABLE))
def test_idempotence_per_broker(broker: str) -> None:
    choice = choose_versions(TABLE[broker][0])
    version = choice.version(INIT_PRODUCER_ID) if choice.supports(INIT_PRODUCER_ID) else None
    assert (version, choice.idempotence, choice.epoch_bump) == IDEMPOTENCE[broker]
    assert not choose_versions(TABLE[broker][0], generation="v0").idempotence


def test_idempotence_needs_record_batches_as_well_as_init_producer_id() -> None:
    old_format = choose_versions({PRODUCE: (0, 2), METADATA: (0, 5), INIT_PRODUCER_ID: (0, 4)})
    assert choose_versions({PRODUCE: (0, 2), METADATA: (0, 5), INIT_PRODUCER_ID: (0, 4)}).magic == 1
    assert not old_format.idempotence and not old_format.epoch_bump


def test_our_versions_are_what_the_clients_speak_and_the_registry_decodes() -> None:
    ours = our_versions()
    assert ours == {**OURS, **SASL}
    for key, spoken in ours.items():  # the registry decodes at least these (and later versions of most)
        assert set(spoken) <= set(REGISTRY[key].versions), REGISTRY[key].name
    assert choose_versions(answers.KAFKA_4_0) == choose_versions(answers.KAFKA_4_0, {**OURS, **SASL})


def test_sasl_versions_follow_the_broker() -> None:
    choice = choose_versions(answers.KAFKA_4_0)
    assert (choice.version(SASL_HANDSHAKE), choice.version(SASL_AUTHENTICATE)) == (1, 2)
    assert our_versions()[SASL_HANDSHAKE] == SASL[SASL_HANDSHAKE]


@pytest.mark.parametrize("broker", list(TABLE))
def test_forcing_v0_ignores_the_answer(broker: str) -> None:
    choice = choose_versions(TABLE[broker][0], OURS, generation="v0")
    assert choice == choose_versions(None, OURS)
    assert choice.versions == ((PRODUCE, 0), (FETCH, 0), (LIST_OFFSETS, 0), (METADATA, 0)) and choice.magic == 0


@pytest.mark.parametrize("broker", ["0.11", "2.8", "3.9", "4.0 (advertises Produce v0, rejects v0-v2)", "tansu 0.6"])
def test_forcing_modern_on_a_modern_broker_changes_nothing(broker: str) -> None:
    answer = TABLE[broker][0]
    assert choose_versions(answer, OURS, generation=Generation.MODERN) == choose_versions(answer, OURS)


@pytest.mark.parametrize("answer", [answers.KAFKA_0_8, answers.KAFKA_0_10_0])
def test_forcing_modern_on_an_old_broker_is_refused(answer) -> None:
    with pytest.raises(IncompatibleBroker) as info:
        choose_versions(answer, OURS, generation="modern")
    assert info.value.reason == "INCOMPATIBLE_BROKER"


def test_format_follows_the_maximum_produce_version_not_the_minimum() -> None:
    assert choose_versions({PRODUCE: (0, 12), METADATA: (0, 13)}, OURS).magic == 2
    assert choose_versions({PRODUCE: (3, 3), METADATA: (0, 0)}, OURS).magic == 2
    capped = choose_versions({PRODUCE: (0, 12), METADATA: (0, 13)}, {PRODUCE: range(7), METADATA: range(13)})
    assert (capped.version(PRODUCE), capped.zstd) == (6, False)
    assert [magic_for_produce(v) for v in range(5)] == [0, 0, 1, 2, 2]


@pytest.mark.parametrize(
    "answer",
    [
        {METADATA: (0, 12)},  # no Produce
        {PRODUCE: (0, 11)},  # no Metadata
        {PRODUCE: (12, 13), METADATA: (0, 12)},  # Produce only above ours
        {PRODUCE: (0, 11), METADATA: (13, 14)},
    ],
)
def test_no_common_produce_or_metadata_is_incompatible(answer) -> None:
    with pytest.raises(IncompatibleBroker):
        choose_versions(answer, OURS)


def test_unknown_apis_are_left_out_and_asking_for_them_fails() -> None:
    choice = choose_versions({PRODUCE: (0, 5), METADATA: (0, 5), 999: (0, 3), FETCH: (13, 17)}, OURS)
    assert not choice.supports(999) and not choice.supports(FETCH)
    with pytest.raises(IncompatibleBroker):
        choice.version(FETCH)
    with pytest.raises(UsageError, match="unknown protocol generation 'v1'"):
        choose_versions(answers.KAFKA_2_8, OURS, generation="v1")


def test_kafka_versions_doc_lists_what_the_registry_holds() -> None:
    doc = " ".join((Path(__file__).resolve().parents[2] / "docs" / "kafka-versions.md").read_text().split())
    implemented = re.search(r"The versions bruce's clients speak: (.*?)\. ", doc).group(1)
    flexible = re.search(r"Flexible versions .*? start at (.*?)\. ", doc).group(1)
    spoken = [(REGISTRY[key], versions) for key, versions in our_versions().items()]
    assert dict(re.findall(r"(\w+) v0\u2013v(\d+)", implemented)) == {
        spec.name: str(versions[-1]) for spec, versions in spoken
    }
    assert dict(re.findall(r"(\w+) v(\d+)", flexible)) == {
        spec.name: str(spec.first_flexible) for spec, _ in spoken if spec.first_flexible is not None
    }

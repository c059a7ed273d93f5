"""The Spark data source writes and reads over SSL, SASL_PLAINTEXT and SASL_SSL (``kafka.<librdkafka name>``
options) against tansu behind the proven secured peers; confluent-kafka reads back what Spark wrote."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from security.conftest import peers  # noqa: F401 - the secured peers fixture
from security.peers import confluent_read

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

WAYS = [("SSL", None), ("SASL_PLAINTEXT", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512"), ("SASL_SSL", "PLAIN")]


@pytest.mark.parametrize(("way", "mechanism"), WAYS, ids=[f"{w}-{m}" if m else w for w, m in WAYS])
def test_spark_writes_and_reads_through_the_secured_peer(spark, peers, way: str, mechanism: str | None) -> None:  # noqa: F811
    secured = peers.get(way)
    topic = f"spark-{way}-{mechanism or 'tls'}".lower()
    secured.broker.create_topic(topic, 2)
    options = {f"kafka.{k}": str(v) for k, v in secured.client(mechanism, user="bob").items()}
    df = spark.range(200).select(F.format_string("s-%03d", "id").alias("value"))
    df.write.format("bruce").mode("append").option("bootstrap.servers", secured.bootstrap).option(
        "topic", topic
    ).options(**options).save()
    assert sorted(confluent_read(secured, topic, 200, partitions=2)) == sorted(b"s-%03d" % i for i in range(200))
    read = (
        spark.read.format("bruce")
        .option("bootstrap.servers", secured.bootstrap)
        .option("topic", topic)
        .options(**options)
        .load()
    )
    assert sorted(bytes(r.value) for r in read.select("value").collect()) == sorted(b"s-%03d" % i for i in range(200))


def test_spark_with_a_wrong_password_fails_clearly(spark, peers) -> None:  # noqa: F811
    secured = peers.get("SASL_PLAINTEXT")
    options = {f"kafka.{k}": v for k, v in secured.client("PLAIN", password="wrong-pw-123").items()}
    read = spark.read.format("bruce").option("bootstrap.servers", secured.bootstrap).option("topic", "t")
    with pytest.raises(Exception, match=r"authentication failed: broker .*, PLAIN") as caught:
        read.options(**options).load().collect()
    assert "wrong-pw-123" not in str(caught.value)
    df = spark.range(3).select(F.col("id").cast("string").alias("value"))
    write = df.write.format("bruce").mode("append").option("bootstrap.servers", secured.bootstrap).option("topic", "t")
    with pytest.raises(Exception, match=r"AUTHENTICATION_FAILED \(authentication failed: broker .*, PLAIN") as caught:
        write.options(**options).save()
    assert "wrong-pw-123" not in str(caught.value)

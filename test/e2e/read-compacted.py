"""Reads one partition from the beginning to its end with confluent-kafka (librdkafka) and
prints one JSON line per record: [offset, key, value] (value null for a tombstone)."""
import json
import sys

from confluent_kafka import Consumer, KafkaError, TopicPartition

bootstrap, topic = sys.argv[1], sys.argv[2]
consumer = Consumer({
    "bootstrap.servers": bootstrap,
    "group.id": "read-compacted",
    "enable.auto.commit": False,
    "enable.partition.eof": True,
    "auto.offset.reset": "earliest",
})
consumer.assign([TopicPartition(topic, 0, 0)])
while True:
    message = consumer.poll(10.0)
    if message is None:
        sys.exit("no record and no end of partition within 10 s")
    if message.error():
        if message.error().code() == KafkaError._PARTITION_EOF:
            break
        sys.exit(f"consume error: {message.error()}")
    key = message.key().decode() if message.key() is not None else None
    value = message.value().decode() if message.value() is not None else None
    print(json.dumps([message.offset(), key, value]))
consumer.close()

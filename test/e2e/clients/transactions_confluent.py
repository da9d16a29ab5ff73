"""Transactions with confluent-kafka (librdkafka), run by test/e2e/transactions-clients.test.ts.

A transactional producer commits, aborts and commits again; then read_committed and
read_uncommitted consumers read the topic from the start. Prints one JSON line:
{"committed": [...values...], "uncommitted": [...values...]}.
"""
import json
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

bootstrap, topic = sys.argv[1], sys.argv[2]

producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "confluent-tx"})
producer.init_transactions(30)
for values, commit in ((["c1", "c2"], True), (["a1", "a2"], False), (["c3"], True)):
    producer.begin_transaction()
    for i, value in enumerate(values):
        producer.produce(topic, value=value.encode(), partition=i % 2)
    producer.flush(30)
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)


def read_all(isolation):
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"confluent-{isolation}",
        "isolation.level": isolation, "enable.auto.commit": False,
    })
    consumer.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
    values, idle_since = [], time.time()
    while time.time() - idle_since < 3:
        message = consumer.poll(0.2)
        if message is None or message.error() is not None:
            continue
        values.append(message.value().decode())
        idle_since = time.time()
    consumer.close()
    return sorted(values)


print(json.dumps({"committed": read_all("read_committed"),
                  "uncommitted": read_all("read_uncommitted")}))

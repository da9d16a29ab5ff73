"""confluent-kafka's admin API asking for authorized operations, and a consumer's close followed
by DeleteGroups. Prints one JSON object; the test (authorized-operations.test.ts) checks it.

usage: authorized-operations.py BOOTSTRAP TOPIC GROUP
"""
import json
import sys

from confluent_kafka import Consumer, TopicCollection
from confluent_kafka.admin import AdminClient

bootstrap, topic, group = sys.argv[1:4]
TIMEOUT_S = 20


def names(operations):
    return None if operations is None else sorted(op.name for op in operations)


admin = AdminClient({"bootstrap.servers": bootstrap})
out = {}

consumer = Consumer({
    "bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
    "enable.auto.commit": False, "session.timeout.ms": 10000,
})
consumer.subscribe([topic])
message = None
for _ in range(100):
    message = consumer.poll(0.2)
    if message is not None and message.error() is None:
        break
out["consumed"] = message is not None and message.error() is None
consumer.commit(message=message, asynchronous=False)

for asked in (True, False):
    key = "asked" if asked else "not_asked"
    cluster = admin.describe_cluster(include_authorized_operations=asked,
                                     request_timeout=TIMEOUT_S).result()
    topics = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=asked,
                                   request_timeout=TIMEOUT_S)
    groups = admin.describe_consumer_groups([group], include_authorized_operations=asked,
                                            request_timeout=TIMEOUT_S)
    described_group = groups[group].result()
    out[key] = {
        "cluster": names(cluster.authorized_operations),
        "topic": names(topics[topic].result().authorized_operations),
        "group": names(described_group.authorized_operations),
        "group_state": described_group.state.name,
    }

# An admin tool deleting the group right after the consumer's close.
consumer.close()
deleted = admin.delete_consumer_groups([group], request_timeout=TIMEOUT_S)
try:
    deleted[group].result()
    out["deleted_after_close"] = "ok"
except Exception as error:  # the KafkaException carries the broker's error name
    out["deleted_after_close"] = str(error)
print(json.dumps(out))

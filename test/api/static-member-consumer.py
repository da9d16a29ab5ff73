"""A librdkafka consumer with a static group.instance.id (KIP-345) for the static membership
test: prints "assigned P,P", "revoked P,P" and "record P O" lines as they happen."""
import sys

from confluent_kafka import Consumer

bootstrap, group, instance, topic = sys.argv[1:5]
consumer = Consumer({
    "bootstrap.servers": bootstrap,
    "group.id": group,
    "group.instance.id": instance,
    "session.timeout.ms": 10000,
    "heartbeat.interval.ms": 300,
    "auto.offset.reset": "earliest",
    "enable.auto.commit": False,
})


def partitions(parts):
    return ",".join(str(p.partition) for p in sorted(parts, key=lambda p: p.partition))


def on_assign(_consumer, parts):
    print("assigned " + partitions(parts), flush=True)


def on_revoke(_consumer, parts):
    print("revoked " + partitions(parts), flush=True)


consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
while True:
    message = consumer.poll(0.2)
    if message is None:
        continue
    if message.error():
        print("error " + str(message.error()), flush=True)
        continue
    print("record %d %d" % (message.partition(), message.offset()), flush=True)

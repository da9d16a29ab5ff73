"""confluent-kafka (librdkafka) over SASL PLAIN against an ACL-protected Quill broker.

Usage: acls-confluent.py BOOTSTRAP USER PASSWORD TOPIC GROUP
Prints one JSON object: the topics Metadata shows, the error (or null) of creating a topic,
of producing three records and of consuming them in a group, and how many were consumed.
"""
import json
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap, user, password, topic, group = sys.argv[1:6]
auth = {
    "bootstrap.servers": bootstrap,
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanisms": "PLAIN",
    "sasl.username": user,
    "sasl.password": password,
}
out = {}

admin = AdminClient(auth)
out["topics"] = sorted(t for t in admin.list_topics(timeout=10).topics)
try:
    admin.create_topics([NewTopic(f"{user}-new", 1, 1)])[f"{user}-new"].result(10)
    out["create_error"] = None
except KafkaException as e:
    out["create_error"] = e.args[0].name()

errors = []
producer = Producer({**auth, "message.timeout.ms": 5000})
for i in range(3):
    producer.produce(topic, value=f"v{i}".encode(), on_delivery=lambda err, _m: errors.append(err))
producer.flush(15)
failed = [e.name() for e in errors if e is not None]
out["produce_error"] = failed[0] if failed else None

consumer = Consumer({**auth, "group.id": group, "auto.offset.reset": "earliest"})
consumer.subscribe([topic])
consumed, consume_error = 0, None
deadline = time.time() + 20
while time.time() < deadline and consumed < 3 and consume_error is None:
    msg = consumer.poll(0.5)
    if msg is None:
        continue
    if msg.error():
        consume_error = msg.error().name()
    else:
        consumed += 1
consumer.close()
out["consumed"] = consumed
out["consume_error"] = consume_error
print(json.dumps(out))

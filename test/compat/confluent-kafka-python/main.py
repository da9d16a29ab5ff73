"""The compatibility scenario with confluent-kafka (librdkafka), as an ordinary user writes it:
AdminClient for topics, groups and offsets, a Producer per codec, Consumers polled in a loop."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))

import confluent_kafka  # noqa: E402
from confluent_kafka import Consumer, ConsumerGroupState, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec  # noqa: E402

from scenario import (  # noqa: E402
    BOOTSTRAP,
    CONSUME_TIMEOUT_S,
    GROUP,
    PARTITION_COUNT,
    RECORDS_PER_CODEC,
    RESTART_TIMEOUT_S,
    SENTINEL_COUNT,
    TOPIC,
    Consumed,
    StepRunner,
    check,
    check_assignments,
    decode,
    is_sentinel,
    records_for,
    verify_consumed,
    wait_for,
)

# Errors librdkafka reports through error_cb, so a wait that times out can say why.
client_errors = []


def on_error(error):
    client_errors.append(str(error))


def last_error():
    return f"; last client error: {client_errors[-1]}" if client_errors else ""


class Member:
    def __init__(self, index):
        self.index = index
        self.records = []
        self.assigned = False
        self.consumer = Consumer(
            {
                "bootstrap.servers": BOOTSTRAP,
                "group.id": GROUP,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "error_cb": on_error,
            }
        )
        self.consumer.subscribe([TOPIC], on_assign=self.on_assign)

    def on_assign(self, consumer, partitions):
        self.assigned = True

    def poll(self):
        # A batch per call: the two members share this thread, so one message per poll would
        # leave each waiting out the other's timeout between records.
        for message in self.consumer.consume(num_messages=1000, timeout=0.05):
            if message.error():
                client_errors.append(str(message.error()))
                continue
            headers = [(name, decode(value)) for name, value in (message.headers() or [])]
            self.records.append(
                Consumed(
                    self.index,
                    message.partition(),
                    decode(message.key()),
                    decode(message.value()),
                    headers,
                )
            )


def poll_until(members, what, timeout_s, done):
    def probe():
        for member in members:
            member.poll()
        return done()

    try:
        wait_for(what, timeout_s, probe, step_s=0)
    except TimeoutError as error:
        received = sum(len(member.records) for member in members)
        raise TimeoutError(f"{error} ({received} records received){last_error()}") from None


def poll_for(members, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for member in members:
            member.poll()


def produce(codec):
    producer = Producer(
        {"bootstrap.servers": BOOTSTRAP, "compression.type": codec, "error_cb": on_error}
    )
    failures = []

    def on_delivery(error, message):
        if error is not None:
            failures.append(str(error))

    for _, key, value, headers in records_for(codec):
        while True:
            try:
                producer.produce(
                    TOPIC, key=key, value=value, headers=headers, on_delivery=on_delivery
                )
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(60)
    check(remaining == 0, f"{remaining} records not delivered after 60 s{last_error()}")
    check(not failures, f"{len(failures)} records failed: {failures[0] if failures else ''}")
    return f"{RECORDS_PER_CODEC} records"


def main():
    steps = StepRunner(
        "confluent-kafka-python",
        f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})",
    )
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP, "error_cb": on_error})
    state = {"produced": 0, "members": []}

    def create_topic():
        futures = admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITION_COUNT)])
        futures[TOPIC].result(30)
        topic = admin.list_topics(TOPIC, timeout=10).topics[TOPIC]
        check(
            len(topic.partitions) == PARTITION_COUNT,
            f"topic has {len(topic.partitions)} partitions",
        )

    def produce_codec(codec):
        def body():
            detail = produce(codec)
            state["produced"] += RECORDS_PER_CODEC
            return detail

        return body

    def consume_group():
        members = state["members"] = [Member(0), Member(1)]
        poll_until(
            members,
            "both members to be assigned",
            RESTART_TIMEOUT_S,
            lambda: all(m.assigned for m in members),
        )
        expected = 2 * RECORDS_PER_CODEC
        poll_until(
            members,
            f"{expected} records",
            CONSUME_TIMEOUT_S,
            lambda: sum(len(m.records) for m in members) >= expected,
        )
        poll_for(members, 0.5)  # Anything delivered twice arrives now, and the check sees it.
        problems = verify_consumed([r for m in members for r in m.records], ["gzip", "zstd"])
        check(not problems, "; ".join(problems))
        return ", ".join(f"member {m.index}: {len(m.records)}" for m in members)

    def commit():
        for member in state["members"]:
            member.consumer.commit(asynchronous=False)
        probe = state["members"][0].consumer
        partitions = [TopicPartition(TOPIC, p) for p in range(PARTITION_COUNT)]
        for committed in probe.committed(partitions, timeout=10):
            _, high = probe.get_watermark_offsets(committed, timeout=10)
            check(
                committed.offset == high,
                f"partition {committed.partition}: committed {committed.offset}, end {high}",
            )

    def restart():
        members = state["members"] = [Member(0), Member(1)]
        poll_until(
            members,
            "both members to be assigned",
            RESTART_TIMEOUT_S,
            lambda: all(m.assigned for m in members),
        )
        producer = Producer({"bootstrap.servers": BOOTSTRAP, "error_cb": on_error})
        for partition in range(SENTINEL_COUNT):
            producer.produce(
                TOPIC, key=f"sentinel-{partition}", value="sentinel", partition=partition
            )
        check(producer.flush(30) == 0, "sentinels not delivered")
        state["produced"] += SENTINEL_COUNT
        everything = lambda: [r for m in members for r in m.records]  # noqa: E731
        poll_until(
            members,
            "the sentinels",
            RESTART_TIMEOUT_S,
            lambda: sum(1 for r in everything() if is_sentinel(r)) >= SENTINEL_COUNT,
        )
        again = [r for r in everything() if not is_sentinel(r)]
        check(not again, f"{len(again)} records delivered again after the restart")

    def describe_group():
        # The members must keep polling or the group would rebalance under the description.
        for member in state["members"]:
            member.poll()
        group = admin.describe_consumer_groups([GROUP])[GROUP].result(30)
        check(group.state == ConsumerGroupState.STABLE, f"group state {group.state}")
        check(len(group.members) == 2, f"{len(group.members)} members")
        listed = admin.list_consumer_groups().result(30)
        check(
            any(g.group_id == GROUP for g in listed.valid),
            "list_consumer_groups does not show the group",
        )
        assigned = check_assignments(
            [
                [tp.partition for tp in member.assignment.topic_partitions if tp.topic == TOPIC]
                for member in group.members
            ]
        )
        return f"{group.state.name}, {group.partition_assignor}, partitions {assigned}"

    def list_offsets():
        partitions = [TopicPartition(TOPIC, p) for p in range(PARTITION_COUNT)]
        earliest = admin.list_offsets({tp: OffsetSpec.earliest() for tp in partitions})
        latest = admin.list_offsets({tp: OffsetSpec.latest() for tp in partitions})
        lows = [earliest[tp].result(30).offset for tp in earliest]
        highs = [latest[tp].result(30).offset for tp in latest]
        check(lows == [0] * PARTITION_COUNT, f"earliest {lows}")
        check(
            sum(highs) == state["produced"],
            f"latest offsets add up to {sum(highs)}, produced {state['produced']}",
        )
        return f"earliest 0, latest {'/'.join(map(str, highs))}"

    def delete_topic():
        admin.delete_topics([TOPIC])[TOPIC].result(30)
        wait_for("the topic to go", 10, lambda: TOPIC not in admin.list_topics(timeout=5).topics)

    steps.run("create-topic", create_topic)
    steps.run("produce-gzip", produce_codec("gzip"))
    steps.run("produce-zstd", produce_codec("zstd"))
    steps.run("consume-group", consume_group)
    steps.run("commit", commit)
    close_members(state["members"])
    steps.run("restart-no-redelivery", restart)
    steps.run("describe-group", describe_group)
    close_members(state["members"])
    steps.run("list-offsets", list_offsets)
    steps.run("delete-topic", delete_topic)


def close_members(members):
    for member in members:
        try:
            member.consumer.close()
        except Exception as error:  # The steps already say what broke; closing must not hide it.
            print(f"close: {error}", file=sys.stderr)
    members.clear()


if __name__ == "__main__":
    main()

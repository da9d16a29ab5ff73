"""The compatibility scenario with confluent-kafka (librdkafka), as an ordinary user writes it:
AdminClient for topics, groups and offsets, a Producer per codec, Consumers polled in a loop."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))

import confluent_kafka  # noqa: E402
from confluent_kafka import (  # noqa: E402
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupState,
    KafkaError,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec  # noqa: E402

from scenario import (  # noqa: E402
    BOOTSTRAP,
    CONSUME_TIMEOUT_S,
    GROUP,
    PARTITION_COUNT,
    RECORDS_PER_CODEC,
    RESTART_TIMEOUT_S,
    SECURITY_PROTOCOL,
    SENTINEL_COUNT,
    TOPIC,
    TXN_END_OFFSET,
    TXN_GROUP,
    TXN_INPUT_END,
    TXN_RECORDS,
    TXN_TOPIC,
    TXN_WAIT_S,
    Consumed,
    StepRunner,
    check,
    check_assignments,
    check_seen,
    decode,
    is_sentinel,
    records_for,
    txn_values,
    verify_consumed,
    wait_for,
)

# Errors librdkafka reports through error_cb, so a wait that times out can say why.
client_errors = []


def on_error(error):
    client_errors.append(str(error))


def last_error():
    return f"; last client error: {client_errors[-1]}" if client_errors else ""


def connection(password=None):
    """The bootstrap servers and security settings every client starts from (see scenario.ts):
    without SECURITY_PROTOCOL plaintext, else SASL over TLS trusting SSL_CA_LOCATION."""
    config = {"bootstrap.servers": BOOTSTRAP}
    if SECURITY_PROTOCOL:
        config.update(
            {
                "security.protocol": SECURITY_PROTOCOL,
                "sasl.mechanisms": os.environ["SASL_MECHANISM"],
                "sasl.username": os.environ["SASL_USERNAME"],
                "sasl.password": password or os.environ["SASL_PASSWORD"],
                "ssl.ca.location": os.environ["SSL_CA_LOCATION"],
            }
        )
    return config


def wrong_password():
    """librdkafka reports a failed authentication through error_cb as _AUTHENTICATION, with the
    broker's message, and keeps retrying; a request meanwhile times out."""
    failures = []
    wrong = connection("not-" + os.environ["SASL_PASSWORD"])
    admin = AdminClient({**wrong, "error_cb": failures.append})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = [e for e in failures if e.code() == KafkaError._AUTHENTICATION]
        if found:
            return found[0].str()
        admin.poll(0.1)
    raise AssertionError(f"no authentication error within 30 s: {[str(e) for e in failures]}")


class Member:
    def __init__(self, index):
        self.index = index
        self.records = []
        self.assigned = False
        self.consumer = Consumer(
            {
                **connection(),
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
        {**connection(), "compression.type": codec, "error_cb": on_error}
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


class Transactions:
    """The transactions steps (see scenario.ts): an aborted and a committed transaction, a
    read_committed reader in TXN_GROUP (assigned, never committing), then consume-transform-produce
    with send_offsets_to_transaction and the reader's group metadata."""

    def __init__(self, admin):
        self.admin = admin
        self.reader = None
        self.read = []

    def producer(self, name):
        producer = Producer(
            {
                **connection(),
                "transactional.id": f"{TOPIC}-{name}",
                "error_cb": on_error,
            }
        )
        producer.init_transactions(30)
        return producer

    def transactions(self):
        self.admin.create_topics([NewTopic(TXN_TOPIC, num_partitions=1)])[TXN_TOPIC].result(30)
        producer = self.producer("txn")
        for prefix in ("aborted", "committed"):
            producer.begin_transaction()
            for value in txn_values(prefix):
                producer.produce(TXN_TOPIC, value=value, partition=0)
            # abort_transaction purges what is still unsent; the aborted records must reach the log.
            check(producer.flush(30) == 0, f"{prefix} records not delivered{last_error()}")
            if prefix == "aborted":
                producer.abort_transaction(30)
            else:
                producer.commit_transaction(30)
        self.reader = Consumer(
            {
                **connection(),
                "group.id": TXN_GROUP,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "error_cb": on_error,
            }
        )
        self.reader.assign([TopicPartition(TXN_TOPIC, 0, OFFSET_BEGINNING)])
        self.read_until(TXN_RECORDS)
        check_seen("after commit and abort", self.values(), txn_values("committed"))
        partition = TopicPartition(TXN_TOPIC, 0)
        _, end = self.reader.get_watermark_offsets(partition, timeout=10, cached=False)
        check(end == TXN_END_OFFSET, f"end offset {end}, not {TXN_END_OFFSET}")
        return f"{TXN_RECORDS} committed seen, {TXN_RECORDS} aborted not, end offset {end}"

    def consume_transform_produce(self):
        check(self.reader is not None, "no reader from the transactions step")
        inputs = list(self.read)
        producer = self.producer("ctp")
        producer.begin_transaction()
        for message in inputs:
            producer.produce(TXN_TOPIC, value=f"out {decode(message.value())}", partition=0)
        offsets = [TopicPartition(TXN_TOPIC, 0, inputs[-1].offset() + 1)]
        metadata = self.reader.consumer_group_metadata()
        producer.send_offsets_to_transaction(offsets, metadata, 30)
        producer.commit_transaction(30)
        self.read_until(2 * TXN_RECORDS)
        expected = txn_values("committed") + txn_values("out committed")
        check_seen("the reader", self.values(), expected)
        committed = self.reader.committed([TopicPartition(TXN_TOPIC, 0)], timeout=10)[0].offset
        check(committed == TXN_INPUT_END, f"group offset {committed}, not {TXN_INPUT_END}")
        return f"{TXN_RECORDS} transformed, group offset {committed}"

    def values(self):
        return [decode(message.value()) for message in self.read]

    def read_until(self, count):
        """Polls until `count` records, then once more so a record delivered late shows."""
        deadline = time.monotonic() + TXN_WAIT_S
        while len(self.read) < count and time.monotonic() < deadline:
            self.read += [m for m in self.reader.consume(100, timeout=0.1) if not m.error()]
        self.read += [m for m in self.reader.consume(100, timeout=0.2) if not m.error()]

    def close(self):
        if self.reader is not None:
            self.reader.close()


def main():
    steps = StepRunner(
        "confluent-kafka-python",
        f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})",
    )
    admin = AdminClient({**connection(), "error_cb": on_error})
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
        producer = Producer({**connection(), "error_cb": on_error})
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

    if SECURITY_PROTOCOL:
        steps.run("wrong-password", wrong_password)
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
    transactions = Transactions(admin)
    steps.run("transactions", transactions.transactions)
    steps.run("consume-transform-produce", transactions.consume_transform_produce)
    transactions.close()
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

"""The compatibility scenario with kafka-python (pure Python), as an ordinary user writes it:
KafkaAdminClient for topics and groups, a KafkaProducer per codec with default settings,
KafkaConsumers polled in a loop."""

import logging
import os
import queue
import sys
import threading
import time
from concurrent.futures import Future

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))

import kafka  # noqa: E402
from kafka import (  # noqa: E402
    KafkaAdminClient,
    KafkaConsumer,
    KafkaProducer,
    OffsetAndMetadata,
    TopicPartition,
)
from kafka.admin import NewTopic  # noqa: E402
from kafka.errors import KafkaTimeoutError, SaslAuthenticationFailedError  # noqa: E402

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

PARTITIONS = [TopicPartition(TOPIC, p) for p in range(PARTITION_COUNT)]


def connection(password=None):
    """The bootstrap servers and security settings every client starts from (see scenario.ts):
    without SECURITY_PROTOCOL plaintext, else SASL over TLS trusting SSL_CA_LOCATION."""
    config = {"bootstrap_servers": BOOTSTRAP}
    if SECURITY_PROTOCOL:
        config.update(
            security_protocol=SECURITY_PROTOCOL,
            sasl_mechanism=os.environ["SASL_MECHANISM"],
            sasl_plain_username=os.environ["SASL_USERNAME"],
            sasl_plain_password=password or os.environ["SASL_PASSWORD"],
            ssl_cafile=os.environ["SSL_CA_LOCATION"],
        )
    return config


def wrong_password():
    """kafka-python 3.0 retries a failed bootstrap until bootstrap_timeout_ms and then raises
    KafkaTimeoutError; the authentication failure itself is what it logs for each attempt (a
    SaslAuthenticationFailedError with the broker's message). Both must be seen."""
    failures = []

    class Failures(logging.Handler):
        def emit(self, record):
            for arg in record.args if isinstance(record.args, tuple) else ():
                if isinstance(arg, SaslAuthenticationFailedError):
                    failures.append(f"{type(arg).__name__}: {arg}")

    handler = Failures()
    logging.getLogger("kafka").addHandler(handler)
    wrong = connection("not-" + os.environ["SASL_PASSWORD"])
    try:
        KafkaAdminClient(**wrong, bootstrap_timeout_ms=3000).close()
    except KafkaTimeoutError:
        check(failures, "the bootstrap timed out without a SaslAuthenticationFailedError")
        return failures[0]
    finally:
        logging.getLogger("kafka").removeHandler(handler)
    raise AssertionError("an admin client with a wrong password connected")


class Member:
    """One group member: a KafkaConsumer polling in its own thread, as kafka-python expects (a
    consumer is not thread-safe, so commits and close run on that thread too)."""

    def __init__(self, index):
        self.index = index
        self.records = []
        self.calls = queue.Queue()
        self.error = None
        self.stopping = False
        self.consumer = KafkaConsumer(
            TOPIC,
            **connection(),
            group_id=GROUP,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        self.thread = threading.Thread(target=self.loop, name=f"member-{index}", daemon=True)
        self.thread.start()

    def loop(self):
        try:
            while not self.stopping:
                self.poll()
                while not self.calls.empty():
                    call, result = self.calls.get()
                    try:
                        result.set_result(call(self.consumer))
                    except Exception as error:  # Handed to the caller through the future.
                        result.set_exception(error)
        except Exception as error:  # The waits report it as the member's failure.
            self.error = error
        finally:
            self.consumer.close()

    def poll(self):
        for partition, batch in self.consumer.poll(timeout_ms=100).items():
            for message in batch:
                headers = [(name, decode(value)) for name, value in message.headers]
                self.records.append(
                    Consumed(
                        self.index,
                        partition.partition,
                        decode(message.key),
                        decode(message.value),
                        headers,
                    )
                )

    def call(self, function, timeout_s=60):
        """Runs function(consumer) on the member's thread and returns its result."""
        result = Future()
        self.calls.put((function, result))
        return result.result(timeout_s)

    def assigned(self):
        return self.call(lambda consumer: len(consumer.assignment()) > 0)

    def close(self):
        self.stopping = True
        self.thread.join(60)


def wait_members(members, what, timeout_s, done):
    def probe():
        failed = next((m for m in members if m.error is not None), None)
        if failed:
            raise RuntimeError(
                f"member {failed.index} failed: {type(failed.error).__name__}: {failed.error}"
            )
        return done()

    try:
        wait_for(what, timeout_s, probe)
    except TimeoutError as error:
        received = sum(len(member.records) for member in members)
        raise TimeoutError(f"{error} ({received} records received)") from None


def produce(codec):
    producer = KafkaProducer(**connection(), compression_type=codec)
    futures = [
        producer.send(
            TOPIC,
            key=key.encode(),
            value=value.encode(),
            headers=[(name, text.encode()) for name, text in headers],
        )
        for _, key, value, headers in records_for(codec)
    ]
    producer.flush(60)
    failures = [future.exception for future in futures if future.failed()]
    check(all(future.is_done for future in futures), "records not delivered after 60 s")
    check(not failures, f"{len(failures)} records failed: {failures[0] if failures else ''}")
    producer.close()
    return f"{RECORDS_PER_CODEC} records"


class Transactions:
    """The transactions steps (see scenario.ts): an aborted and a committed transaction, a
    read_committed reader in TXN_GROUP (assigned, never committing), then consume-transform-produce
    with send_offsets_to_transaction and the reader's group metadata."""

    def __init__(self, admin):
        self.admin = admin
        self.partition = TopicPartition(TXN_TOPIC, 0)
        self.reader = None
        self.read = []

    @staticmethod
    def producer(name):
        producer = KafkaProducer(**connection(), transactional_id=f"{TOPIC}-{name}")
        producer.init_transactions()
        return producer

    def transactions(self):
        self.admin.create_topics([NewTopic(TXN_TOPIC, num_partitions=1)])
        producer = self.producer("txn")
        for prefix in ("aborted", "committed"):
            producer.begin_transaction()
            for value in txn_values(prefix):
                producer.send(TXN_TOPIC, value=value.encode(), partition=0)
            # The aborted records must reach the log before the abort.
            producer.flush(30)
            if prefix == "aborted":
                producer.abort_transaction()
            else:
                producer.commit_transaction()
        producer.close()
        self.reader = KafkaConsumer(
            **connection(),
            group_id=TXN_GROUP,
            isolation_level="read_committed",
            enable_auto_commit=False,
        )
        self.reader.assign([self.partition])
        self.reader.seek_to_beginning(self.partition)
        self.read_until(TXN_RECORDS)
        check_seen("after commit and abort", self.values(), txn_values("committed"))
        end = self.reader.end_offsets([self.partition])[self.partition]
        check(end == TXN_END_OFFSET, f"end offset {end}, not {TXN_END_OFFSET}")
        return f"{TXN_RECORDS} committed seen, {TXN_RECORDS} aborted not, end offset {end}"

    def consume_transform_produce(self):
        check(self.reader is not None, "no reader from the transactions step")
        inputs = list(self.read)
        producer = self.producer("ctp")
        producer.begin_transaction()
        for record in inputs:
            producer.send(TXN_TOPIC, value=f"out {decode(record.value)}".encode(), partition=0)
        offsets = {self.partition: OffsetAndMetadata(inputs[-1].offset + 1, "", -1)}
        producer.send_offsets_to_transaction(offsets, self.reader.group_metadata())
        producer.commit_transaction()
        producer.close()
        self.read_until(2 * TXN_RECORDS)
        expected = txn_values("committed") + txn_values("out committed")
        check_seen("the reader", self.values(), expected)
        committed = self.reader.committed(self.partition)
        check(committed == TXN_INPUT_END, f"group offset {committed}, not {TXN_INPUT_END}")
        return f"{TXN_RECORDS} transformed, group offset {committed}"

    def values(self):
        return [decode(record.value) for record in self.read]

    def read_until(self, count):
        """Polls until `count` records, then once more so a record delivered late shows."""
        deadline = time.monotonic() + TXN_WAIT_S
        while len(self.read) < count and time.monotonic() < deadline:
            for records in self.reader.poll(timeout_ms=100).values():
                self.read += records
        for records in self.reader.poll(timeout_ms=200).values():
            self.read += records

    def close(self):
        if self.reader is not None:
            self.reader.close()


def main():
    steps = StepRunner("kafka-python", kafka.__version__)
    admin = KafkaAdminClient(**connection())
    state = {"produced": 0, "members": []}

    def create_topic():
        admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITION_COUNT)])
        # On a cluster the other brokers learn of the topic a moment after CreateTopics is
        # answered (as in Kafka), so the topic is described until its partitions show.
        def partitions():
            try:
                return len(admin.describe_topics([TOPIC])[0]["partitions"])
            except Exception:  # An unknown topic may be an error rather than no partitions.
                return 0

        try:
            wait_for("the topic's partitions", 15, lambda: partitions() == PARTITION_COUNT, 0.1)
        except TimeoutError:
            check(False, f"topic has {partitions()} partitions")

    def produce_codec(codec):
        def body():
            detail = produce(codec)
            state["produced"] += RECORDS_PER_CODEC
            return detail

        return body

    def consume_group():
        members = state["members"] = [Member(0), Member(1)]
        wait_members(
            members,
            "both members to be assigned",
            RESTART_TIMEOUT_S,
            lambda: all(m.assigned() for m in members),
        )
        expected = 2 * RECORDS_PER_CODEC
        wait_members(
            members,
            f"{expected} records",
            CONSUME_TIMEOUT_S,
            lambda: sum(len(m.records) for m in members) >= expected,
        )
        time.sleep(0.5)  # Anything delivered twice arrives now, and the check sees it.
        problems = verify_consumed([r for m in members for r in m.records], ["gzip", "zstd"])
        check(not problems, "; ".join(problems))
        return ", ".join(f"member {m.index}: {len(m.records)}" for m in members)

    def commit():
        for member in state["members"]:
            member.call(lambda consumer: consumer.commit())
        probe = state["members"][0]
        ends = probe.call(lambda consumer: consumer.end_offsets(PARTITIONS))
        for partition in PARTITIONS:
            committed = probe.call(lambda consumer: consumer.committed(partition))
            check(
                committed == ends[partition],
                f"partition {partition.partition}: committed {committed}, end {ends[partition]}",
            )

    def restart():
        members = state["members"] = [Member(0), Member(1)]
        wait_members(
            members,
            "both members to be assigned",
            RESTART_TIMEOUT_S,
            lambda: all(m.assigned() for m in members),
        )
        producer = KafkaProducer(**connection())
        for partition in range(SENTINEL_COUNT):
            producer.send(
                TOPIC, key=f"sentinel-{partition}".encode(), value=b"sentinel", partition=partition
            )
        producer.flush(30)
        producer.close()
        state["produced"] += SENTINEL_COUNT
        everything = lambda: [r for m in members for r in m.records]  # noqa: E731
        wait_members(
            members,
            "the sentinels",
            RESTART_TIMEOUT_S,
            lambda: sum(1 for r in everything() if is_sentinel(r)) >= SENTINEL_COUNT,
        )
        again = [r for r in everything() if not is_sentinel(r)]
        check(not again, f"{len(again)} records delivered again after the restart")

    def describe_group():
        group = admin.describe_groups([GROUP])[GROUP]
        check(group["group_state"] == "Stable", f"group state {group['group_state']}")
        check(len(group["members"]) == 2, f"{len(group['members'])} members")
        check(group["protocol_type"] == "consumer", f"protocol type {group['protocol_type']}")
        listed = admin.list_groups()
        check(any(g["group_id"] == GROUP for g in listed), "list_groups does not show the group")
        assigned = check_assignments(
            [
                [
                    p
                    for t in m["member_assignment"]["assigned_partitions"]
                    if t["topic"] == TOPIC
                    for p in t["partitions"]
                ]
                for m in group["members"]
            ]
        )
        return f"{group['group_state']}, {group['protocol_data']}, partitions {assigned}"

    def list_offsets():
        consumer = KafkaConsumer(**connection())
        earliest = consumer.beginning_offsets(PARTITIONS)
        latest = consumer.end_offsets(PARTITIONS)
        consumer.close()
        lows = [earliest[tp] for tp in PARTITIONS]
        highs = [latest[tp] for tp in PARTITIONS]
        check(lows == [0] * PARTITION_COUNT, f"earliest {lows}")
        check(
            sum(highs) == state["produced"],
            f"latest offsets add up to {sum(highs)}, produced {state['produced']}",
        )
        return f"earliest 0, latest {'/'.join(map(str, highs))}"

    def delete_topic():
        admin.delete_topics([TOPIC])
        wait_for("the topic to go", 10, lambda: TOPIC not in admin.list_topics(), step_s=0.2)

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
    admin.close()


def close_members(members):
    for member in members:
        member.close()
    members.clear()


if __name__ == "__main__":
    main()

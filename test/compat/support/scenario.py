"""The compatibility scenario for the Python client programs (confluent-kafka, kafka-python).

The same contract as scenario.ts (read it for the line format): the records every client
produces, the checks on what it consumed, and a step runner printing one JSON line per step.
"""

import json
import os
import re
import sys
import time

STEPS = [
    "create-topic",
    "produce-gzip",
    "produce-zstd",
    "consume-group",
    "commit",
    "restart-no-redelivery",
    "describe-group",
    "list-offsets",
    "transactions",
    "consume-transform-produce",
    "delete-topic",
]
DEPENDS_ON = {
    "wrong-password": [],
    "create-topic": [],
    "produce-gzip": ["create-topic"],
    "produce-zstd": ["create-topic"],
    "consume-group": ["produce-gzip", "produce-zstd"],
    "commit": ["consume-group"],
    "restart-no-redelivery": ["consume-group", "commit"],
    "describe-group": ["restart-no-redelivery"],
    "list-offsets": ["produce-gzip", "produce-zstd"],
    "transactions": ["create-topic"],
    "consume-transform-produce": ["transactions"],
    "delete-topic": ["create-topic"],
}

PARTITION_COUNT = 3
RECORDS_PER_CODEC = 10_000
KEY_COUNT = 100
SENTINEL_COUNT = PARTITION_COUNT
CONSUME_TIMEOUT_S = 90
RESTART_TIMEOUT_S = 45
CODECS = ["gzip", "zstd"]

BOOTSTRAP = os.environ["BOOTSTRAP"]
TOPIC = os.environ["TOPIC"]
GROUP = os.environ["GROUP"]
# SASL_SSL with SASL_MECHANISM, SASL_USERNAME, SASL_PASSWORD and SSL_CA_LOCATION; unset for
# plaintext. ONLY_STEPS (comma-separated) runs just those steps; the others print no line.
SECURITY_PROTOCOL = os.environ.get("SECURITY_PROTOCOL", "")
ONLY_STEPS = [s for s in os.environ.get("ONLY_STEPS", "").split(",") if s]


def key_for(seq):
    return f"key-{seq % KEY_COUNT}"


def value_for(seq):
    return f"value {seq} of {key_for(seq)} {'abcdefghij' * 8}"


def codec_for(seq):
    return "gzip" if seq < RECORDS_PER_CODEC else "zstd"


def records_for(codec):
    """(seq, key, value, headers) for the codec's 10,000 records; headers are (name, str) pairs."""
    first = CODECS.index(codec) * RECORDS_PER_CODEC
    for seq in range(first, first + RECORDS_PER_CODEC):
        yield seq, key_for(seq), value_for(seq), [("seq", str(seq)), ("codec", codec)]


class Consumed:
    """One record as a consumer saw it, decoded to strings."""

    def __init__(self, member, partition, key, value, headers):
        self.member = member
        self.partition = partition
        self.key = key
        self.value = value
        self.headers = headers


# The transactions steps (see scenario.ts): their own one-partition topic, an aborted and a
# committed transaction of TXN_RECORDS each, then consume-transform-produce in GROUP-txn.
TXN_RECORDS = 5
TXN_END_OFFSET = 2 * TXN_RECORDS + 2
TXN_INPUT_END = 2 * TXN_RECORDS + 1
TXN_WAIT_S = 30
TXN_TOPIC = f"{TOPIC}-txn"
TXN_GROUP = f"{GROUP}-txn"


def txn_values(prefix):
    return [f"{prefix} {i}" for i in range(TXN_RECORDS)]


def check_seen(what, seen, expected):
    """Fails unless a read_committed reader saw exactly `expected`, in order."""
    check(list(seen) == list(expected), f"{what}: read_committed saw {list(seen)}")


def decode(data):
    return None if data is None else data.decode()


def is_sentinel(record):
    return (record.key or "").startswith("sentinel-")


def verify_consumed(records, codecs):
    """Problems with what the group consumed (empty when all is well); see scenario.ts."""
    problems = []
    seen = set()
    last_seq = {}
    partition_of_key = {}
    per_member = {0: 0, 1: 0}
    for record in records:
        per_member[record.member] = per_member.get(record.member, 0) + 1
        match = re.match(r"^value (\d+) of ", record.value or "")
        seq = int(match.group(1)) if match else -1
        if seq < 0 or codec_for(seq) not in codecs:
            problems.append(f"unexpected record key={record.key} value={(record.value or '')[:40]}")
            continue
        if record.key != key_for(seq):
            problems.append(f"record {seq}: key {record.key}")
        if record.value != value_for(seq):
            problems.append(f"record {seq}: value differs")
        expected_headers = [("seq", str(seq)), ("codec", codec_for(seq))]
        if list(record.headers) != expected_headers:
            problems.append(f"record {seq}: headers {record.headers}")
        if seq in seen:
            problems.append(f"record {seq} delivered twice")
        seen.add(seq)
        member_key = (record.member, record.key)
        if seq <= last_seq.get(member_key, -1):
            problems.append(f"key {record.key}: record {seq} after {last_seq[member_key]}")
        last_seq[member_key] = seq
        partition = partition_of_key.setdefault(record.key, record.partition)
        if partition != record.partition:
            problems.append(f"key {record.key} in partitions {partition} and {record.partition}")
    expected = len(codecs) * RECORDS_PER_CODEC
    if len(seen) != expected:
        problems.append(f"{expected - len(seen)} of {expected} records missing")
    for member, count in sorted(per_member.items()):
        if count == 0:
            problems.append(f"member {member} received no records")
    if len(problems) > 5:
        problems = problems[:5] + [f"... {len(problems)} problems in all"]
    return problems


def check_assignments(assigned):
    """Checks DescribeGroups' assignments, one list of the topic's partitions per member: two
    members, each with some, every partition owned exactly once (see scenario.ts)."""
    check(len(assigned) == 2, f"{len(assigned)} member assignments")
    check(all(assigned), f"assignments {assigned}")
    check(
        sorted(p for ps in assigned for p in ps) == list(range(PARTITION_COUNT)),
        f"assignments {assigned}",
    )
    return " / ".join("+".join(map(str, sorted(ps))) for ps in assigned)


def emit(line):
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


class StepRunner:
    """Runs steps in order, one JSON line each; a step whose dependency failed is skipped."""

    def __init__(self, client, version):
        self.failed = set()
        emit({"client": client, "version": version})

    def not_applicable(self, step, reason):
        emit({"step": step, "skipped": f"n/a: {reason}"})

    def run(self, step, body):
        if ONLY_STEPS and step not in ONLY_STEPS:
            return False
        blocker = next((d for d in DEPENDS_ON[step] if d in self.failed), None)
        if blocker:
            self.failed.add(step)
            emit({"step": step, "skipped": f"skipped (after {blocker} failed)"})
            return False
        started = time.monotonic()
        try:
            detail = body()
        except Exception as error:  # Every failure becomes the step's cell, whatever its type.
            self.failed.add(step)
            message = f"{type(error).__name__}: {error}"
            emit({"step": step, "ok": False, "ms": elapsed_ms(started), "error": message})
            return False
        line = {"step": step, "ok": True, "ms": elapsed_ms(started)}
        if detail:
            line["detail"] = detail
        emit(line)
        return True


def elapsed_ms(started):
    return int((time.monotonic() - started) * 1000)


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def wait_for(what, timeout_s, probe, step_s=0.05):
    """Calls probe until it returns true or the deadline passes."""
    deadline = time.monotonic() + timeout_s
    while not probe():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(step_s)

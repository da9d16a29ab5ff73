/*
 * librdkafka load for the scale workloads of scripts/bench-vs-kafka.ts: one producer writing to
 * every partition of many topics, and one group consumer reading all of them.
 *
 *   rdkafka-scale produce BROKERS PREFIX TOPICS PARTITIONS RECORDS RECORD_BYTES
 *   rdkafka-scale consume BROKERS PREFIX RECORDS GROUP
 *
 * Topics are PREFIX0 .. PREFIX<TOPICS-1>, each with PARTITIONS partitions. The producer spreads
 * RECORDS round-robin over every partition of every topic (acks=1, no keys). The consumer
 * subscribes to the regular expression ^PREFIX[0-9]+$ in group GROUP from the earliest offsets
 * and stops after RECORDS records. Its time starts when the group assigns it the partitions, so
 * the group's join is not counted (assigned_seconds, from the subscription) but the client's
 * start-up on the assigned partitions is: librdkafka 2.0 looks up each partition's offset with a
 * ListOffsets request of its own, and each answer wakes the broker thread for a walk over every
 * partition, O(partitions^2) client CPU that at 10,000 partitions lasts seconds whatever the
 * broker (docs/scaling.md). Timed from the first record, as before, that start-up fell inside the
 * measured time when the broker answered the first Fetch early and outside it when it answered
 * late. One JSON line goes to stdout: records, bytes, seconds (assignment to last record),
 * failed, assigned_seconds, first_record_seconds (from the subscription), after_first_seconds
 * (first to last record) and client_cpu_seconds.
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define FLUSH_TIMEOUT_MS 600000
#define IDLE_TIMEOUT_MS 60000

static long long delivered_count = 0;
static long long failed_count = 0;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *detail) {
  fprintf(stderr, "rdkafka-scale: %s: %s\n", what, detail);
  exit(1);
}

static void set(rd_kafka_conf_t *conf, const char *key, const char *value) {
  char err[512];
  if (rd_kafka_conf_set(conf, key, value, err, sizeof err) != RD_KAFKA_CONF_OK) die(key, err);
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  (void)opaque;
  if (m->err) {
    if (failed_count == 0) fprintf(stderr, "delivery failed: %s\n", rd_kafka_err2str(m->err));
    failed_count++;
  } else {
    delivered_count++;
  }
}

static rd_kafka_t *new_client(rd_kafka_type_t type, rd_kafka_conf_t *conf) {
  char err[512];
  rd_kafka_t *rk = rd_kafka_new(type, conf, err, sizeof err);
  if (rk == NULL) die("rd_kafka_new", err);
  return rk;
}

static int produce(char **argv) {
  int topic_count = atoi(argv[4]);
  int partitions = atoi(argv[5]);
  long long records = atoll(argv[6]);
  int record_bytes = atoi(argv[7]);
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", argv[2]);
  set(conf, "acks", "1");
  set(conf, "linger.ms", "5");
  /* librdkafka (2.0) sends one partition per Produce request and, with the default threshold of
   * 1, builds a request only while no other waits to be sent, walking every partition it holds
   * for each one: at 10,000 partitions that walk (~0.75 ms of client CPU per request) capped the
   * producer near 1,300 requests/s whatever the broker did (docs/scaling.md). With room for many
   * untransmitted requests one walk builds a request for every partition that is ready. */
  set(conf, "queue.buffering.backpressure.threshold", "1000");
  set(conf, "queue.buffering.max.messages", "1000000");
  set(conf, "queue.buffering.max.kbytes", "1048576");
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, conf);
  rd_kafka_topic_t **topics = calloc((size_t)topic_count, sizeof *topics);
  char name[256];
  for (int t = 0; t < topic_count; t++) {
    snprintf(name, sizeof name, "%s%d", argv[3], t);
    topics[t] = rd_kafka_topic_new(rk, name, NULL);
  }
  char *payload = malloc((size_t)record_bytes);
  for (int i = 0; i < record_bytes; i++) payload[i] = (char)('a' + i % 26);
  long long slots = (long long)topic_count * partitions;
  double started = now_seconds();
  for (long long i = 0; i < records; i++) {
    long long slot = i % slots;
    rd_kafka_topic_t *topic = topics[slot / partitions];
    int32_t partition = (int32_t)(slot % partitions);
    while (rd_kafka_produce(topic, partition, RD_KAFKA_MSG_F_COPY, payload, (size_t)record_bytes,
                            NULL, 0, NULL) == -1) {
      rd_kafka_resp_err_t err = rd_kafka_last_error();
      if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) die("produce", rd_kafka_err2str(err));
      rd_kafka_poll(rk, 10);
    }
    if ((i & 1023) == 0) rd_kafka_poll(rk, 0);
  }
  if (rd_kafka_flush(rk, FLUSH_TIMEOUT_MS) != RD_KAFKA_RESP_ERR_NO_ERROR) die("flush", "timeout");
  double seconds = now_seconds() - started;
  printf("{\"records\":%lld,\"bytes\":%lld,\"seconds\":%.6f,\"failed\":%lld}\n", delivered_count,
         delivered_count * record_bytes, seconds, failed_count);
  for (int t = 0; t < topic_count; t++) rd_kafka_topic_destroy(topics[t]);
  rd_kafka_destroy(rk);
  free(topics);
  free(payload);
  return failed_count == 0 && delivered_count == records ? 0 : 1;
}

static double assigned_at = 0;

/* The default eager protocol's handling, plus the time of the first assignment. */
static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *partitions, void *opaque) {
  (void)opaque;
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    if (assigned_at == 0) assigned_at = now_seconds();
    rd_kafka_assign(rk, partitions);
  } else {
    rd_kafka_assign(rk, NULL);
  }
}

static double cpu_seconds(void) {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec / 1e6 +
         (double)usage.ru_stime.tv_sec + (double)usage.ru_stime.tv_usec / 1e6;
}

static int consume(char **argv) {
  long long records = atoll(argv[4]);
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", argv[2]);
  set(conf, "group.id", argv[5]);
  set(conf, "auto.offset.reset", "earliest");
  set(conf, "enable.auto.commit", "false");
  set(conf, "enable.partition.eof", "false");
  set(conf, "topic.metadata.refresh.interval.ms", "1000");
  rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
  rd_kafka_t *rk = new_client(RD_KAFKA_CONSUMER, conf);
  rd_kafka_poll_set_consumer(rk);
  char pattern[256];
  snprintf(pattern, sizeof pattern, "^%s[0-9]+$", argv[3]);
  rd_kafka_topic_partition_list_t *subscription = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(subscription, pattern, RD_KAFKA_PARTITION_UA);
  rd_kafka_resp_err_t err = rd_kafka_subscribe(rk, subscription);
  if (err) die("subscribe", rd_kafka_err2str(err));
  rd_kafka_topic_partition_list_destroy(subscription);
  long long count = 0, bytes = 0;
  double subscribed = now_seconds(), started = 0, last_progress = subscribed;
  while (count < records) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
    if (m == NULL) {
      if ((now_seconds() - last_progress) * 1000 > IDLE_TIMEOUT_MS) break;
      continue;
    }
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      if (count == 0) started = now_seconds();
      count++;
      bytes += (long long)m->len;
      last_progress = now_seconds();
    } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      fprintf(stderr, "consume error: %s\n", rd_kafka_message_errstr(m));
    }
    rd_kafka_message_destroy(m);
  }
  double ended = last_progress;
  double seconds = count > 0 ? ended - assigned_at : 0;
  printf("{\"records\":%lld,\"bytes\":%lld,\"seconds\":%.6f,\"failed\":%lld,"
         "\"assigned_seconds\":%.6f,\"first_record_seconds\":%.6f,"
         "\"after_first_seconds\":%.6f,\"client_cpu_seconds\":%.3f}\n",
         count, bytes, seconds, records - count, assigned_at > 0 ? assigned_at - subscribed : -1.0,
         started > 0 ? started - subscribed : -1.0, count > 0 ? ended - started : 0,
         cpu_seconds());
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return count == records ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc == 8 && strcmp(argv[1], "produce") == 0) return produce(argv);
  if (argc == 6 && strcmp(argv[1], "consume") == 0) return consume(argv);
  fprintf(stderr,
          "usage: rdkafka-scale produce BROKERS PREFIX TOPICS PARTITIONS RECORDS RECORD_BYTES\n"
          "       rdkafka-scale consume BROKERS PREFIX RECORDS GROUP\n");
  return 2;
}

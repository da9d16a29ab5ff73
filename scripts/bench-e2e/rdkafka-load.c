/*
 * Load generator for scripts/bench-e2e.ts: a librdkafka producer or consumer with as little
 * per-record work of its own as possible, so the broker, not the client, is what is measured.
 *
 *   rdkafka-load produce BROKERS TOPIC PARTITIONS RECORDS RECORD_BYTES ACKS [KEY=VALUE ...]
 *   rdkafka-load consume BROKERS TOPIC PARTITIONS RECORDS [KEY=VALUE ...]
 *
 * KEY=VALUE pairs are librdkafka settings (batch.num.messages=50, linger.ms=0, ...). Records are
 * spread round-robin over partitions 0..PARTITIONS-1 without keys. The consumer uses the simple
 * (group-less) API from the beginning of every partition until RECORDS records have arrived.
 * On success one JSON line goes to stdout: records, bytes, seconds, failed deliveries.
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Generous deadlines: a run that stalls this long is reported as failed, not waited on. */
#define FLUSH_TIMEOUT_MS 600000
#define IDLE_TIMEOUT_MS 30000

static long long delivered_count = 0;
static long long failed_count = 0;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *detail) {
  fprintf(stderr, "rdkafka-load: %s: %s\n", what, detail);
  exit(1);
}

static void set(rd_kafka_conf_t *conf, const char *key, const char *value) {
  char err[512];
  if (rd_kafka_conf_set(conf, key, value, err, sizeof err) != RD_KAFKA_CONF_OK) die(key, err);
}

static void set_pairs(rd_kafka_conf_t *conf, int count, char **pairs) {
  for (int i = 0; i < count; i++) {
    char *eq = strchr(pairs[i], '=');
    if (eq == NULL) die("expected KEY=VALUE", pairs[i]);
    *eq = '\0';
    set(conf, pairs[i], eq + 1);
  }
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  (void)opaque;
  if (m->err) {
    if (failed_count == 0) {
      fprintf(stderr, "rdkafka-load: delivery failed: %s\n", rd_kafka_err2str(m->err));
    }
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

static int produce(char **argv, int extra_count, char **extra) {
  int partitions = atoi(argv[4]);
  long long records = atoll(argv[5]);
  int record_bytes = atoi(argv[6]);
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", argv[2]);
  set(conf, "acks", argv[7]);
  set(conf, "queue.buffering.max.messages", "1000000");
  set(conf, "queue.buffering.max.kbytes", "1048576");
  set_pairs(conf, extra_count, extra);
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, conf);
  rd_kafka_topic_t *topic = rd_kafka_topic_new(rk, argv[3], NULL);
  char *payload = malloc((size_t)record_bytes);
  for (int i = 0; i < record_bytes; i++) payload[i] = (char)('a' + i % 26);
  double started = now_seconds();
  for (long long i = 0; i < records; i++) {
    int32_t partition = (int32_t)(i % partitions);
    while (rd_kafka_produce(topic, partition, RD_KAFKA_MSG_F_COPY, payload, (size_t)record_bytes,
                            NULL, 0, NULL) == -1) {
      rd_kafka_resp_err_t err = rd_kafka_last_error();
      if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) die("produce", rd_kafka_err2str(err));
      rd_kafka_poll(rk, 10);
    }
    if ((i & 1023) == 0) rd_kafka_poll(rk, 0);
  }
  if (rd_kafka_flush(rk, FLUSH_TIMEOUT_MS) != RD_KAFKA_RESP_ERR_NO_ERROR) die("flush", "timed out");
  double seconds = now_seconds() - started;
  printf("{\"records\":%lld,\"bytes\":%lld,\"seconds\":%.6f,\"failed\":%lld}\n", delivered_count,
         delivered_count * record_bytes, seconds, failed_count);
  rd_kafka_topic_destroy(topic);
  rd_kafka_destroy(rk);
  free(payload);
  return failed_count == 0 && delivered_count == records ? 0 : 1;
}

static int consume(char **argv, int extra_count, char **extra) {
  int partitions = atoi(argv[4]);
  long long records = atoll(argv[5]);
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", argv[2]);
  set(conf, "enable.partition.eof", "false");
  set_pairs(conf, extra_count, extra);
  rd_kafka_t *rk = new_client(RD_KAFKA_CONSUMER, conf);
  rd_kafka_topic_t *topic = rd_kafka_topic_new(rk, argv[3], NULL);
  rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
  double started = now_seconds();
  for (int p = 0; p < partitions; p++) {
    if (rd_kafka_consume_start_queue(topic, p, RD_KAFKA_OFFSET_BEGINNING, queue) == -1) {
      die("consume_start", rd_kafka_err2str(rd_kafka_last_error()));
    }
  }
  long long count = 0, bytes = 0;
  double last_progress = now_seconds();
  rd_kafka_message_t *batch[4096];
  while (count < records) {
    ssize_t n = rd_kafka_consume_batch_queue(queue, 100, batch, 4096);
    if (n < 0) die("consume", rd_kafka_err2str(rd_kafka_last_error()));
    for (ssize_t i = 0; i < n; i++) {
      if (batch[i]->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        /* The topic may hold more than RECORDS; what arrives past them is not counted. */
        if (count == records) {
          rd_kafka_message_destroy(batch[i]);
          continue;
        }
        count++;
        bytes += (long long)batch[i]->len;
      } else if (batch[i]->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        fprintf(stderr, "rdkafka-load: consume error: %s\n", rd_kafka_message_errstr(batch[i]));
      }
      rd_kafka_message_destroy(batch[i]);
    }
    if (n > 0) last_progress = now_seconds();
    else if ((now_seconds() - last_progress) * 1000 > IDLE_TIMEOUT_MS) break;
  }
  double seconds = now_seconds() - started;
  for (int p = 0; p < partitions; p++) rd_kafka_consume_stop(topic, p);
  printf("{\"records\":%lld,\"bytes\":%lld,\"seconds\":%.6f,\"failed\":%lld}\n", count, bytes,
         seconds, records - count);
  rd_kafka_queue_destroy(queue);
  rd_kafka_topic_destroy(topic);
  rd_kafka_destroy(rk);
  return count == records ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc >= 8 && strcmp(argv[1], "produce") == 0) return produce(argv, argc - 8, argv + 8);
  if (argc >= 6 && strcmp(argv[1], "consume") == 0) return consume(argv, argc - 6, argv + 6);
  fprintf(stderr,
          "usage: rdkafka-load produce BROKERS TOPIC PARTITIONS RECORDS RECORD_BYTES ACKS "
          "[K=V ...]\n"
          "       rdkafka-load consume BROKERS TOPIC PARTITIONS RECORDS [K=V ...]\n");
  return 2;
}

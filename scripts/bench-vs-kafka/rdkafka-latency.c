/*
 * End-to-end latency probe for scripts/bench-vs-kafka.ts: one librdkafka producer sends records
 * at a fixed rate to partition 0 of TOPIC, one librdkafka consumer in the same process reads them
 * back, and each record's latency is the time from just before rd_kafka_produce to the moment the
 * consumer hands it over. Both ends share CLOCK_MONOTONIC, so no clock sync is involved.
 *
 *   rdkafka-latency BROKERS TOPIC RECORDS RECORD_BYTES RATE_PER_SECOND [KEY=VALUE ...]
 *
 * KEY=VALUE pairs go to both clients' configs (producer-only or consumer-only keys make librdkafka
 * warn on the other, so the harness passes only keys both accept). Records sent before the
 * consumer has received its first one only warm the connections up (metadata, the consumer's first
 * fetch) and are not counted; RECORDS more are sent after that. The topic must be empty: the
 * consumer starts at the beginning, so it cannot miss a record sent before it was positioned. On success one JSON line goes to stdout: records, samples, p50/p99/p999/max in
 * milliseconds, and records that never arrived.
 */
#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A run that makes no progress for this long is reported as failed, not waited on. */
#define IDLE_TIMEOUT_NS 30000000000LL
#define HEADER_BYTES 16

static long long failed_count = 0;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what, const char *detail) {
  fprintf(stderr, "rdkafka-latency: %s: %s\n", what, detail);
  exit(1);
}

static void set(rd_kafka_conf_t *conf, const char *key, const char *value) {
  char err[512];
  if (rd_kafka_conf_set(conf, key, value, err, sizeof err) != RD_KAFKA_CONF_OK) die(key, err);
}

static void set_pairs(rd_kafka_conf_t *conf, int count, char **pairs) {
  for (int i = 0; i < count; i++) {
    char *copy = strdup(pairs[i]);
    char *eq = strchr(copy, '=');
    if (eq == NULL) die("expected KEY=VALUE", pairs[i]);
    *eq = '\0';
    set(conf, copy, eq + 1);
    free(copy);
  }
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  (void)opaque;
  if (m->err) {
    if (failed_count == 0) {
      fprintf(stderr, "rdkafka-latency: delivery failed: %s\n", rd_kafka_err2str(m->err));
    }
    failed_count++;
  }
}

static rd_kafka_t *new_client(rd_kafka_type_t type, rd_kafka_conf_t *conf) {
  char err[512];
  rd_kafka_t *rk = rd_kafka_new(type, conf, err, sizeof err);
  if (rk == NULL) die("rd_kafka_new", err);
  return rk;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y ? 1 : 0;
}

/* Nearest-rank percentile of sorted values. */
static double percentile(const double *sorted, long long n, double p) {
  long long rank = (long long)(p / 100.0 * (double)n + 0.999999);
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  return sorted[rank - 1];
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: rdkafka-latency BROKERS TOPIC RECORDS RECORD_BYTES RATE [K=V ...]\n");
    return 2;
  }
  long long records = atoll(argv[3]);
  int record_bytes = atoi(argv[4]);
  double rate = atof(argv[5]);
  if (records <= 0 || record_bytes < HEADER_BYTES || rate <= 0) die("arguments", "out of range");

  rd_kafka_conf_t *pconf = rd_kafka_conf_new();
  set(pconf, "bootstrap.servers", argv[1]);
  set(pconf, "acks", "1");
  set(pconf, "linger.ms", "0");
  set_pairs(pconf, argc - 6, argv + 6);
  rd_kafka_conf_set_dr_msg_cb(pconf, on_delivery);
  rd_kafka_t *producer = new_client(RD_KAFKA_PRODUCER, pconf);
  rd_kafka_topic_t *ptopic = rd_kafka_topic_new(producer, argv[2], NULL);

  rd_kafka_conf_t *cconf = rd_kafka_conf_new();
  set(cconf, "bootstrap.servers", argv[1]);
  set(cconf, "enable.partition.eof", "false");
  set(cconf, "fetch.wait.max.ms", "100");
  set_pairs(cconf, argc - 6, argv + 6);
  rd_kafka_t *consumer = new_client(RD_KAFKA_CONSUMER, cconf);
  rd_kafka_topic_t *ctopic = rd_kafka_topic_new(consumer, argv[2], NULL);
  rd_kafka_queue_t *queue = rd_kafka_queue_new(consumer);
  if (rd_kafka_consume_start_queue(ctopic, 0, RD_KAFKA_OFFSET_BEGINNING, queue) == -1) {
    die("consume_start", rd_kafka_err2str(rd_kafka_last_error()));
  }

  char *payload = calloc(1, (size_t)record_bytes);
  double *latency_ms = calloc((size_t)records, sizeof(double));
  char *seen = calloc((size_t)records, 1);
  int64_t interval_ns = (int64_t)(1e9 / rate);
  int64_t started = now_ns(), next_send = started, last_progress = started;
  /* Until the first record arrives, warmup is -1 and the sender has no end. */
  long long sent = 0, received = 0, warmup = -1;
  rd_kafka_message_t *batch[256];
  while (warmup < 0 || received < records) {
    int64_t now = now_ns();
    while ((warmup < 0 || sent < warmup + records) && next_send <= now) {
      int64_t stamp = now_ns();
      int64_t seq = sent;
      memcpy(payload, &stamp, 8);
      memcpy(payload + 8, &seq, 8);
      while (rd_kafka_produce(ptopic, 0, RD_KAFKA_MSG_F_COPY, payload, (size_t)record_bytes,
                              NULL, 0, NULL) == -1) {
        rd_kafka_resp_err_t err = rd_kafka_last_error();
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) die("produce", rd_kafka_err2str(err));
        rd_kafka_poll(producer, 1);
      }
      sent++;
      next_send += interval_ns;
    }
    rd_kafka_poll(producer, 0);
    int sending = warmup < 0 || sent < warmup + records;
    int64_t wait_ns = sending ? next_send - now_ns() : 10000000LL;
    int timeout_ms = wait_ns <= 0 ? 0 : (int)(wait_ns / 1000000);
    ssize_t n = rd_kafka_consume_batch_queue(queue, timeout_ms, batch, 256);
    if (n < 0) die("consume", rd_kafka_err2str(rd_kafka_last_error()));
    int64_t arrived = now_ns();
    for (ssize_t i = 0; i < n; i++) {
      rd_kafka_message_t *m = batch[i];
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->len >= HEADER_BYTES) {
        int64_t stamp, seq;
        memcpy(&stamp, m->payload, 8);
        memcpy(&seq, (const char *)m->payload + 8, 8);
        /* The consumer reads the topic from its beginning, which holds the records of earlier
         * passes: their sequence numbers repeat this run's, and their latencies would be the
         * time since that pass. Only records stamped by this run count. */
        if (stamp < started) {
          rd_kafka_message_destroy(m);
          continue;
        }
        if (warmup < 0) warmup = sent;
        long long index = seq - warmup;
        if (index >= 0 && index < records && !seen[index]) {
          seen[index] = 1;
          latency_ms[index] = (double)(arrived - stamp) / 1e6;
          received++;
        }
      } else if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "rdkafka-latency: consume error: %s\n", rd_kafka_message_errstr(m));
      }
      rd_kafka_message_destroy(m);
    }
    if (n > 0) last_progress = arrived;
    else if (arrived - last_progress > IDLE_TIMEOUT_NS) break;
  }
  double seconds = (double)(now_ns() - started) / 1e9;
  rd_kafka_flush(producer, 10000);

  long long samples = 0;
  double *sorted = calloc((size_t)records, sizeof(double));
  for (long long i = 0; i < records; i++) {
    if (seen[i]) sorted[samples++] = latency_ms[i];
  }
  qsort(sorted, (size_t)samples, sizeof(double), compare_doubles);
  if (samples == 0) die("latency", "no record arrived after the warm-up");
  printf("{\"records\":%lld,\"samples\":%lld,\"seconds\":%.3f,\"p50Ms\":%.3f,\"p99Ms\":%.3f,"
         "\"p999Ms\":%.3f,\"maxMs\":%.3f,\"warmup\":%lld,\"failed\":%lld}\n",
         records, samples, seconds, percentile(sorted, samples, 50), percentile(sorted, samples, 99),
         percentile(sorted, samples, 99.9), sorted[samples - 1], warmup,
         records - received + failed_count);

  rd_kafka_consume_stop(ctopic, 0);
  rd_kafka_queue_destroy(queue);
  rd_kafka_topic_destroy(ctopic);
  rd_kafka_topic_destroy(ptopic);
  rd_kafka_destroy(consumer);
  rd_kafka_destroy(producer);
  free(sorted);
  free(seen);
  free(latency_ms);
  free(payload);
  return received == records && failed_count == 0 ? 0 : 1;
}

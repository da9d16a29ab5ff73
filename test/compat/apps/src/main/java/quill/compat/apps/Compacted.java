package quill.compat.apps;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** The check that the broker's cleaner compacted a topic (the Streams and Connect apps). */
final class Compacted {
  private Compacted() {}

  /**
   * Reads the `partitionCount` partitions of `topic` from their start to their end until some
   * offsets are missing in one (records removed before a partition's start count too); returns
   * what it found.
   */
  static String awaitGaps(String topic, int partitionCount, long timeoutMs) throws Exception {
    Properties config = new Properties();
    config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, Env.BOOTSTRAP);
    config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
        ByteArrayDeserializer.class.getName());
    List<TopicPartition> partitions = Env.partitionsOf(topic, partitionCount);
    long[] found = {0, 0};
    try (var consumer = new KafkaConsumer<byte[], byte[]>(config)) {
      consumer.assign(partitions);
      Steps.await(timeoutMs, "the cleaner to compact " + topic, () -> {
        found[0] = 0;
        found[1] = 0;
        consumer.seekToBeginning(partitions);
        Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
        // The offset before each partition's start: records removed there are a gap too.
        Map<TopicPartition, Long> previous = new HashMap<>();
        consumer.beginningOffsets(partitions).forEach((tp, start) -> previous.put(tp, start - 1));
        for (int polls = 0; polls < 100 && partitions.stream()
            .anyMatch(tp -> consumer.position(tp) < ends.get(tp)); polls++) {
          for (var record : consumer.poll(Duration.ofMillis(200))) {
            var tp = new TopicPartition(record.topic(), record.partition());
            if (record.offset() > previous.put(tp, record.offset()) + 1) found[1]++;
            found[0]++;
          }
        }
        return found[1] > 0 ? null : found[0] + " records, none removed yet";
      });
    }
    return topic + ": " + found[0] + " records left, " + found[1] + " gaps";
  }
}

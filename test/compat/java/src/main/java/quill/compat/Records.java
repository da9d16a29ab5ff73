package quill.compat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The scenario's records and the checks on what the group consumed (see scenario.ts). */
final class Records {
  static final int KEY_COUNT = 100;
  private static final Pattern VALUE_SEQ = Pattern.compile("^value (\\d+) of ");

  record Consumed(int member, int partition, String key, String value, List<String[]> headers) {}

  static String keyFor(int seq) {
    return "key-" + (seq % KEY_COUNT);
  }

  static String valueFor(int seq) {
    return "value " + seq + " of " + keyFor(seq) + " " + "abcdefghij".repeat(8);
  }

  static String codecFor(int seq) {
    return seq < Main.RECORDS_PER_CODEC ? "gzip" : "zstd";
  }

  static boolean isSentinel(Consumed record) {
    return record.key() != null && record.key().startsWith("sentinel-");
  }

  static List<String> verify(List<Consumed> records) {
    List<String> problems = new ArrayList<>();
    Set<Integer> seen = new HashSet<>();
    Map<String, Integer> lastSeq = new HashMap<>();
    Map<String, Integer> partitionOfKey = new HashMap<>();
    int[] perMember = new int[2];
    for (Consumed record : records) {
      perMember[record.member()]++;
      Matcher match = VALUE_SEQ.matcher(record.value() == null ? "" : record.value());
      if (!match.find()) {
        problems.add("unexpected record key=" + record.key());
        continue;
      }
      int seq = Integer.parseInt(match.group(1));
      if (!keyFor(seq).equals(record.key())) {
        problems.add("record " + seq + ": key " + record.key());
      }
      if (!valueFor(seq).equals(record.value())) problems.add("record " + seq + ": value differs");
      String headers = headerText(record.headers());
      if (!headers.equals("seq=" + seq + ",codec=" + codecFor(seq))) {
        problems.add("record " + seq + ": headers " + headers);
      }
      if (!seen.add(seq)) problems.add("record " + seq + " delivered twice");
      String memberKey = record.member() + "/" + record.key();
      Integer last = lastSeq.put(memberKey, seq);
      if (last != null && seq <= last) {
        problems.add("key " + record.key() + ": record " + seq + " after " + last);
      }
      Integer partition = partitionOfKey.put(record.key(), record.partition());
      if (partition != null && partition != record.partition()) {
        problems.add(
            "key " + record.key() + " in partitions " + partition + " and " + record.partition());
      }
    }
    int expected = 2 * Main.RECORDS_PER_CODEC;
    if (seen.size() != expected) {
      problems.add((expected - seen.size()) + " of " + expected + " records missing");
    }
    for (int member = 0; member < 2; member++) {
      if (perMember[member] == 0) problems.add("member " + member + " received no records");
    }
    if (problems.size() > 5) {
      int count = problems.size();
      problems = new ArrayList<>(problems.subList(0, 5));
      problems.add("... " + count + " problems in all");
    }
    return problems;
  }

  /**
   * Checks DescribeGroups' assignments, one list of the topic's partitions per member: two
   * members, each with some, every partition owned exactly once (see scenario.ts).
   */
  static String checkAssignments(List<List<Integer>> assigned) {
    List<Integer> owned = new ArrayList<>();
    assigned.forEach(owned::addAll);
    owned.sort(null);
    List<Integer> all = new ArrayList<>();
    for (int partition = 0; partition < Main.PARTITION_COUNT; partition++) all.add(partition);
    Steps.check(assigned.size() == 2, assigned.size() + " member assignments");
    Steps.check(assigned.stream().noneMatch(List::isEmpty), "assignments " + assigned);
    Steps.check(owned.equals(all), "assignments " + assigned);
    List<String> parts = new ArrayList<>();
    for (List<Integer> partitions : assigned) {
      parts.add(String.join("+", partitions.stream().map(String::valueOf).toList()));
    }
    return String.join(" / ", parts);
  }

  private static String headerText(List<String[]> headers) {
    List<String> parts = new ArrayList<>();
    for (String[] header : headers) parts.add(header[0] + "=" + header[1]);
    return String.join(",", parts);
  }
}

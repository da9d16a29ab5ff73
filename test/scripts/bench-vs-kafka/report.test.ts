import { expect, test } from "bun:test";
import { scaleTable } from "../../../scripts/bench-vs-kafka/report.ts";
import { SCALE_WORKLOADS } from "../../../scripts/bench-vs-kafka/scale.ts";

test("the scale table shows a consumer's few CPU seconds with a decimal, rates without", () => {
  const workload = SCALE_WORKLOADS.find((w) => w.id === "partitions-10k")!;
  const run = (kind: "quill" | "kafka", cpuS: number, perSecond: number) => ({
    kind,
    workloadId: workload.id,
    figures: {
      consumePerSecond: perSecond,
      consumeClientCpuS: cpuS,
      franzConsumePerSecond: perSecond * 10,
    },
    error: null,
    brokerCpuSeconds: 1,
  });
  const table = scaleTable(
    [run("kafka", 5.8, 44_593.4), run("quill", 0.342, 50_272.2)],
    [workload],
  );
  expect(table).toContain("| consumeClientCpuS | 5.8 | 0.3 |");
  expect(table).toContain("| consumePerSecond | 44,593 | 50,272 |");
  // At 10,000 partitions franz-go's consume counts toward scale=, librdkafka's does not.
  expect(table).toContain("| franzConsumePerSecond (in scale=) | 445,934 | 502,722 | 1.13× |");
});

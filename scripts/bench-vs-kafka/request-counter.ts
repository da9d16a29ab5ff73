// Requests a broker has received so far, read the same way before and after each workload so the
// harness can put broker CPU seconds per million requests beside each row. Quill counts them in
// its admin listener's /metrics (quill_requests_total, per API); Kafka in the socket server's
// `request-total` per listener and network processor, read over JMX by Kafka's own JmxTool, one
// JVM per broker start printing the counters every second (a JVM per sample would cost seconds
// each).
import type { Subprocess } from "bun";
import { freePorts } from "../../test/support/zookeeper-server.ts";

const JMX_INTERVAL_MS = 1_000;
/** Long enough for JmxTool's JVM to start and print its first line on a loaded machine. */
const JMX_FIRST_LINE_TIMEOUT_MS = 60_000;

export interface RequestCounter {
  /** Requests received since the broker started (Kafka: as of the last second). */
  total(): Promise<number>;
  close(): void;
}

export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}

/** Sums quill_requests_total over every API from `http://127.0.0.1:<adminPort>/metrics`. */
export function quillRequestCounter(adminPort: number): RequestCounter {
  return {
    async total() {
      const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
      let sum = 0;
      for (const match of text.matchAll(/^quill_requests_total\{[^}]*\} (\d+(?:\.\d+)?)$/gm)) {
        sum += Number(match[1]);
      }
      return sum;
    },
    close() {},
  };
}

/** Starts JmxTool against a Kafka started with JMX on `jmxPort` (brokers.ts, startKafka). */
export async function kafkaRequestCounter(
  classpath: string,
  jmxPort: number,
): Promise<RequestCounter> {
  const proc: Subprocess<"ignore", "pipe", "ignore"> = Bun.spawn(
    [
      "java",
      "-Xmx64m",
      "-cp",
      classpath,
      "org.apache.kafka.tools.JmxTool",
      "--jmx-url",
      `service:jmx:rmi:///jndi/rmi://127.0.0.1:${jmxPort}/jmxrmi`,
      "--object-name",
      // Every listener: the SASL_SSL rows' requests arrive on the second one.
      "kafka.server:type=socket-server-metrics,listener=*,networkProcessor=*",
      "--attributes",
      "request-total",
      "--reporting-interval",
      String(JMX_INTERVAL_MS),
    ],
    { stdin: "ignore", stdout: "pipe", stderr: "ignore" },
  );
  let latest: number | null = null;
  void (async () => {
    const decoder = new TextDecoder();
    let pending = "";
    for await (const chunk of proc.stdout) {
      pending += decoder.decode(chunk);
      const lines = pending.split("\n");
      pending = lines.pop()!;
      for (const line of lines) {
        const fields = line.split(",").slice(1).map(Number);
        if (fields.length > 0 && fields.every(Number.isFinite)) {
          latest = fields.reduce((a, b) => a + b, 0);
        }
      }
    }
  })();
  const deadline = performance.now() + JMX_FIRST_LINE_TIMEOUT_MS;
  while (latest === null && performance.now() < deadline) await Bun.sleep(100);
  if (latest === null) {
    proc.kill();
    throw new Error(`JmxTool printed no request counters from port ${jmxPort}`);
  }
  return {
    async total() {
      // A fresh line within the interval covers the workload that just ended.
      await Bun.sleep(JMX_INTERVAL_MS + 200);
      return latest!;
    },
    close() {
      proc.kill();
    },
  };
}

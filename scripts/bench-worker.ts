// `bun scripts/bench-worker.ts [seconds]`
//
// What handing requests to a worker thread would cost (docs/scaling.md, Using more cores): the
// main thread posts a request of N bytes to a Worker, which answers with a response of the same
// size; measured one at a time (the latency a request would gain) and with 64 in flight (the
// throughput one hop sustains), for payloads copied by structured clone and for ArrayBuffers
// transferred without a copy. Prints one Markdown table. Not a test.
import { loadAverage } from "./bench-common.ts";

const SECONDS = Number(process.argv[2] ?? 2);
const PAYLOAD_BYTES = [100, 16 * 1024, 1024 * 1024];
const IN_FLIGHT = 64;

const WORKER_SOURCE = `
self.onmessage = (event) => {
  const { id, payload, transfer } = event.data;
  if (transfer) self.postMessage({ id, payload }, [payload]);
  else self.postMessage({ id, payload });
};
`;

interface Row {
  payloadBytes: number;
  transfer: boolean;
  inFlight: number;
  roundTripsPerSecond: number;
  microsPerRoundTrip: number;
}

async function measure(
  worker: Worker,
  payloadBytes: number,
  transfer: boolean,
  inFlight: number,
): Promise<Row> {
  let completed = 0;
  let nextId = 0;
  const deadline = performance.now() + SECONDS * 1000;
  const started = performance.now();
  await new Promise<void>((resolve) => {
    let outstanding = 0;
    const send = () => {
      const payload = new ArrayBuffer(payloadBytes);
      const message = { id: nextId++, payload, transfer };
      if (transfer) worker.postMessage(message, [payload]);
      else worker.postMessage(message);
      outstanding++;
    };
    worker.onmessage = () => {
      completed++;
      outstanding--;
      if (performance.now() < deadline) send();
      else if (outstanding === 0) resolve();
    };
    for (let i = 0; i < inFlight; i++) send();
  });
  const seconds = (performance.now() - started) / 1000;
  return {
    payloadBytes,
    transfer,
    inFlight,
    roundTripsPerSecond: completed / seconds,
    microsPerRoundTrip: (seconds * 1e6 * inFlight) / completed,
  };
}

async function main(): Promise<void> {
  const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "application/javascript" }));
  const worker = new Worker(url);
  const rows: Row[] = [];
  const loadAtStart = loadAverage();
  for (const payloadBytes of PAYLOAD_BYTES) {
    for (const transfer of [false, true]) {
      for (const inFlight of [1, IN_FLIGHT]) {
        rows.push(await measure(worker, payloadBytes, transfer, inFlight));
      }
    }
  }
  worker.terminate();
  console.log(
    `Worker round trips (request and response of the same size), ${SECONDS} s each; ` +
      `load average ${loadAtStart} at start, ${loadAverage()} at end.\n`,
  );
  console.log("| payload | passed by | in flight | round trips/s | µs per round trip |");
  console.log("|---:|---|---:|---:|---:|");
  for (const r of rows) {
    console.log(
      `| ${r.payloadBytes.toLocaleString("en-US")} B | ${r.transfer ? "transfer" : "copy"} | ` +
        `${r.inFlight} | ${Math.round(r.roundTripsPerSecond).toLocaleString("en-US")} | ` +
        `${r.microsPerRoundTrip.toFixed(1)} |`,
    );
  }
}

await main();

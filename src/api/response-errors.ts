/**
 * Calls `visit` with every non-zero error code in a response body: the top-level one and those
 * of each topic, partition or resource, as Kafka's `AbstractResponse.errorCounts` collects them
 * for the ErrorsPerSec metric. The walk follows arrays and plain fields, skipping record data
 * (byte arrays and fetched file ranges), so its cost is per partition, never per record.
 */
export function forEachErrorCode(body: unknown, visit: (errorCode: number) => void): void {
  if (Array.isArray(body)) {
    for (const item of body) if (typeof item === "object" && item !== null) walk(item, visit);
  } else if (typeof body === "object" && body !== null) {
    walk(body as Record<string, unknown>, visit);
  }
}

function walk(node: object, visit: (errorCode: number) => void): void {
  if (ArrayBuffer.isView(node)) return;
  for (const key in node) {
    const value = (node as Record<string, unknown>)[key];
    if (typeof value === "number") {
      if (value !== 0 && key.endsWith("rrorCode")) visit(value);
    } else if (typeof value === "object" && value !== null && key !== "records") {
      forEachErrorCode(value, visit);
    }
  }
}

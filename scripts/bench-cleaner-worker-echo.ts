/**
 * The Worker side of scripts/bench-cleaner-worker.ts: sends every buffer it gets straight back,
 * transferred (so the round trip measures message passing alone).
 */
declare const self: Worker;

self.onmessage = (event: MessageEvent<{ buffer: ArrayBuffer; transfer: boolean }>) => {
  const { buffer, transfer } = event.data;
  self.postMessage({ buffer, transfer }, transfer ? [buffer] : []);
};

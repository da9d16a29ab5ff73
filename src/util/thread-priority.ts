/**
 * Lowers the calling thread's CPU priority (Linux: a per-thread nice value through
 * setpriority(2) on its thread id, by bun:ffi). The cleaner's Worker calls it so that on busy
 * cores the scheduler runs the event loop, which serves requests, before the cleaner's CPU work.
 * Returns false where it cannot (another platform, a libc without the symbols): the thread then
 * keeps the process's priority, which is only slower to yield, not wrong.
 */
import { dlopen, FFIType } from "bun:ffi";

const PRIO_PROCESS = 0;

export function lowerThreadPriority(niceIncrement: number): boolean {
  if (process.platform !== "linux") return false;
  try {
    const { symbols } = dlopen("libc.so.6", {
      gettid: { args: [], returns: FFIType.i32 },
      setpriority: { args: [FFIType.i32, FFIType.u32, FFIType.i32], returns: FFIType.i32 },
      getpriority: { args: [FFIType.i32, FFIType.u32], returns: FFIType.i32 },
    });
    const tid = symbols.gettid();
    const current = symbols.getpriority(PRIO_PROCESS, tid);
    return symbols.setpriority(PRIO_PROCESS, tid, Math.min(19, current + niceIncrement)) === 0;
  } catch {
    return false;
  }
}

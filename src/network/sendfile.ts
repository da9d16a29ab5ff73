/**
 * sendfile(2) through bun:ffi, so fetch data goes from the page cache to the socket without being
 * copied through JS memory. Linux only (libc.so.6); the server falls back to pread + write when
 * it is unavailable or disabled.
 */
import { dlopen, FFIType, read } from "bun:ffi";

/** Linux errno values the caller must tell apart. */
export const EAGAIN = 11;
export const EINTR = 4;
export const EPIPE = 32;
export const ECONNRESET = 104;

/** Linux transfers at most 0x7ffff000 bytes per sendfile call. */
export const SENDFILE_MAX_BYTES = 0x7ffff000;

type Libc = ReturnType<typeof openLibc>;

function openLibc() {
  return dlopen("libc.so.6", {
    sendfile: {
      args: [FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.u64_fast],
      returns: FFIType.i64_fast,
    },
    __errno_location: { args: [], returns: FFIType.ptr },
  }).symbols;
}

let libc: Libc | null | undefined;

/** Loads libc once; null if this platform has no usable sendfile. */
function loadLibc(): Libc | null {
  if (libc !== undefined) return libc;
  try {
    libc = process.platform === "linux" ? openLibc() : null;
  } catch {
    libc = null;
  }
  return libc;
}

export function isSendfileAvailable(): boolean {
  return loadLibc() !== null;
}

/** The file offset in/out parameter; sendfile runs on the JS thread only, so one is enough. */
const offsetParameter = new BigInt64Array(1);

/**
 * One sendfile call from `inFd` at `position` to the non-blocking socket `outFd`. Returns the
 * bytes sent, or minus errno on failure. 0 (for a non-zero count) means end of file: the range
 * reaches past the file's end, which must not be mistaken for a full socket.
 */
export function sendfile(
  outFd: number,
  inFd: number,
  position: number,
  countBytes: number,
): number {
  const c = loadLibc();
  if (c === null) throw new Error("sendfile is not available on this platform");
  offsetParameter[0] = BigInt(position);
  const wantBytes = Math.min(countBytes, SENDFILE_MAX_BYTES);
  const sentBytes = Number(c.sendfile(outFd, inFd, offsetParameter, wantBytes));
  if (sentBytes >= 0) return sentBytes;
  return -read.i32(c.__errno_location()!, 0);
}

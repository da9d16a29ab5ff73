import { ErrorCode } from "../protocol/errors.ts";

/**
 * PRODUCER_FENCED exists on the wire only from the versions of KIP-588; older clients get
 * INVALID_PRODUCER_EPOCH for it, as Kafka's KafkaApis answers.
 */
export function fencedForVersion(
  errorCode: number,
  apiVersion: number,
  firstVersion: number,
): number {
  if (errorCode === ErrorCode.PRODUCER_FENCED && apiVersion < firstVersion) {
    return ErrorCode.INVALID_PRODUCER_EPOCH;
  }
  return errorCode;
}

/**
 * A broker's requests to the active controller: AlterPartition (a leader's ISR change, which
 * the ReplicaManager proposes) and ControlledShutdown (before the broker stops). The
 * controller's endpoint comes from the broker's metadata (`resolveController`); when it is
 * unknown, unreachable or no longer the controller, the request is retried against whoever is
 * the controller by then, until the deadline.
 */

import {
  InterBrokerClient,
  InterBrokerError,
  type InterBrokerSecurity,
  PLAINTEXT_SECURITY,
} from "../network/inter-broker-client.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { ALTER_PARTITION_VERSION, CONTROLLED_SHUTDOWN_VERSION } from "./controller-requests.ts";

export interface ControllerEndpoint {
  readonly id: number;
  readonly host: string;
  readonly port: number;
}

export interface AlterIsrOutcome {
  readonly errorCode: number;
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
  readonly isr: readonly number[];
}

const RETRY_DELAY_MS = 200;

export class ControllerClient {
  private client: Promise<InterBrokerClient> | null = null;
  private clientFor = -1;

  constructor(
    private readonly brokerId: number,
    private readonly resolveController: () => ControllerEndpoint | null,
    private readonly requestTimeoutMs: number,
    /** This broker's epoch (KIP-380), which both requests carry; -1 before it registered. */
    private readonly brokerEpoch: () => bigint = () => -1n,
    /** The inter-broker listener's TLS and SASL, which the controller's channels use too. */
    readonly security: InterBrokerSecurity = PLAINTEXT_SECURITY,
  ) {}

  /** The AlterIsr function the ReplicaManager is given. */
  readonly alterIsr = async (
    topic: string,
    partition: number,
    leaderEpoch: number,
    partitionEpoch: number,
    newIsr: readonly number[],
  ): Promise<AlterIsrOutcome> => {
    const failed = (errorCode: number) => ({ errorCode, leaderEpoch, partitionEpoch, isr: [] });
    const response = await this.withController(async (client) => {
      const answer = await client.request(
        ApiKey.AlterPartition,
        ALTER_PARTITION_VERSION,
        {
          brokerId: this.brokerId,
          brokerEpoch: this.brokerEpoch(),
          topics: [
            {
              topicName: topic,
              partitions: [
                {
                  partitionIndex: partition,
                  leaderEpoch,
                  newIsr: [...newIsr],
                  leaderRecoveryState: 0,
                  partitionEpoch,
                },
              ],
            },
          ],
        },
        this.requestTimeoutMs,
      );
      return answer.errorCode === ErrorCode.NOT_CONTROLLER ? null : answer;
    });
    if (response === null) return failed(ErrorCode.REQUEST_TIMED_OUT);
    if (response.errorCode !== ErrorCode.NONE) return failed(response.errorCode);
    const p = response.topics[0]?.partitions[0];
    if (p === undefined) return failed(ErrorCode.UNKNOWN_SERVER_ERROR);
    return {
      errorCode: p.errorCode,
      leaderEpoch: p.leaderEpoch,
      partitionEpoch: p.partitionEpoch,
      isr: p.isr,
    };
  };

  /**
   * Asks the controller to move this broker's leaderships away. Resolves with the number of
   * partitions it still leads (0: all moved), or -1 when no controller answered within
   * `timeoutMs`.
   */
  async controlledShutdown(timeoutMs: number): Promise<number> {
    const response = await this.withController(async (client) => {
      const answer = await client.request(
        ApiKey.ControlledShutdown,
        CONTROLLED_SHUTDOWN_VERSION,
        { brokerId: this.brokerId, brokerEpoch: this.brokerEpoch() },
        timeoutMs,
      );
      return answer.errorCode === ErrorCode.NOT_CONTROLLER ? null : answer;
    }, timeoutMs);
    if (response === null || response.errorCode !== ErrorCode.NONE) return -1;
    return response.remainingPartitions.length;
  }

  close(): void {
    void this.client?.then(
      (c) => c.close(),
      () => {},
    );
    this.client = null;
  }

  /** Runs `call` against the current controller until it answers (non-null) or time runs out. */
  private async withController<T>(
    call: (client: InterBrokerClient) => Promise<T | null>,
    timeoutMs = this.requestTimeoutMs,
  ): Promise<T | null> {
    const deadlineMs = Date.now() + timeoutMs;
    while (Date.now() < deadlineMs) {
      const endpoint = this.resolveController();
      if (endpoint !== null) {
        try {
          const answer = await call(await this.connection(endpoint));
          if (answer !== null) return answer;
        } catch (error) {
          if (!(error instanceof InterBrokerError)) throw error;
          this.close();
        }
      }
      await Bun.sleep(RETRY_DELAY_MS);
    }
    return null;
  }

  /** One connection to the controller, shared by concurrent callers. */
  private async connection(endpoint: ControllerEndpoint): Promise<InterBrokerClient> {
    if (this.client !== null && this.clientFor === endpoint.id) {
      const client = await this.client;
      if (!client.isClosed) return client;
    }
    this.close();
    this.clientFor = endpoint.id;
    this.client = InterBrokerClient.connect(endpoint.host, endpoint.port, {
      ...this.security,
      clientId: `quill-broker-${this.brokerId}`,
      connectTimeoutMs: this.requestTimeoutMs,
    });
    return await this.client;
  }
}

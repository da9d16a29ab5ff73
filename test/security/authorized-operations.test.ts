import { expect, test } from "bun:test";
import {
  AclOperation,
  type AuthorizationAction,
  authorizedOperations,
  clusterAuthorizedOperations,
  type RequestAuthorizer,
  ResourceType,
  supportedOperations,
} from "../../src/security/authorized-operations.ts";

/** Allows exactly the listed operations, recording what it was asked. */
class ListAuthorizer implements RequestAuthorizer {
  readonly asked: AuthorizationAction[] = [];
  constructor(private readonly allowed: readonly number[]) {}
  authorize(actions: readonly AuthorizationAction[]): readonly boolean[] {
    this.asked.push(...actions);
    return actions.map((a) => this.allowed.includes(a.operation));
  }
}

const bits = (...ops: number[]) => ops.reduce((field, op) => field | (1 << op), 0);
const { READ, WRITE, DESCRIBE, ALTER, DELETE } = AclOperation;

test("without an authorizer: every operation of the type, as Kafka 3.9's bit fields", () => {
  expect(authorizedOperations(ResourceType.TOPIC, "t")).toBe(3576);
  expect(authorizedOperations(ResourceType.GROUP, "g")).toBe(328);
  expect(clusterAuthorizedOperations()).toBe(8096);
  expect(authorizedOperations(ResourceType.TRANSACTIONAL_ID, "tx")).toBe(bits(WRITE, DESCRIBE));
  expect(supportedOperations(ResourceType.USER)).toEqual([
    AclOperation.CREATE_TOKENS,
    AclOperation.DESCRIBE_TOKENS,
  ]);
});

test("with an authorizer: only what it allows, asked once per supported operation", () => {
  const authorizer = new ListAuthorizer([READ, DESCRIBE, ALTER]);
  expect(authorizedOperations(ResourceType.GROUP, "g", authorizer)).toBe(bits(READ, DESCRIBE));
  expect(authorizer.asked).toEqual(
    supportedOperations(ResourceType.GROUP).map((operation) => ({
      operation,
      resourceType: ResourceType.GROUP,
      resourceName: "g",
    })),
  );
});

test("the cluster's field is 0 for a caller that may not DESCRIBE the cluster", () => {
  expect(clusterAuthorizedOperations(new ListAuthorizer([ALTER, DELETE]))).toBe(0);
  expect(clusterAuthorizedOperations(new ListAuthorizer([ALTER, DESCRIBE]))).toBe(
    bits(ALTER, DESCRIBE),
  );
});

/**
 * The scenario's steps, in order, and which steps each one needs; shared by scripts/compat.ts
 * (which builds the table) and the TypeScript client programs (which run them).
 */
export const STEPS = [
  "create-topic",
  "produce-gzip",
  "produce-zstd",
  "consume-group",
  "commit",
  "restart-no-redelivery",
  "describe-group",
  "list-offsets",
  "transactions",
  "consume-transform-produce",
  "delete-topic",
] as const;
/**
 * The step of a run over SASL_SSL (scripts/compat.ts --security sasl_ssl), before the others: a
 * client with a wrong password fails as that client reports authentication failures.
 */
export const SECURITY_STEPS = ["wrong-password"] as const;
export type Step = (typeof STEPS)[number] | (typeof SECURITY_STEPS)[number];
/** The client programs that take the SASL_SSL settings and run SECURITY_STEPS (scenario.ts). */
export const SECURITY_CLIENTS = [
  "java",
  "franz-go",
  "confluent-kafka-python",
  "platformatic-kafka",
  "kafka-python",
] as const;

/** The steps whose failure makes a step meaningless, so it is reported as skipped. */
export const DEPENDS_ON: Readonly<Record<Step, readonly Step[]>> = {
  "wrong-password": [],
  "create-topic": [],
  "produce-gzip": ["create-topic"],
  "produce-zstd": ["create-topic"],
  "consume-group": ["produce-gzip", "produce-zstd"],
  commit: ["consume-group"],
  "restart-no-redelivery": ["consume-group", "commit"],
  "describe-group": ["restart-no-redelivery"],
  "list-offsets": ["produce-gzip", "produce-zstd"],
  transactions: ["create-topic"],
  "consume-transform-produce": ["transactions"],
  "delete-topic": ["create-topic"],
};

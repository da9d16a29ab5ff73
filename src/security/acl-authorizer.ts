import type { Logger } from "../util/logger.ts";
import {
  type AccessControlEntry,
  type AclBinding,
  type AclBindingFilter,
  filterMatchesEntry,
  filterMatchesPattern,
  OPERATION_ALL,
  operationName,
  PATTERN_LITERAL,
  PATTERN_PREFIXED,
  PERMISSION_ALLOW,
  PERMISSION_DENY,
  patternKey,
  RESOURCE_TYPE_NAMES,
  type ResourcePattern,
  sameEntry,
  WILDCARD_HOST,
  WILDCARD_PRINCIPAL,
  WILDCARD_RESOURCE,
} from "./acl.ts";
import type { AclStore, AclUpdate, PatternAcls } from "./acl-store.ts";
import {
  AclOperation,
  type AuthorizationAction,
  type RequestAuthorizer,
  type ResourceType,
} from "./authorized-operations.ts";

/** Most ACL entries the broker holds; CreateAcls beyond it is refused. */
export const ACL_ENTRIES_MAX = 1_000_000;
/** Most cached decisions; the cache is emptied when full (and on every ACL change). */
const DECISION_CACHE_MAX = 100_000;

export interface AclAuthorizerConfig {
  /** `super.users`: principals allowed everything. */
  readonly superUsers: readonly string[];
  /** `allow.everyone.if.no.acl.found`. */
  readonly allowEveryoneIfNoAclFound: boolean;
}

/** DESCRIBE is implied by these, DESCRIBE_CONFIGS by ALTER_CONFIGS (Kafka's AclAuthorizer). */
const IMPLYING: ReadonlyMap<number, readonly number[]> = new Map([
  [
    AclOperation.DESCRIBE,
    [
      AclOperation.DESCRIBE,
      AclOperation.READ,
      AclOperation.WRITE,
      AclOperation.DELETE,
      AclOperation.ALTER,
    ],
  ],
  [AclOperation.DESCRIBE_CONFIGS, [AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS]],
]);

/**
 * Kafka 3.9's ZooKeeper-mode AclAuthorizer: super users may do everything; otherwise the ACLs
 * that apply to a resource are its literal ones, the literal `*` ones of its type and the
 * prefixed ones whose prefix starts its name. No ACL at all: `allow.everyone.if.no.acl.found`.
 * Else a DENY for the principal (or `User:*`), host (or `*`) and operation (or ALL) refuses,
 * and an ALLOW of the operation or one implying it is needed.
 *
 * ACLs are held in memory (loaded at start, kept current from the store's change notices), and
 * decisions are cached per principal, host, operation and resource until the next ACL change,
 * so a produce costs one map lookup per topic.
 */
/** One decision as the audit line names it. */
export interface AuditedDecision {
  readonly principal: string;
  readonly host: string;
  readonly operation: number;
  readonly resourceType: ResourceType;
  readonly name: string;
  /** The request's API name (`Fetch`). */
  readonly api: string;
  readonly allowed: boolean;
  readonly logIfDenied: boolean;
}

export class AclAuthorizer {
  private readonly acls = new Map<string, PatternAcls>();
  private readonly decisions = new Map<string, boolean>();
  private readonly superUsers: ReadonlySet<string>;
  private entryCount = 0;
  private stopWatch: () => void = () => {};
  private readonly auditLog: Logger;

  constructor(
    private readonly store: AclStore,
    private readonly config: AclAuthorizerConfig,
    private readonly log: Logger,
  ) {
    this.superUsers = new Set(config.superUsers);
    this.auditLog = log.child("kafka.authorizer.logger");
  }

  async start(): Promise<void> {
    await this.reload();
    this.stopWatch = this.store.watch(
      (changed) => this.apply(changed),
      () => {
        this.reload().catch((e) => this.log.error(`ACL reload failed: ${(e as Error).message}`));
      },
    );
  }

  close(): void {
    this.stopWatch();
  }

  get aclCount(): number {
    return this.entryCount;
  }

  private async reload(): Promise<void> {
    const all = await this.store.loadAll();
    this.acls.clear();
    this.entryCount = 0;
    for (const p of all) this.apply(p);
    this.decisions.clear();
  }

  private apply({ pattern, entries }: PatternAcls): void {
    const k = patternKey(pattern);
    this.entryCount -= this.acls.get(k)?.entries.length ?? 0;
    if (entries.length === 0) this.acls.delete(k);
    else this.acls.set(k, { pattern, entries });
    this.entryCount += entries.length;
    this.decisions.clear();
  }

  /** One decision, cached until the ACLs change. */
  authorize(
    principal: string,
    host: string,
    operation: number,
    resourceType: ResourceType,
    name: string,
  ): boolean {
    const cacheKey = `${principal}\u0000${host}\u0000${operation}:${resourceType}:${name}`;
    const cached = this.decisions.get(cacheKey);
    if (cached !== undefined) return cached;
    const allowed = this.decide(principal, host, operation, resourceType, name);
    if (this.decisions.size >= DECISION_CACHE_MAX) this.decisions.clear();
    this.decisions.set(cacheKey, allowed);
    return allowed;
  }

  /**
   * Kafka's audit line (kafka.authorizer.logger): a denial at INFO when the request asked for
   * the resource (not when it only filters a listing), a grant at DEBUG.
   */
  audit(decision: AuditedDecision): void {
    const { allowed } = decision;
    if (allowed ? !this.auditLog.enabled("DEBUG") : !decision.logIfDenied) return;
    const line =
      `Principal = ${decision.principal} is ${allowed ? "Allowed" : "Denied"} Operation = ` +
      `${operationName(decision.operation)} from host = ${decision.host} on resource = ` +
      `${RESOURCE_TYPE_NAMES[decision.resourceType]}:LITERAL:${decision.name} for request = ` +
      `${decision.api} with resourceRefCount = 1`;
    if (allowed) this.auditLog.debug(line);
    else this.auditLog.info(line);
  }

  /** The authorizer bound to one request's principal and client address. */
  forRequest(principal: string, host: string): RequestAuthorizer {
    return {
      authorize: (actions: readonly AuthorizationAction[]) =>
        actions.map((a) =>
          this.authorize(principal, host, a.operation, a.resourceType, a.resourceName),
        ),
    };
  }

  private decide(
    principal: string,
    host: string,
    operation: number,
    resourceType: ResourceType,
    name: string,
  ): boolean {
    if (this.superUsers.has(principal)) return true;
    const entries = this.matchingEntries(resourceType, name);
    if (entries.length === 0) return this.config.allowEveryoneIfNoAclFound;
    const applies = (e: AccessControlEntry, op: number, permission: number) =>
      e.permissionType === permission &&
      (e.principal === principal || e.principal === WILDCARD_PRINCIPAL) &&
      (e.operation === op || e.operation === OPERATION_ALL) &&
      (e.host === host || e.host === WILDCARD_HOST);
    if (entries.some((e) => applies(e, operation, PERMISSION_DENY))) return false;
    const allowing = IMPLYING.get(operation) ?? [operation];
    return allowing.some((op) => entries.some((e) => applies(e, op, PERMISSION_ALLOW)));
  }

  private matchingEntries(resourceType: ResourceType, name: string): AccessControlEntry[] {
    const out: AccessControlEntry[] = [];
    const add = (
      patternName: string,
      patternType: typeof PATTERN_LITERAL | typeof PATTERN_PREFIXED,
    ) => {
      const found = this.acls.get(patternKey({ resourceType, name: patternName, patternType }));
      if (found !== undefined) out.push(...found.entries);
    };
    add(name, PATTERN_LITERAL);
    if (name !== WILDCARD_RESOURCE) add(WILDCARD_RESOURCE, PATTERN_LITERAL);
    for (let length = 1; length <= name.length; length++)
      add(name.slice(0, length), PATTERN_PREFIXED);
    return out;
  }

  /**
   * Kafka's authorizeByResourceType: may the principal do `operation` on at least one resource
   * of the type (InitProducerId without a transactional id asks it for WRITE on topics)? True
   * for super users, and when some ALLOW for it is not cancelled by a DENY that covers it.
   */
  authorizeByResourceType(
    principal: string,
    host: string,
    operation: number,
    resourceType: ResourceType,
  ): boolean {
    if (this.superUsers.has(principal)) return true;
    const matches = (e: AccessControlEntry, permission: number) =>
      e.permissionType === permission &&
      (e.principal === principal || e.principal === WILDCARD_PRINCIPAL) &&
      (e.operation === operation || e.operation === OPERATION_ALL) &&
      (e.host === host || e.host === WILDCARD_HOST);
    const ofType = [...this.acls.values()].filter((p) => p.pattern.resourceType === resourceType);
    const denies = ofType.filter((p) => p.entries.some((e) => matches(e, PERMISSION_DENY)));
    const deniedAll = denies.some(
      (d) => d.pattern.patternType === PATTERN_LITERAL && d.pattern.name === WILDCARD_RESOURCE,
    );
    if (deniedAll) return false;
    const covered = (p: ResourcePattern) =>
      denies.some(({ pattern: d }) =>
        d.patternType === PATTERN_PREFIXED
          ? p.name.startsWith(d.name)
          : p.patternType === PATTERN_LITERAL && d.name === p.name,
      );
    const allowed = ofType.some(
      (p) => p.entries.some((e) => matches(e, PERMISSION_ALLOW)) && !covered(p.pattern),
    );
    if (allowed) return true;
    return this.config.allowEveryoneIfNoAclFound && ofType.length === 0;
  }

  /** Every binding a filter matches (DescribeAcls). */
  describe(filter: AclBindingFilter): AclBinding[] {
    const out: AclBinding[] = [];
    for (const { pattern, entries } of this.acls.values()) {
      if (!filterMatchesPattern(filter, pattern)) continue;
      for (const entry of entries)
        if (filterMatchesEntry(filter, entry)) out.push({ pattern, entry });
    }
    return out;
  }

  /** Adds bindings (existing ones stay once); throws when the limit would be passed. */
  async create(bindings: readonly AclBinding[]): Promise<void> {
    if (this.entryCount + bindings.length > ACL_ENTRIES_MAX) {
      throw new Error(`the broker holds at most ${ACL_ENTRIES_MAX} ACLs`);
    }
    const updates = groupByPattern(bindings).map(
      ([pattern, added]): AclUpdate => ({
        pattern,
        change: (current) => {
          const next = [...current];
          for (const e of added) if (!next.some((c) => sameEntry(c, e))) next.push(e);
          return next;
        },
      }),
    );
    for (const changed of await this.store.update(updates)) this.apply(changed);
  }

  /** Removes what each filter matches; answers, per filter, the bindings removed. */
  async delete(filters: readonly AclBindingFilter[]): Promise<AclBinding[][]> {
    const perFilter = filters.map((f) => this.describe(f));
    const patterns = new Map<string, ResourcePattern>();
    for (const b of perFilter.flat()) patterns.set(patternKey(b.pattern), b.pattern);
    const updates = [...patterns.values()].map(
      (pattern): AclUpdate => ({
        pattern,
        change: (current) =>
          current.filter(
            (e) =>
              !filters.some((f) => filterMatchesPattern(f, pattern) && filterMatchesEntry(f, e)),
          ),
      }),
    );
    for (const changed of await this.store.update(updates)) this.apply(changed);
    return perFilter;
  }
}

function groupByPattern(
  bindings: readonly AclBinding[],
): [ResourcePattern, AccessControlEntry[]][] {
  const groups = new Map<string, [ResourcePattern, AccessControlEntry[]]>();
  for (const { pattern, entry } of bindings) {
    const k = patternKey(pattern);
    const group = groups.get(k) ?? [pattern, []];
    group[1].push(entry);
    groups.set(k, group);
  }
  return [...groups.values()];
}

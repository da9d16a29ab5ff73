/**
 * All partition logs of a broker, spread over its log dirs (Kafka's `log.dirs`). Each log dir
 * holds one `<topic>-<partition>/` directory per log plus, at its top level:
 *
 *   recovery-point-offset-checkpoint   flushed offset per partition (recovery starts there)
 *   log-start-offset-checkpoint        log start offset per partition
 *   replication-offset-checkpoint      high watermark per partition (for replication)
 *   cleaner-offset-checkpoint          how far the LogCleaner has cleaned each compacted log
 *   .kafka_cleanshutdown               present only while the broker is cleanly stopped
 *
 * On open, a log dir with the clean-shutdown marker is loaded without validation; one without
 * it is recovered from its recovery points. The marker is removed once everything is loaded, so
 * a crash from then on is detected at the next start. Background tasks (startBackgroundTasks)
 * apply retention, flush.ms, write the checkpoints and run the LogCleaner (log-cleaner.ts) for
 * compacted logs. Not thread-safe.
 *
 * A log dir fails (KIP-112) when an I/O error hits it: an append, flush, roll or checkpoint
 * write, or opening it at start. Its logs are closed without flushing and forgotten; their
 * partitions stay offline (KAFKA_STORAGE_ERROR) until the broker restarts with the dir working,
 * and the listeners (the replica manager) are told, while the other dirs keep serving.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { TopicPartitionTable } from "../common/topic-partition-table.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { assert } from "../util/assert.ts";
import { type Logger, SILENT_LOGGER } from "../util/logger.ts";
import { mapLimit } from "../util/map-limit.ts";
import { fsyncDirectory, writeFileAtomically } from "./durable-file.ts";
import { isFileSystemSyncAvailable, syncFileSystem } from "./file-system-sync.ts";
import type { LogCleanerConfig, LogCleanerHooks } from "./log-cleaner.ts";
import { DEFAULT_LOG_CLEANER_CONFIG, LogCleaner } from "./log-cleaner.ts";
import type { LogConfig } from "./log-config.ts";
import { DEFAULT_LOG_CONFIG, isCompacted } from "./log-config.ts";
import type { LogEnvironment } from "./log-environment.ts";
import { LOG_FILE_SUFFIX, segmentFileStem } from "./log-segment.ts";
import type { CheckpointEntry } from "./offset-checkpoint-file.ts";
import {
  CLEANER_OFFSET_CHECKPOINT_FILE,
  HIGH_WATERMARK_CHECKPOINT_FILE,
  LOG_START_OFFSET_CHECKPOINT_FILE,
  RECOVERY_POINT_CHECKPOINT_FILE,
  readOffsetCheckpoint,
  writeOffsetCheckpoint,
  writeOffsetCheckpointInBackground,
} from "./offset-checkpoint-file.ts";
import { OpenFilePool } from "./open-file-pool.ts";
import {
  listPartitionDir,
  type PartitionDirListing,
  PREREAD_BUDGET_BYTES,
  type PrereadFiles,
} from "./preread-files.ts";
import { partitionDirName, UnifiedLog } from "./unified-log.ts";

export const CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown";
const DELETE_DIR_SUFFIX = "-delete";
/**
 * Logs closing at once in closeAsync. Measured on the 2-core development machine, 1,000 small
 * fdatasyncs took 1.0-1.4 s one at a time and 0.2-0.5 s with 16 or 32 in flight.
 */
const CLOSE_CONCURRENCY = 32;
/** New logs whose directory and file createLogs makes at once on the thread pool. */
const CREATE_CONCURRENCY = 32;
/** Partition directories listed at once when the broker opens its logs (openAsync). */
const LISTING_CONCURRENCY = 64;
/** The longest the event loop is held by loading logs before timers get a turn (openAsync). */
const LOAD_SLICE_MS = 50;

/** One log dir being opened: what beginLoad read, for loadPartition and finishLoad. */
interface LogDirLoad {
  readonly logDir: string;
  readonly markerPath: string;
  readonly cleanShutdown: boolean;
  readonly recoveryPoints: ReadonlyMap<string, bigint>;
  readonly startOffsets: ReadonlyMap<string, bigint>;
  readonly highWatermarks: ReadonlyMap<string, bigint>;
  readonly cleanerOffsets: ReadonlyMap<string, bigint>;
  /** Names of the partition directories to load. */
  readonly partitionDirs: string[];
  readonly topicConfigs: Map<string, LogConfig>;
}
/** Kafka's legal topic names (Topic.java): at most 249 of [a-zA-Z0-9._-], not "." or "..". */
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;
const PARTITION_DIR = /^(.+)-(\d{1,9})$/;
/** A future log (AlterReplicaLogDirs): `<topic>-<partition>.<32 hex>-future`, as Kafka names it. */
const FUTURE_DIR = /^(.+)-(\d{1,9})\.[0-9a-f]{32}-future$/;
const FUTURE_DIR_SUFFIX = "-future";
/** Components told of a failed log dir (the replica manager, the broker's notification). */
const FAILURE_LISTENERS_MAX = 4;

/** The partitions a failed log dir held, and whether every log dir has now failed. */
export type LogDirFailureListener = (
  logDir: string,
  partitions: readonly { topic: string; partition: number }[],
  allOffline: boolean,
) => void;

/**
 * Whether `error` is the disk refusing (an fs error code such as EIO, ENOSPC, EROFS, ENOENT,
 * directly or as the cause of a KAFKA_STORAGE_ERROR), which fails the log dir, rather than a
 * limit or a closed log, which does not.
 */
export function isIoError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string") return code.startsWith("E");
  if (error instanceof KafkaError && error.code === ErrorCode.KAFKA_STORAGE_ERROR) {
    return isIoError(error.cause);
  }
  return false;
}

export interface LogManagerOptions {
  readonly logDirs: readonly string[];
  /** The config of logs that get no explicit one (Kafka's broker-level log.* defaults). */
  readonly defaultConfig?: LogConfig;
  /** The config of each topic found on disk at startup; defaults to defaultConfig. */
  readonly configForTopic?: (topic: string) => LogConfig;
  /** log.retention.check.interval.ms */
  readonly retentionCheckIntervalMs?: number;
  /** How often flush.ms is checked (Kafka's log.flush.scheduler.interval.ms). */
  readonly flushCheckIntervalMs?: number;
  /** log.flush.offset.checkpoint.interval.ms, also used for the log start offsets. */
  readonly checkpointIntervalMs?: number;
  /** Soft cap on open segment fds across all logs. */
  readonly maxOpenSegmentFiles?: number;
  readonly maxSegmentsPerLog?: number;
  /** Cap on partition logs this broker holds. */
  readonly maxLogs?: number;
  readonly logger?: Logger;
  /** The log.cleaner.* settings; Kafka's defaults when absent. */
  readonly cleaner?: Partial<LogCleanerConfig>;
  readonly cleanerHooks?: LogCleanerHooks;
  /**
   * Whether a clean stop makes the logs durable with one syncfs per log dir rather than file by
   * file; defaults to whether syncfs is available (file-system-sync.ts). Tests set both.
   */
  readonly syncFileSystems?: boolean;
}

const DEFAULTS = {
  retentionCheckIntervalMs: 5 * 60 * 1000,
  flushCheckIntervalMs: 1000,
  checkpointIntervalMs: 60 * 1000,
  maxOpenSegmentFiles: 4096,
  maxSegmentsPerLog: 100_000,
  maxLogs: 100_000,
};

export class LogManager {
  private readonly logs = new Map<string, UnifiedLog>();
  /** `logs` by topic and partition, for `getLog` on the request paths. */
  private readonly logIndex = new TopicPartitionTable<UnifiedLog>();
  private readonly dirOfLog = new Map<UnifiedLog, string>();
  /**
   * Logs per log dir, for placing new ones: counting them at each creation made creating
   * 10,000 partitions quadratic.
   */
  private readonly logCounts = new Map<string, number>();
  /** Log dirs that failed since start (Kafka's offline log dirs). */
  private readonly offlineDirs = new Set<string>();
  /** Partitions whose log was in a failed dir, by `<topic>-<partition>`, with that dir. */
  private readonly offlinePartitions = new Map<string, string>();
  /**
   * Future logs (KIP-113): the copy of a partition being moved to another log dir of this
   * broker, by `<topic>-<partition>`, at most one per partition. They are in dirOfLog (so the
   * checkpoints and a dir failure cover them) but not in `logs`: retention, the cleaner and
   * reads never see them.
   */
  private readonly futureLogs = new Map<string, UnifiedLog>();
  /**
   * Log dirs asked for partitions not hosted yet (AlterReplicaLogDirs before the replica
   * arrives, Kafka's preferredLogDirs): the log is created there. Bounded by maxLogs.
   */
  private readonly preferredLogDirs = new Map<string, string>();
  /** Future dirs found at open, loaded once every dir is read (loadFutureLogs). */
  private foundFutureDirs: FoundFutureDir[] = [];
  private readonly failureListeners = new Set<LogDirFailureListener>();
  /** High watermarks found at open, by `<topic>-<partition>` (one entry per log at most). */
  private readonly checkpointedHighWatermarks = new Map<string, bigint>();
  private readonly timers: ReturnType<typeof setInterval>[] = [];
  private readonly env: LogEnvironment;
  private readonly defaultConfig: LogConfig;
  private readonly maxLogs: number;
  private closed = false;
  /**
   * Bumped by every write of a checkpoint file (by path). A background write made from older
   * entries than the file's latest write skips its rename, so the newest entries always win.
   */
  private readonly checkpointGenerations = new Map<string, number>();
  /** Background checkpoint writes run one after another (they share a temporary file name). */
  private backgroundWrites: Promise<void> = Promise.resolve();
  /** The periodic checkpoint still writing, if any: the next period skips rather than queues. */
  private periodicCheckpoint: Promise<void> | null = null;
  /** Compacts the logs whose cleanup.policy includes compact. */
  readonly cleaner: LogCleaner;

  private constructor(
    readonly logDirs: readonly string[],
    private readonly options: LogManagerOptions,
  ) {
    assert(logDirs.length > 0, "LogManager needs at least one log dir");
    this.defaultConfig = options.defaultConfig ?? DEFAULT_LOG_CONFIG;
    this.maxLogs = options.maxLogs ?? DEFAULTS.maxLogs;
    this.env = {
      pool: new OpenFilePool(options.maxOpenSegmentFiles ?? DEFAULTS.maxOpenSegmentFiles),
      logger: options.logger ?? SILENT_LOGGER,
      maxSegmentsPerLog: options.maxSegmentsPerLog ?? DEFAULTS.maxSegmentsPerLog,
    };
    const onCleaned = options.cleanerHooks?.onCleaned;
    this.cleaner = new LogCleaner(
      { ...DEFAULT_LOG_CLEANER_CONFIG, ...options.cleaner },
      () => this.cleanableLogs(),
      this.env.logger,
      {
        ...options.cleanerHooks,
        // The checkpoint's fdatasync and directory fsync run on the thread pool: on the event
        // loop they held requests for up to tens of ms at the end of every cleaning.
        onCleaned: async (log, result) => {
          const logDir = this.dirOfLog.get(log);
          if (logDir !== undefined) {
            const filePath = path.join(logDir, CLEANER_OFFSET_CHECKPOINT_FILE);
            await this.writeCheckpointInBackground(filePath, this.cleanerEntries(logDir));
          }
          await onCleaned?.(log, result);
        },
      },
    );
  }

  /**
   * The logs the cleaner may pick: not one being moved to another dir (Kafka pauses cleaning
   * for it), so the copy and the cleaner do not both rewrite its segments' worth of records.
   */
  private *cleanableLogs(): Iterable<UnifiedLog> {
    for (const [key, log] of this.logs) if (!this.futureLogs.has(key)) yield log;
  }

  /** Opens every log dir, loading (and if needed recovering) every partition in it. */
  static open(options: LogManagerOptions): LogManager {
    const manager = new LogManager(
      options.logDirs.map((d) => path.resolve(d)),
      options,
    );
    for (const logDir of manager.logDirs) {
      try {
        const load = manager.beginLoad(logDir);
        for (const name of load.partitionDirs) manager.loadPartition(load, name, undefined);
        manager.finishLoad(load);
      } catch (error) {
        if (!isIoError(error)) throw error;
        manager.failLogDir(logDir, error);
      }
    }
    return manager.opened();
  }

  /**
   * As open, for the broker: each log dir's partition directories are listed on the thread
   * pool, LISTING_CONCURRENCY at a time (a directory not in the dentry cache costs a disk read,
   * which one after another on the event loop made most of a start with 10,000 logs), and the
   * logs load in slices of at most LOAD_SLICE_MS between which timers (a ZooKeeper session's
   * pings) run.
   */
  static async openAsync(options: LogManagerOptions): Promise<LogManager> {
    const manager = new LogManager(
      options.logDirs.map((d) => path.resolve(d)),
      options,
    );
    for (const logDir of manager.logDirs) {
      try {
        const load = manager.beginLoad(logDir);
        await manager.loadListedPartitions(load);
        manager.finishLoad(load);
      } catch (error) {
        if (!isIoError(error)) throw error;
        manager.failLogDir(logDir, error);
      }
    }
    return manager.opened();
  }

  /**
   * Loads the partitions of `load` in order, each as soon as its listing (with its small files
   * read ahead, preread-files.ts) is done: up to LISTING_CONCURRENCY listings run on the thread
   * pool ahead of the load, so reading and loading overlap instead of following each other.
   */
  private async loadListedPartitions(load: LogDirLoad): Promise<void> {
    const names = load.partitionDirs;
    const budget = { remainingBytes: PREREAD_BUDGET_BYTES };
    const listings: (Promise<PartitionDirListing> | undefined)[] = new Array(names.length);
    const list = (i: number) => {
      if (i >= names.length) return;
      const listing = listPartitionDir(
        path.join(load.logDir, names[i]!),
        load.cleanShutdown,
        budget,
      );
      // Awaited in turn below; until then a failure must not count as unhandled.
      listing.catch(() => undefined);
      listings[i] = listing;
    };
    for (let i = 0; i < LISTING_CONCURRENCY; i++) list(i);
    let sliceStartMs = performance.now();
    for (let i = 0; i < names.length; i++) {
      const listing = await listings[i]!;
      listings[i] = undefined;
      list(i + LISTING_CONCURRENCY);
      this.loadPartition(load, names[i]!, listing.names, listing.preread);
      if (performance.now() - sliceStartMs < LOAD_SLICE_MS) continue;
      await new Promise((resolve) => setImmediate(resolve));
      sliceStartMs = performance.now();
    }
  }

  /** What open and openAsync do once every log dir is loaded (or failed). */
  private opened(): LogManager {
    this.loadFutureLogs();
    if (this.liveLogDirs.length === 0) {
      throw new KafkaError(
        ErrorCode.KAFKA_STORAGE_ERROR,
        `none of the log dirs ${this.logDirs.join(",")} can be opened`,
      );
    }
    return this;
  }

  /** The log dirs that have not failed. */
  get liveLogDirs(): string[] {
    return this.logDirs.filter((d) => !this.offlineDirs.has(d));
  }

  isLogDirOffline(logDir: string): boolean {
    return this.offlineDirs.has(logDir);
  }

  /** Whether the partition's log was in a log dir that failed (Kafka's HostedPartition.Offline). */
  isOfflinePartition(topic: string, partition: number): boolean {
    return this.offlinePartitions.has(partitionDirName(topic, partition));
  }

  /** Tells `listener` of each log dir that fails from now on. */
  onLogDirFailure(listener: LogDirFailureListener): () => void {
    assert(this.failureListeners.size < FAILURE_LISTENERS_MAX, "too many failure listeners");
    this.failureListeners.add(listener);
    return () => this.failureListeners.delete(listener);
  }

  /**
   * If `error` is an I/O error, fails the dir holding `log` (Kafka's LogDirFailureChannel) and
   * returns true; other errors change nothing.
   */
  maybeFailLogDirOf(log: UnifiedLog, error: unknown): boolean {
    if (!isIoError(error)) return false;
    const logDir = this.dirOfLog.get(log);
    if (logDir !== undefined) this.failLogDir(logDir, error);
    return true;
  }

  /**
   * Takes a log dir offline: its logs are closed without a flush (the disk refuses writes) and
   * forgotten, their partitions recorded as offline, and the listeners told. Idempotent.
   */
  failLogDir(logDir: string, cause: unknown): void {
    if (this.offlineDirs.has(logDir)) return;
    this.offlineDirs.add(logDir);
    this.env.logger.error(`log dir ${logDir} failed, its partitions go offline: ${String(cause)}`);
    const partitions: { topic: string; partition: number }[] = [];
    for (const [log, dir] of [...this.dirOfLog]) {
      if (dir !== logDir) continue;
      const key = partitionDirName(log.topic, log.partition);
      // A future log in the failed dir: only the move ends, the partition keeps serving.
      if (this.futureLogs.get(key) !== log) {
        this.logs.delete(key);
        this.logIndex.delete(log.topic, log.partition);
        this.offlinePartitions.set(key, logDir);
        partitions.push({ topic: log.topic, partition: log.partition });
        // The partition went offline: its move cannot finish (its files stay for a restart).
        const future = this.futureLogs.get(key);
        if (future !== undefined) this.forgetFutureLog(key, future);
      } else {
        this.futureLogs.delete(key);
      }
      this.dirOfLog.delete(log);
      this.closeHandlersOf(log, logDir);
    }
    this.logCounts.delete(logDir);
    const allOffline = this.liveLogDirs.length === 0;
    for (const listener of this.failureListeners) {
      try {
        listener(logDir, partitions, allOffline);
      } catch (error) {
        this.env.logger.error(`log dir failure listener failed: ${String(error)}`);
      }
    }
  }

  private closeHandlersOf(log: UnifiedLog, logDir: string): void {
    try {
      log.closeHandlers();
    } catch (error) {
      this.env.logger.warn(`closing ${log.name} in failed ${logDir}: ${String(error)}`);
    }
  }

  private forgetFutureLog(key: string, future: UnifiedLog): void {
    this.futureLogs.delete(key);
    const dir = this.dirOfLog.get(future);
    this.dirOfLog.delete(future);
    this.closeHandlersOf(future, dir ?? "");
  }

  /**
   * Reads a log dir's checkpoints and lists its partition directories; removes deleted ones and
   * notes future ones (loadFutureLogs loads them once every log dir is loaded).
   */
  private beginLoad(logDir: string): LogDirLoad {
    fs.mkdirSync(logDir, { recursive: true });
    const markerPath = path.join(logDir, CLEAN_SHUTDOWN_FILE);
    const read = (file: string) => readOffsetCheckpoint(path.join(logDir, file), this.env.logger);
    const load: LogDirLoad = {
      logDir,
      markerPath,
      cleanShutdown: fs.existsSync(markerPath),
      recoveryPoints: read(RECOVERY_POINT_CHECKPOINT_FILE),
      startOffsets: read(LOG_START_OFFSET_CHECKPOINT_FILE),
      highWatermarks: read(HIGH_WATERMARK_CHECKPOINT_FILE),
      cleanerOffsets: read(CLEANER_OFFSET_CHECKPOINT_FILE),
      partitionDirs: [],
      topicConfigs: new Map(),
    };
    for (const entry of fs.readdirSync(logDir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      if (entry.name.endsWith(DELETE_DIR_SUFFIX)) {
        this.removeInBackground(path.join(logDir, entry.name));
      } else if (entry.name.endsWith(FUTURE_DIR_SUFFIX)) {
        this.noteFutureDir(load, entry.name);
      } else {
        const match = PARTITION_DIR.exec(entry.name);
        if (match !== null && TOPIC_NAME.test(match[1])) load.partitionDirs.push(entry.name);
      }
    }
    return load;
  }

  private noteFutureDir(load: LogDirLoad, name: string): void {
    const future = FUTURE_DIR.exec(name);
    if (future === null || !TOPIC_NAME.test(future[1])) return;
    const key = partitionDirName(future[1], Number(future[2]));
    this.foundFutureDirs.push({
      logDir: load.logDir,
      name,
      topic: future[1],
      partition: Number(future[2]),
      recoveryPoint: load.recoveryPoints.get(key) ?? 0n,
      logStartOffset: load.startOffsets.get(key) ?? 0n,
      cleanShutdown: load.cleanShutdown,
    });
  }

  /** Loads (recovering after a crash) the log in one partition directory found by beginLoad. */
  private loadPartition(
    load: LogDirLoad,
    name: string,
    listing: readonly string[] | undefined,
    preread?: PrereadFiles,
  ) {
    const match = PARTITION_DIR.exec(name)!;
    const [topic, partition] = [match[1], Number(match[2])];
    const key = partitionDirName(topic, partition);
    const highWatermark = load.highWatermarks.get(key);
    if (highWatermark !== undefined) this.checkpointedHighWatermarks.set(key, highWatermark);
    // One topic's partitions share its config (computing it was a tenth of a 10,000-log load).
    let config = load.topicConfigs.get(topic);
    if (config === undefined) {
      config = this.options.configForTopic?.(topic) ?? this.defaultConfig;
      load.topicConfigs.set(topic, config);
    }
    this.addLog(
      load.logDir,
      UnifiedLog.load({
        dir: path.join(load.logDir, name),
        topic,
        partition,
        config,
        recoveryPoint: load.recoveryPoints.get(key) ?? 0n,
        logStartOffset: load.startOffsets.get(key) ?? 0n,
        cleanerOffset: load.cleanerOffsets.get(key) ?? 0n,
        cleanShutdown: load.cleanShutdown,
        env: this.env,
        listing,
        preread,
      }),
    );
  }

  private finishLoad(load: LogDirLoad): void {
    // The high watermarks are not rewritten here: until the replica manager has set them, each
    // log's is its LEO, and a crash now must still find the ones just read.
    this.writeCheckpoints(load.logDir, false);
    if (load.cleanShutdown) {
      fs.rmSync(load.markerPath);
      fsyncDirectory(load.logDir);
    }
  }

  private addLog(logDir: string, log: UnifiedLog): void {
    const key = partitionDirName(log.topic, log.partition);
    const previous = this.logs.get(key);
    if (previous !== undefined) {
      // Kafka's message: a dir failed while a move swapped the logs; only the operator knows.
      throw new Error(
        `Duplicate log directories for ${key} are found in both ${log.dir} and ` +
          `${previous.dir}. It is likely because log directory failure happened while broker ` +
          "was replacing current replica with future replica. Recover broker from this " +
          "failure by manually deleting one of the two directories for this partition.",
      );
    }
    this.logs.set(key, log);
    this.logIndex.set(log.topic, log.partition, log);
    this.dirOfLog.set(log, logDir);
    this.logCounts.set(logDir, this.logCount(logDir) + 1);
  }

  /** The log dir holding `log` (absolute), or undefined once it is deleted. */
  logDirOf(log: UnifiedLog): string | undefined {
    return this.dirOfLog.get(log);
  }

  getLog(topic: string, partition: number): UnifiedLog | undefined {
    return this.logIndex.get(topic, partition);
  }

  /**
   * The log of a partition, created (in the live log dir with the fewest logs) if missing.
   * `isNew` false (a replica the controller says existed before) refuses to create one while a
   * log dir is offline: the log may be in that dir, and an empty one in its place would lose
   * what the replica held (Kafka's rule). A partition of a failed dir is KAFKA_STORAGE_ERROR.
   */
  getOrCreateLog(topic: string, partition: number, config?: LogConfig, isNew = true): UnifiedLog {
    this.ensureOpen();
    const existing = this.getLog(topic, partition);
    if (existing !== undefined) return existing;
    checkPartitionName(topic, partition);
    const key = partitionDirName(topic, partition);
    const failedDir = this.offlinePartitions.get(key);
    if (failedDir !== undefined || (!isNew && this.offlineDirs.size > 0)) {
      throw new KafkaError(
        ErrorCode.KAFKA_STORAGE_ERROR,
        `Can not create log for ${key} because log directories ` +
          `${[...this.offlineDirs].join(",")} are offline`,
      );
    }
    this.checkLogLimit();
    const logDir = this.logDirForNewLog(key);
    let log: UnifiedLog;
    try {
      log = UnifiedLog.load({
        dir: path.join(logDir, key),
        topic,
        partition,
        config: config ?? this.defaultConfig,
        recoveryPoint: 0n,
        logStartOffset: 0n,
        cleanShutdown: true,
        env: this.env,
      });
    } catch (error) {
      if (!isIoError(error)) throw error;
      this.failLogDir(logDir, error);
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `creating ${key} in ${logDir} failed`);
    }
    // No directory fsync per new log: its first flush with data syncs the directories
    // (UnifiedLog.load). Two syncs per partition made creating 10,000 of them take minutes.
    this.addLog(logDir, log);
    return log;
  }

  /**
   * getOrCreateLog for `partitions` of one topic, with each new log's directory and first file
   * made on the thread pool, CREATE_CONCURRENCY at a time, so that creating thousands of
   * partitions does not hold the event loop for one file-system operation after another
   * (docs/scaling.md, Thousands of partitions). A log that appears meanwhile (a request for the
   * partition created it synchronously) is kept: the file here is made with O_EXCL, so it never
   * truncates one already written.
   */
  async createLogs(topic: string, partitions: readonly number[], config?: LogConfig) {
    await mapLimit(partitions, CREATE_CONCURRENCY, async (partition) => {
      this.ensureOpen();
      const key = partitionDirName(topic, partition);
      // While a log dir is offline the synchronous path decides (it refuses what it must).
      if (this.logs.has(key) || this.offlineDirs.size > 0 || this.offlinePartitions.has(key)) {
        this.getOrCreateLog(topic, partition, config);
        return;
      }
      checkPartitionName(topic, partition);
      this.checkLogLimit();
      await this.createLogInBackground(topic, partition, config);
    });
  }

  private async createLogInBackground(topic: string, partition: number, config?: LogConfig) {
    const logDir = this.logDirForNewLog(partitionDirName(topic, partition));
    const dir = path.join(logDir, partitionDirName(topic, partition));
    // Counted while its files are made, so the logs created at once spread over the dirs.
    this.logCounts.set(logDir, this.logCount(logDir) + 1);
    let fd: number | null;
    try {
      fd = await createLogFilesInBackground(dir);
    } catch (error) {
      if (!isIoError(error)) throw error;
      this.failLogDir(logDir, error);
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `creating ${dir} failed`);
    } finally {
      this.logCounts.set(logDir, this.logCount(logDir) - 1);
    }
    const existing = this.getLog(topic, partition);
    if (fd !== null && !this.closed && existing === undefined) {
      this.addCreatedLog(logDir, topic, partition, config, fd);
      return;
    }
    if (fd !== null) await closeInBackground(fd);
    // Created meanwhile in another log dir: what was made here must not be loaded at start.
    if (fd !== null && existing !== undefined && existing.dir !== dir) {
      await fs.promises.rm(dir, { recursive: true, force: true });
    }
    // The directory was there already: the synchronous path loads whatever it holds.
    if (!this.closed) this.getOrCreateLog(topic, partition, config);
  }

  private addCreatedLog(
    logDir: string,
    topic: string,
    partition: number,
    config: LogConfig | undefined,
    createdLogFd: number,
  ): void {
    const log = UnifiedLog.load({
      dir: path.join(logDir, partitionDirName(topic, partition)),
      topic,
      partition,
      config: config ?? this.defaultConfig,
      recoveryPoint: 0n,
      logStartOffset: 0n,
      cleanShutdown: true,
      env: this.env,
      createdLogFd,
    });
    this.addLog(logDir, log);
  }

  /** Whether `logDir` is one of the configured log dirs (absolute, as DescribeLogDirs names it). */
  isLogDir(logDir: string): boolean {
    return this.logDirs.includes(logDir);
  }

  /** Where the partition's log goes once created here (Kafka's maybeUpdatePreferredLogDir). */
  setPreferredLogDir(topic: string, partition: number, logDir: string): void {
    assert(this.isLogDir(logDir), `${logDir} is not a log dir`);
    const key = partitionDirName(topic, partition);
    if (this.preferredLogDirs.size >= this.maxLogs && !this.preferredLogDirs.has(key)) {
      // The oldest request is forgotten first (Map keeps insertion order).
      this.preferredLogDirs.delete(this.preferredLogDirs.keys().next().value!);
    }
    this.preferredLogDirs.set(key, logDir);
  }

  getFutureLog(topic: string, partition: number): UnifiedLog | undefined {
    return this.futureLogs.get(partitionDirName(topic, partition));
  }

  allFutureLogs(): UnifiedLog[] {
    return [...this.futureLogs.values()];
  }

  /**
   * Creates the future log of a hosted partition in `logDir` (`<topic>-<partition>.<uuid>-future`),
   * empty; the mover fills it. Refused while any log dir is offline, as Kafka refuses it, so a
   * partition never gets futures in two dirs.
   */
  createFutureLog(topic: string, partition: number, logDir: string): UnifiedLog {
    this.ensureOpen();
    const key = partitionDirName(topic, partition);
    const current = this.logs.get(key);
    assert(current !== undefined, `no log of ${key} to move`);
    assert(!this.futureLogs.has(key), `${key} has a future log already`);
    if (this.offlineDirs.size > 0) {
      throw new KafkaError(
        ErrorCode.KAFKA_STORAGE_ERROR,
        `Can not create log for ${key} because log directories ` +
          `${[...this.offlineDirs].join(",")} are offline`,
      );
    }
    const dir = path.join(logDir, `${key}.${crypto.randomUUID().replaceAll("-", "")}-future`);
    let future: UnifiedLog;
    try {
      future = UnifiedLog.load({
        dir,
        topic,
        partition,
        config: current.config,
        recoveryPoint: 0n,
        logStartOffset: 0n,
        cleanShutdown: true,
        env: this.env,
      });
    } catch (error) {
      if (!isIoError(error)) throw error;
      this.failLogDir(logDir, error);
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `creating ${dir} failed`);
    }
    this.futureLogs.set(key, future);
    this.dirOfLog.set(future, logDir);
    return future;
  }

  /** Drops the partition's future log (a move cancelled or replaced); files go in background. */
  removeFutureLog(topic: string, partition: number): void {
    const key = partitionDirName(topic, partition);
    const future = this.futureLogs.get(key);
    if (future === undefined) return;
    const logDir = this.dirOfLog.get(future)!;
    this.futureLogs.delete(key);
    this.dirOfLog.delete(future);
    future.delete().catch((error: unknown) => {
      if (isIoError(error)) this.failLogDir(logDir, error);
      else this.env.logger.warn(`deleting ${future.dir}: ${String(error)}`);
    });
  }

  /**
   * The end of a move (Kafka's replaceCurrentWithFutureLog), in one synchronous step so no
   * append comes between: the future log, as long as the current one, is closed (flushed) with
   * the current's producer state as its snapshot, renamed `<topic>-<partition>` in its dir and
   * loaded, and takes the current's leader epochs (also those no batch carries: a leader's
   * epoch begins at its LEO); then the current log is renamed `-delete` and removed in the
   * background. Returns the new log, or undefined when a dir failed on the way (the current
   * log then stays).
   */
  replaceCurrentWithFutureLog(topic: string, partition: number): UnifiedLog | undefined {
    const key = partitionDirName(topic, partition);
    const source = this.logs.get(key)!;
    const future = this.futureLogs.get(key)!;
    assert(source.logEndOffset === future.logEndOffset, `${key}: future log not caught up`);
    const sourceDir = this.dirOfLog.get(source)!;
    const destDir = this.dirOfLog.get(future)!;
    const target = path.join(destDir, key);
    let log: UnifiedLog;
    try {
      log = this.promoteFutureLog(source, future, target);
    } catch (error) {
      if (!isIoError(error)) throw error;
      this.failLogDir(destDir, error);
      return undefined;
    }
    this.futureLogs.delete(key);
    this.dirOfLog.delete(future);
    this.logs.delete(key);
    this.logIndex.delete(source.topic, source.partition);
    this.dirOfLog.delete(source);
    this.logCounts.set(sourceDir, this.logCount(sourceDir) - 1);
    this.addLog(destDir, log);
    const deleting = source.delete();
    deleting.catch((error: unknown) => {
      if (isIoError(error)) this.failLogDir(sourceDir, error);
      else this.env.logger.warn(`deleting the moved ${source.dir}: ${String(error)}`);
    });
    this.env.logger.info(`${key} moved from ${sourceDir} to ${destDir}`);
    return log;
  }

  private promoteFutureLog(source: UnifiedLog, future: UnifiedLog, target: string): UnifiedLog {
    future.close();
    source.producerState.advanceMapEndOffset(source.logEndOffset);
    source.producerState.writeSnapshotInto(future.dir);
    fs.renameSync(future.dir, target);
    // Durable before the current log leaves: a crash then finds the new log, never neither.
    fsyncDirectory(path.dirname(target));
    const log = UnifiedLog.load({
      dir: target,
      topic: source.topic,
      partition: source.partition,
      config: source.config,
      recoveryPoint: future.flushedOffset,
      logStartOffset: source.logStartOffset,
      cleanerOffset: source.cleanerOffset,
      cleanShutdown: true,
      env: this.env,
    });
    log.highWatermark = source.highWatermark;
    // The copy's epochs came from its batches; the current log may also know epochs no batch
    // carries (a leader's begins at its LEO when it takes over), which must survive the move.
    log.leaderEpochCache.copyFrom(source.leaderEpochCache);
    log.leaderEpochCache.writeIfDirty();
    return log;
  }

  /**
   * The future logs found at open: each is loaded beside its partition's log (recovered if the
   * stop was not clean, so a torn tail is cut) and the replica manager resumes the move. One
   * that cannot be loaded is discarded and the move starts over in the same dir. A future
   * without its partition's log is kept on disk while a dir is offline (the log may be there)
   * and otherwise deleted.
   */
  private loadFutureLogs(): void {
    for (const found of this.foundFutureDirs) {
      const key = partitionDirName(found.topic, found.partition);
      const dir = path.join(found.logDir, found.name);
      if (this.offlineDirs.has(found.logDir)) continue;
      if (!this.logs.has(key) || this.futureLogs.has(key)) {
        if (this.offlineDirs.size > 0 && !this.logs.has(key)) continue;
        this.env.logger.warn(`deleting future log ${dir}: no log of ${key} to move`);
        this.renameForDeletion(dir);
        continue;
      }
      try {
        this.loadFutureLog(found, dir);
      } catch (error) {
        this.env.logger.warn(`discarding future log ${dir}, the move starts over: ${error}`);
        this.renameForDeletion(dir);
        this.createFutureLog(found.topic, found.partition, found.logDir);
      }
    }
    this.foundFutureDirs = [];
  }

  private loadFutureLog(found: FoundFutureDir, dir: string): void {
    const future = UnifiedLog.load({
      dir,
      topic: found.topic,
      partition: found.partition,
      config: this.options.configForTopic?.(found.topic) ?? this.defaultConfig,
      recoveryPoint: found.recoveryPoint,
      logStartOffset: found.logStartOffset,
      cleanShutdown: found.cleanShutdown,
      env: this.env,
    });
    const key = partitionDirName(found.topic, found.partition);
    this.futureLogs.set(key, future);
    this.dirOfLog.set(future, found.logDir);
  }

  private renameForDeletion(dir: string): void {
    const deleted = `${dir}.${crypto.randomUUID().replaceAll("-", "")}${DELETE_DIR_SUFFIX}`;
    fs.renameSync(dir, deleted);
    this.removeInBackground(deleted);
  }

  /**
   * The high watermark the log had when last checkpointed (before this start), if any; the
   * replica manager decides what to make of it (the LEO may be lower after a crash).
   */
  checkpointedHighWatermark(topic: string, partition: number): bigint | undefined {
    return this.checkpointedHighWatermarks.get(partitionDirName(topic, partition));
  }

  /** The number of partition logs held, over all log dirs. */
  get totalLogs(): number {
    return this.logs.size;
  }

  allLogs(): UnifiedLog[] {
    return [...this.logs.values()];
  }

  /** Removes a partition (topic deletion); the files go in the background. */
  async deleteLog(topic: string, partition: number): Promise<void> {
    const key = partitionDirName(topic, partition);
    // The future first: a crash between the two leaves a log, never a future without one.
    this.removeFutureLog(topic, partition);
    this.preferredLogDirs.delete(key);
    // Its files stay on the failed disk; the partition may now be created in a live dir.
    this.offlinePartitions.delete(key);
    const log = this.logs.get(key);
    if (log === undefined) return;
    this.logs.delete(key);
    this.logIndex.delete(topic, partition);
    const logDir = this.dirOfLog.get(log)!;
    this.dirOfLog.delete(log);
    this.logCounts.set(logDir, this.logCount(logDir) - 1);
    await log.delete();
  }

  /** One retention pass over every log; returns the number of segments deleted. */
  cleanupLogs(nowMs = Date.now()): number {
    let deleted = 0;
    for (const log of this.logs.values()) {
      try {
        deleted += log.deleteOldSegments(nowMs);
      } catch (error) {
        if (!this.maybeFailLogDirOf(log, error)) {
          this.env.logger.warn(`retention of ${log.name} failed: ${String(error)}`);
        }
      }
    }
    return deleted;
  }

  /** Writes the recovery-point and log-start-offset checkpoints of every log dir. */
  checkpointLogOffsets(): void {
    for (const logDir of this.liveLogDirs) {
      try {
        this.writeCheckpoints(logDir);
      } catch (error) {
        if (!isIoError(error)) throw error;
        this.failLogDir(logDir, error);
      }
    }
  }

  /**
   * The periodic checkpoint (log.flush.offset.checkpoint.interval.ms): the same files as
   * checkpointLogOffsets, but their fdatasyncs and directory fsyncs run on the thread pool. On
   * the event loop, four files per log dir with two syncs each held every request for tens of
   * ms once a minute, and for longer with thousands of partitions (docs/scaling.md). Resolves
   * when written; a period that finds the last one still writing is skipped.
   */
  checkpointLogOffsetsInBackground(): Promise<void> {
    if (this.periodicCheckpoint !== null) return this.periodicCheckpoint;
    const writes: Promise<void>[] = [];
    for (const logDir of this.liveLogDirs) {
      for (const [filePath, entries] of this.checkpointContents(logDir)) {
        const write = this.writeCheckpointInBackground(filePath, entries).catch((error) => {
          if (!isIoError(error)) throw error;
          this.failLogDir(logDir, error);
        });
        writes.push(write);
      }
    }
    const done = Promise.all(writes).then(
      () => undefined,
      (error: unknown) => this.env.logger.warn(`checkpoint write failed: ${String(error)}`),
    );
    this.periodicCheckpoint = done.finally(() => (this.periodicCheckpoint = null));
    return this.periodicCheckpoint;
  }

  private writeCheckpoint(filePath: string, entries: readonly CheckpointEntry[]): void {
    this.nextGeneration(filePath);
    writeOffsetCheckpoint(filePath, entries);
  }

  private writeCheckpointInBackground(
    filePath: string,
    entries: readonly CheckpointEntry[],
  ): Promise<void> {
    const generation = this.nextGeneration(filePath);
    const stillCurrent = () => this.checkpointGenerations.get(filePath) === generation;
    const write = this.backgroundWrites.then(async () => {
      await writeOffsetCheckpointInBackground(filePath, entries, stillCurrent);
    });
    // The chain goes on after a failure; the caller sees it through `write`.
    this.backgroundWrites = write.catch(() => undefined);
    return write;
  }

  private nextGeneration(filePath: string): number {
    const generation = (this.checkpointGenerations.get(filePath) ?? 0) + 1;
    this.checkpointGenerations.set(filePath, generation);
    return generation;
  }

  /**
   * Rewrites now (after DeleteRecords) the log-start-offset checkpoint of each log dir holding
   * one of `logs`, so a start offset a client is told about survives a crash. One write per dir.
   */
  checkpointLogStartOffsetsOf(logs: readonly UnifiedLog[]): void {
    const logDirs = new Set<string>();
    for (const log of logs) {
      const logDir = this.dirOfLog.get(log);
      if (logDir !== undefined) logDirs.add(logDir);
    }
    for (const logDir of logDirs) this.writeLogStartOffsets(logDir);
  }

  private writeLogStartOffsets(logDir: string): void {
    const startOffsets: CheckpointEntry[] = [];
    for (const [other, dir] of this.dirOfLog) {
      if (dir !== logDir) continue;
      startOffsets.push({
        topic: other.topic,
        partition: other.partition,
        offset: other.logStartOffset,
      });
    }
    this.writeCheckpoint(path.join(logDir, LOG_START_OFFSET_CHECKPOINT_FILE), startOffsets);
  }

  private writeCheckpoints(logDir: string, withHighWatermarks = true): void {
    for (const [filePath, entries] of this.checkpointContents(logDir)) {
      if (!withHighWatermarks && filePath.endsWith(HIGH_WATERMARK_CHECKPOINT_FILE)) continue;
      this.writeCheckpoint(filePath, entries);
    }
  }

  /**
   * The recovery-point, log-start-offset, cleaner-offset (the cleaner offset of every compacted
   * log, and of any other the cleaner has cleaned) and high-watermark checkpoints of a log dir.
   */
  private checkpointContents(logDir: string): [filePath: string, CheckpointEntry[]][] {
    const recoveryPoints: CheckpointEntry[] = [];
    const startOffsets: CheckpointEntry[] = [];
    const highWatermarks: CheckpointEntry[] = [];
    for (const [log, dir] of this.dirOfLog) {
      if (dir !== logDir) continue;
      const { topic, partition } = log;
      recoveryPoints.push({ topic, partition, offset: log.flushedOffset });
      startOffsets.push({ topic, partition, offset: log.logStartOffset });
      highWatermarks.push({ topic, partition, offset: log.highWatermark });
    }
    return [
      [path.join(logDir, RECOVERY_POINT_CHECKPOINT_FILE), recoveryPoints],
      [path.join(logDir, LOG_START_OFFSET_CHECKPOINT_FILE), startOffsets],
      [path.join(logDir, CLEANER_OFFSET_CHECKPOINT_FILE), this.cleanerEntries(logDir)],
      [path.join(logDir, HIGH_WATERMARK_CHECKPOINT_FILE), highWatermarks],
    ];
  }

  private cleanerEntries(logDir: string): CheckpointEntry[] {
    const entries: CheckpointEntry[] = [];
    for (const [log, dir] of this.dirOfLog) {
      if (dir !== logDir || (!isCompacted(log.config) && log.cleanerOffset === 0n)) continue;
      entries.push({ topic: log.topic, partition: log.partition, offset: log.cleanerOffset });
    }
    return entries;
  }

  /**
   * Starts retention, flush.ms and checkpoint timers (unref'd: they never keep Bun alive) and
   * the LogCleaner (unless log.cleaner.enable is false).
   */
  startBackgroundTasks(): void {
    this.ensureOpen();
    if (this.timers.length > 0) return;
    const o = this.options;
    this.every(o.retentionCheckIntervalMs ?? DEFAULTS.retentionCheckIntervalMs, () =>
      this.cleanupLogs(),
    );
    this.every(o.flushCheckIntervalMs ?? DEFAULTS.flushCheckIntervalMs, () => this.flushDueLogs());
    this.every(o.checkpointIntervalMs ?? DEFAULTS.checkpointIntervalMs, () => {
      void this.checkpointLogOffsetsInBackground();
    });
    this.cleaner.start();
  }

  private every(intervalMs: number, task: () => void): void {
    assert(intervalMs > 0, `background task interval ${intervalMs}`);
    const timer = setInterval(() => {
      try {
        task();
      } catch (error) {
        this.env.logger.warn(`background task failed: ${String(error)}`);
      }
    }, intervalMs);
    timer.unref();
    this.timers.push(timer);
  }

  private flushDueLogs(): void {
    const nowMs = Date.now();
    for (const log of this.logs.values()) {
      log.flushIfDue(nowMs)?.catch((error: unknown) => {
        if (this.maybeFailLogDirOf(log, error)) return;
        this.env.logger.warn(`flush.ms flush of ${log.name} failed: ${String(error)}`);
      });
    }
  }

  /** Stops the background tasks (close() does this too); the cleaner stops at its next slice. */
  stop(): void {
    for (const timer of this.timers) clearInterval(timer);
    this.timers.length = 0;
    this.cleaner.requestStop();
  }

  /**
   * Clean shutdown: flushes and closes every log, writes the checkpoints, then the
   * clean-shutdown marker, so the next start skips recovery.
   */
  close(): void {
    if (this.closed) return;
    this.stop();
    this.closed = true;
    let clean = true;
    for (const log of [...this.logs.values(), ...this.futureLogs.values()]) {
      try {
        log.close();
      } catch (error) {
        clean = false;
        this.env.logger.warn(`closing ${log.name} failed: ${String(error)}`);
      }
    }
    this.finishClose(clean);
  }

  /**
   * close, off the event loop: every log's last writes run on the thread pool, up to
   * CLOSE_CONCURRENCY logs at once, and then one syncfs per log dir makes them durable
   * (file-system-sync.ts). Syncing each log's files instead (the fallback where syncfs is
   * missing) costs about six syncs per log, and the disk commits only a few thousand per second
   * whatever runs at once: 30 s and more for 10,000 partitions (docs/scaling.md). The marker is
   * still written only after every log is durable and closed.
   */
  async closeAsync(): Promise<void> {
    if (this.closed) return;
    this.stop();
    this.closed = true;
    await this.cleaner.stop();
    const logs = [...this.logs.values(), ...this.futureLogs.values()];
    const useSyncfs = this.options.syncFileSystems ?? isFileSystemSyncAvailable();
    const clean = useSyncfs
      ? await this.closeSyncingFileSystems(logs)
      : await this.closeSyncingEachLog(logs);
    this.finishClose(clean);
  }

  private async closeSyncingEachLog(logs: readonly UnifiedLog[]): Promise<boolean> {
    let clean = true;
    await mapLimit(logs, CLOSE_CONCURRENCY, async (log) => {
      try {
        await log.closeAsync();
      } catch (error) {
        clean = false;
        this.env.logger.warn(`closing ${log.name} failed: ${String(error)}`);
      }
    });
    return clean;
  }

  /** Every log's writes, then a syncfs per log dir; true when every log is durable. */
  private async closeSyncingFileSystems(logs: readonly UnifiedLog[]): Promise<boolean> {
    const failed = new Set<UnifiedLog>();
    await mapLimit(logs, CLOSE_CONCURRENCY, async (log) => {
      try {
        await log.writeForStop();
      } catch (error) {
        failed.add(log);
        this.env.logger.warn(`closing ${log.name} failed: ${String(error)}`);
      }
    });
    const unsynced = new Set<string>();
    await Promise.all(
      this.liveLogDirs.map((logDir) =>
        syncFileSystem(logDir).catch((error: unknown) => {
          unsynced.add(logDir);
          this.env.logger.warn(`closing the logs in ${logDir} failed: ${String(error)}`);
        }),
      ),
    );
    for (const log of logs) {
      const synced = !failed.has(log) && !unsynced.has(this.dirOfLog.get(log)!);
      log.finishStop(synced);
    }
    return failed.size === 0 && unsynced.size === 0;
  }

  /** The checkpoints, then (only if every log closed) the clean-shutdown markers. */
  private finishClose(clean: boolean): void {
    this.checkpointLogOffsets();
    // Without the marker the next start recovers the log dirs, which is what a failure needs.
    if (!clean) return;
    // A failed dir gets no marker: if it works again at the next start, it is recovered.
    for (const logDir of this.liveLogDirs) {
      writeFileAtomically(path.join(logDir, CLEAN_SHUTDOWN_FILE), new Uint8Array(0));
    }
  }

  /** The number of segment fds open right now (for tests and metrics). */
  get openSegmentFiles(): number {
    return this.env.pool.openCount;
  }

  private leastLoadedLogDir(): string {
    const live = this.liveLogDirs;
    if (live.length === 0) {
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, "every log dir is offline");
    }
    let best = live[0]!;
    for (const dir of live) if (this.logCount(dir) < this.logCount(best)) best = dir;
    return best;
  }

  /** The dir an AlterReplicaLogDirs asked for this partition, if live, else the least loaded. */
  private logDirForNewLog(key: string): string {
    const preferred = this.preferredLogDirs.get(key);
    this.preferredLogDirs.delete(key);
    if (preferred !== undefined && !this.offlineDirs.has(preferred)) return preferred;
    return this.leastLoadedLogDir();
  }

  private logCount(logDir: string): number {
    return this.logCounts.get(logDir) ?? 0;
  }

  private removeInBackground(dir: string): void {
    fs.promises
      .rm(dir, { recursive: true, force: true })
      .catch((error: unknown) => this.env.logger.warn(`removing ${dir}: ${String(error)}`));
  }

  /** createLogs checks before its files are made, so up to CREATE_CONCURRENCY more may come. */
  private checkLogLimit(): void {
    if (this.logs.size >= this.maxLogs) {
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `broker holds ${this.maxLogs} logs`);
    }
  }

  private ensureOpen(): void {
    if (this.closed) throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, "log manager is closed");
  }
}

/**
 * A new log's directory and its first segment's `.log` (base offset 0), on the thread pool;
 * returns the file's fd (read-write), or null when the directory or file already existed.
 */
async function createLogFilesInBackground(dir: string): Promise<number | null> {
  try {
    await fs.promises.mkdir(dir);
  } catch (error) {
    if ((error as { code?: string }).code === "EEXIST") return null;
    throw error;
  }
  const logPath = path.join(dir, segmentFileStem(0n) + LOG_FILE_SUFFIX);
  const { O_RDWR, O_CREAT, O_EXCL } = fs.constants;
  return await new Promise<number | null>((resolve, reject) =>
    fs.open(logPath, O_RDWR | O_CREAT | O_EXCL, (error, fd) => {
      if (error === null) return resolve(fd);
      if (error.code === "EEXIST") return resolve(null);
      reject(error);
    }),
  );
}

/** A future log's directory found while opening a log dir, with its checkpointed offsets. */
interface FoundFutureDir {
  readonly logDir: string;
  readonly name: string;
  readonly topic: string;
  readonly partition: number;
  readonly recoveryPoint: bigint;
  readonly logStartOffset: bigint;
  readonly cleanShutdown: boolean;
}

function closeInBackground(fd: number): Promise<void> {
  return new Promise((resolve) => fs.close(fd, () => resolve()));
}

function checkPartitionName(topic: string, partition: number): void {
  if (!TOPIC_NAME.test(topic) || topic === "." || topic === "..") {
    throw new KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, `illegal topic name "${topic}"`);
  }
  if (!Number.isInteger(partition) || partition < 0 || partition > 999_999_999) {
    throw new KafkaError(ErrorCode.INVALID_PARTITIONS, `illegal partition ${partition}`);
  }
}

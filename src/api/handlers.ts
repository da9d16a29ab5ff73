import { produceHandler } from "./00-produce.ts";
import { fetchHandler } from "./01-fetch.ts";
import { listOffsetsHandler } from "./02-list-offsets.ts";
import { metadataHandler } from "./03-metadata.ts";
import { apiVersionsHandler } from "./18-api-versions.ts";
import { createTopicsHandler } from "./19-create-topics.ts";
import { deleteTopicsHandler } from "./20-delete-topics.ts";
import { describeConfigsHandler } from "./32-describe-configs.ts";
import { alterConfigsHandler } from "./33-alter-configs.ts";
import { createPartitionsHandler } from "./37-create-partitions.ts";
import { incrementalAlterConfigsHandler } from "./44-incremental-alter-configs.ts";
import { describeClusterHandler } from "./60-describe-cluster.ts";
import type { ApiHandler } from "./handler.ts";

/** Every API Quill answers; ApiVersions advertises exactly these, with these version ranges. */
export const API_HANDLERS: readonly ApiHandler[] = [
  produceHandler,
  fetchHandler,
  listOffsetsHandler,
  metadataHandler,
  apiVersionsHandler,
  createTopicsHandler,
  deleteTopicsHandler,
  describeConfigsHandler,
  alterConfigsHandler,
  createPartitionsHandler,
  incrementalAlterConfigsHandler,
  describeClusterHandler,
] as readonly ApiHandler[];

import { produceHandler } from "./00-produce.ts";
import { fetchHandler } from "./01-fetch.ts";
import { listOffsetsHandler } from "./02-list-offsets.ts";
import { metadataHandler } from "./03-metadata.ts";
import { apiVersionsHandler } from "./18-api-versions.ts";
import type { ApiHandler } from "./handler.ts";

/** Every API Quill answers; ApiVersions advertises exactly these, with these version ranges. */
export const API_HANDLERS: readonly ApiHandler[] = [
  produceHandler,
  fetchHandler,
  listOffsetsHandler,
  metadataHandler,
  apiVersionsHandler,
] as readonly ApiHandler[];

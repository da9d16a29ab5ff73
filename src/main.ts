// Entry point of the `quill` executable (`bun build --compile src/main.ts`).

import { startBroker } from "./broker/broker.ts";
import { runCli } from "./cli/cli.ts";

// Exit explicitly: once a command is done, nothing left behind (timers, sockets) may keep it alive.
process.exit(await runCli(process.argv.slice(2), startBroker));

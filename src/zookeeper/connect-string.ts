/**
 * ZooKeeper connect strings as Kafka's `zookeeper.connect` takes them:
 * `host:port[,host:port...][/chroot]`. Everything the client does happens under the chroot.
 */
export interface ConnectString {
  /** `host:port,host:port`, without the chroot. */
  readonly hosts: string;
  /** `/quill/cluster-a`, or null when the client works at the real root. */
  readonly chroot: string | null;
}

export class InvalidConnectStringError extends Error {
  override readonly name = "InvalidConnectStringError";
}

export function parseConnectString(connectString: string): ConnectString {
  const slash = connectString.indexOf("/");
  const hosts = slash === -1 ? connectString : connectString.slice(0, slash);
  const rawChroot = slash === -1 ? "" : connectString.slice(slash);
  const chroot = rawChroot === "" || rawChroot === "/" ? null : rawChroot;
  const hostList = hosts.split(",");
  for (const host of hostList) {
    if (!/^[^\s:,/]+(:\d{1,5})?$/.test(host)) {
      throw new InvalidConnectStringError(`bad ZooKeeper host "${host}" in "${connectString}"`);
    }
  }
  if (chroot !== null && (chroot.endsWith("/") || chroot.includes("//"))) {
    throw new InvalidConnectStringError(`bad ZooKeeper chroot "${chroot}" in "${connectString}"`);
  }
  return { hosts, chroot };
}

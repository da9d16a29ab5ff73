import { expect, test } from "bun:test";
import {
  InvalidConnectStringError,
  parseConnectString,
} from "../../src/zookeeper/connect-string.ts";

test("hosts and chroot are split as Kafka's zookeeper.connect reads them", () => {
  expect(parseConnectString("zk1:2181")).toEqual({ hosts: "zk1:2181", chroot: null });
  expect(parseConnectString("zk1:2181,zk2:2182/kafka/a")).toEqual({
    hosts: "zk1:2181,zk2:2182",
    chroot: "/kafka/a",
  });
  expect(parseConnectString("127.0.0.1:2181/")).toEqual({ hosts: "127.0.0.1:2181", chroot: null });
  expect(parseConnectString("zk1")).toEqual({ hosts: "zk1", chroot: null });
});

test("malformed connect strings are refused with the offending part named", () => {
  for (const bad of ["", "zk1:2181,", "zk1:port", "zk1:2181/a/", "zk1:2181/a//b", ":2181"]) {
    expect(() => parseConnectString(bad)).toThrow(InvalidConnectStringError);
  }
  expect(() => parseConnectString("zk1:2181,,zk2:2181")).toThrow('bad ZooKeeper host ""');
});

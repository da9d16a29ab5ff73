import { describe, expect, test } from "bun:test";
import {
  PrincipalMappingError,
  rfc2253Subject,
  SslPrincipalMapper,
} from "../../src/security/ssl-principal-mapper.ts";

describe("SslPrincipalMapper (Kafka's ssl.principal.mapping.rules)", () => {
  const subject = "CN=alice,OU=eng,O=Example,L=Paris,C=FR";

  test("DEFAULT keeps the whole subject", () => {
    expect(SslPrincipalMapper.fromRules("DEFAULT").name(subject)).toBe(subject);
  });

  test("RULE forms from Kafka's documentation: CN lower- and upper-cased, DEFAULT", () => {
    const rules =
      "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, " +
      "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),C=(.*?)$/$1@$2/U, DEFAULT";
    const mapper = SslPrincipalMapper.fromRules(rules);
    expect(mapper.name("CN=Kafka-Svc,OU=ServiceUsers,O=Org,C=US")).toBe("kafka-svc");
    expect(mapper.name(subject)).toBe("ALICE@ENG");
    expect(mapper.name("CN=other")).toBe("CN=other");
  });

  test("a rule with an escaped slash; no rule applying is refused", () => {
    const mapper = SslPrincipalMapper.fromRules("RULE:^CN=([^,]*)\\/x,.*$/$1/");
    expect(mapper.name("CN=a/x,O=b")).toBe("a");
    expect(() => mapper.name("CN=b")).toThrow(PrincipalMappingError);
  });

  test("malformed rules are refused", () => {
    for (const bad of ["", "RULE:abc", "DEFAULTS", "RULE:a/b/X"]) {
      expect(() => SslPrincipalMapper.fromRules(bad)).toThrow(PrincipalMappingError);
    }
  });

  test("subjects in RFC 2253 order with special characters escaped", () => {
    expect(rfc2253Subject("CN=alice\nOU=eng\nO=Quill")).toBe("O=Quill,OU=eng,CN=alice");
    expect(rfc2253Subject("C=US\nO=A, Inc.\nCN=x+y")).toBe("CN=x\\+y,O=A\\, Inc.,C=US");
  });
});

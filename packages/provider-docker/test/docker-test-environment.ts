import { chooseTestProvider } from "@agent-computer/testing/provider-test";
import { checkDockerHost, dockerProvider } from "../src/index.js";

/**
 * The engine and computer image this package's suites run on, or why they
 * are missing: then `suite` is reported (failing under CI, skipped
 * elsewhere) and the file registers nothing else.
 */
export function dockerTestEnvironment(suite?: string) {
  return chooseTestProvider({ kind: "docker", check: checkDockerHost, create: dockerProvider }, suite);
}

import { describe, expect, it } from "vitest";
import { redactSecrets } from "./redact-secrets.js";

const secrets = [
  "AKIAIOSFODNN7EXAMPLE",
  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
  "hunter2-correct-horse",
  "s3cr3t!pw",
  "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
  "sk-proj-abcdefghijklmnop1234",
];

describe("redactSecrets", () => {
  it.each([
    [
      "an AWS key pair in env assignments",
      `AWS_ACCESS_KEY_ID=${secrets[0]} AWS_SECRET_ACCESS_KEY=${secrets[1]} aws s3 ls`,
    ],
    ["a bearer token", `curl -H "Authorization: Bearer ${secrets[2]}" https://api.example.test`],
    ["a password in a URL", `git clone https://bot:${secrets[3]}@git.example.test/repo.git`],
    ["PASSWORD=...", `PASSWORD=${secrets[4]} ./deploy.sh`],
    ["a --password flag", `mysql --password ${secrets[4]} -u root`],
    ["a --token= flag", `gh auth login --with-token=${secrets[5]}`],
    ["an API key in output", `export OPENAI_API_KEY="${secrets[6]}"`],
    ["a GitHub token alone", `pushing with ${secrets[5]}`],
  ])("masks %s", (_what, text) => {
    const out = redactSecrets(text);
    for (const secret of secrets) expect(out).not.toContain(secret);
    expect(out).toContain("[REDACTED]");
  });

  it("leaves ordinary commands alone", () => {
    const text = "ls -la bots/alpha && grep -r 'password reset' docs/ | head -5";
    expect(redactSecrets(text)).toBe(text);
  });
});

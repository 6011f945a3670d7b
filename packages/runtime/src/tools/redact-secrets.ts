/**
 * Masks what looks like a secret in a command line or its output before it
 * reaches an activity event, a log or an error: cloud and API keys, bearer
 * tokens, passwords in URLs, and values of secret-named variables and flags.
 * Errs on the side of masking: a false positive costs a little context, a
 * false negative leaks a credential.
 */
export function redactSecrets(text: string): string {
  let out = text;
  for (const [pattern, replacement] of RULES) out = out.replace(pattern, replacement as string);
  return out;
}

const MASK = "[REDACTED]";
const SECRET_NAME =
  "[A-Za-z0-9_.-]*(?:pass(?:word|wd)?|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|auth|credential|cookie|session)[A-Za-z0-9_.-]*";

const RULES: readonly (readonly [RegExp, string | ((...m: string[]) => string)])[] = [
  // user:password@ in any URL
  [/([a-z][a-z0-9+.-]*:\/\/[^\s:/@]+):[^\s@/]+@/gi, `$1:${MASK}@`],
  // Authorization: Bearer / Basic / token schemes
  [/\b(bearer|basic|token)(\s+)[A-Za-z0-9._~+/=-]{8,}/gi, `$1$2${MASK}`],
  // AWS access key ids and well-known token prefixes
  [/\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, MASK],
  [
    /\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{16,}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,})\b/g,
    MASK,
  ],
  // JSON Web Tokens
  [/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b/g, MASK],
  // NAME=value and NAME: value where the name says secret (env assignments, config lines)
  [new RegExp(String.raw`\b(${SECRET_NAME})(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s"']+)`, "gi"), `$1$2${MASK}`],
  // --password value, --token=value, -p value is too ambiguous to touch
  [new RegExp(String.raw`(--${SECRET_NAME})(=|\s+)("[^"]*"|'[^']*'|[^\s"']+)`, "gi"), `$1$2${MASK}`],
  // A 40-character secret access key next to an AWS word
  [/(aws[A-Za-z_]*\s*[=:]?\s*["']?)[A-Za-z0-9/+=]{40}\b/gi, `$1${MASK}`],
];

/**
 * The Chromium policy of a display that runs apart from the bot's
 * processes (`dockerProvider({ displayContainer: true })`,
 * docs/architecture.md §4): the bot can no longer reach the browser's
 * process, but it still drives the browser's own UI and writes its
 * profile, and these are the ways left from there to a script in a page a
 * person is about to type a secret into. `javascript:` URLs (typed into the
 * address bar by a desktop action), extensions (planted in the profile)
 * and the DevTools window (opened with a key) are all refused. DevTools
 * over the computer's loopback, which the resident service uses, is not
 * affected.
 */
export const DISPLAY_APART_CHROMIUM_POLICY = Object.freeze({
  // Not DeveloperToolsAvailability: 2, which refuses the loopback DevTools too (measured: 403).
  URLBlocklist: ["javascript://*", "devtools://*"],
  ExtensionInstallBlocklist: ["*"],
});

/** Where Chromium reads managed policies on Linux (Debian's chromium too): the provider mounts the policy here. */
export const CHROMIUM_MANAGED_POLICY_FILE = "/etc/chromium/policies/managed/agent-computer.json";

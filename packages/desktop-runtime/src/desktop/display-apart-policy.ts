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
 * affected. Secure DNS is off: a template planted in the profile's Local
 * State would get every host name a person opens (Chromium already drops
 * it once any managed policy is set; this says so rather than lean on
 * that: kubernetes-display-container.test.ts, "DNS-over-HTTPS"). Nothing
 * a person types is offered for saving (passwords, cards, addresses): the
 * profile it would be saved in is the bot's to read where the display runs
 * apart in a container, and Chromium on Linux without a keyring seals it
 * under a fixed key (its command line's `password-store`).
 */
export const DISPLAY_APART_CHROMIUM_POLICY = Object.freeze({
  // Not DeveloperToolsAvailability: 2, which refuses the loopback DevTools too (measured: 403).
  URLBlocklist: ["javascript://*", "devtools://*"],
  ExtensionInstallBlocklist: ["*"],
  // A native messaging host's manifest in the profile names a program to run on the display side.
  NativeMessagingBlocklist: ["*"],
  NativeMessagingUserLevelHosts: false,
  DnsOverHttpsMode: "off",
  PasswordManagerEnabled: false,
  // Chromium 156 marks these two "Deprecated" for its list policy AutofillSettings, and still
  // applies them (each blocks its kind of autofill everywhere); that list's schema is not one this
  // repository has a source for.
  AutofillCreditCardEnabled: false,
  AutofillAddressEnabled: false,
});

/** The policies of DISPLAY_APART_CHROMIUM_POLICY that Chromium 156 applies with the status "Deprecated". */
export const DISPLAY_APART_DEPRECATED_POLICIES = Object.freeze(["AutofillCreditCardEnabled", "AutofillAddressEnabled"]);

/** Where Chromium reads managed policies on Linux (Debian's chromium too): the provider mounts the policy here. */
export const CHROMIUM_MANAGED_POLICY_FILE = "/etc/chromium/policies/managed/agent-computer.json";

/**
 * The port of the computer's loopback proxy (computer/desktop/loopback-proxy.ts):
 * a display apart from its computer sends loopback URLs there, so pages the
 * bot serves on the computer's `localhost` still load.
 */
export const LOOPBACK_PROXY_PORT = 6090;

/**
 * The port of the computer's terminal host (computer/desktop/terminal-host.ts):
 * a display apart from its computer opens a person's terminals there, so
 * their shells run beside the bot's processes (issue 46).
 */
export const TERMINAL_HOST_PORT = 6091;

/**
 * The environment variable that tells a display container's gateway where
 * its computer's terminal host is (`host:port`); without it terminals open
 * beside the display.
 */
export const TERMINAL_HOST_ENV = "AGENT_COMPUTER_TERMINAL_HOST";

/**
 * The environment variable that tells a display container's `desktop`
 * where its computer's loopback proxy is (`socks5://host:port`).
 */
export const LOOPBACK_PROXY_ENV = "AGENT_COMPUTER_LOOPBACK_PROXY";

/**
 * The main command of a computer whose display runs apart: it keeps the
 * loopback proxy and the terminal host running (a bot that stops them only
 * cuts its own pages and a person's terminals off) and lives as long as
 * the container.
 */
export const LOOPBACK_PROXY_COMMAND = Object.freeze([
  "sh",
  "-c",
  "while :; do desktop loopback-proxy >/dev/null 2>&1; sleep 1; done & exec sleep infinity",
]);

/**
 * The display side's own home: its programs (openbox, x11vnc, Chromium's
 * NSS database and fonts, Python) take their configuration from here, never
 * from the workspace home, which the bot writes (issue 45, finding 1). The
 * workspace is still where bots' profiles and downloads live (`--home`, the
 * policy's DownloadDirectory). A provider gives it a memory file system of
 * DISPLAY_HOME_BYTES (counted in the display's memory).
 */
export const DISPLAY_HOME = "/run/agent-computer-display";
/** Room for the display's programs' caches and logs. */
export const DISPLAY_HOME_BYTES = 256 * 1024 * 1024;
/** The display side's environment besides HOME: every XDG folder in DISPLAY_HOME, and no Python user site. */
export const DISPLAY_HOME_ENV: Readonly<Record<string, string>> = Object.freeze(displayHomeEnvOf(DISPLAY_HOME));

function displayHomeEnvOf(home: string): Record<string, string> {
  return {
    XDG_CONFIG_HOME: `${home}/config`,
    XDG_DATA_HOME: `${home}/data`,
    XDG_CACHE_HOME: `${home}/cache`,
    XDG_STATE_HOME: `${home}/state`,
    PYTHONNOUSERSITE: "1",
  };
}

/**
 * The environment variable that makes a display's Chromium offer DevTools
 * on a pipe instead of a TCP port (`"pipe"`): where the display shares the
 * bot's loopback but not its files (a Kubernetes pod), its DevTools is then
 * a Unix socket in the display's own file system
 * (computer/desktop/devtools-pipe-bridge.ts), which no process of the bot
 * reaches.
 */
export const DEVTOOLS_TRANSPORT_ENV = "AGENT_COMPUTER_DEVTOOLS";

/**
 * The environment variable that makes a display's X server admit only
 * clients holding its cookie (`"cookie"`), in a file of the display's own
 * user (computer/desktop/display-isolation.ts): where the display runs as a second
 * user beside the bot's processes, which reach its sockets.
 */
export const X_ACCESS_ENV = "AGENT_COMPUTER_X_ACCESS";

/** The environment variable naming the display's state folder (slots, the gateway's files, the X cookie). */
export const DESKTOP_STATE_ENV = "AGENT_COMPUTER_DESKTOP_STATE";

/**
 * The environment of the display's programs where they run as a second
 * user of the bot's machine, whose own home is `displayHome` (0700, never
 * the bot's): its programs' configuration there (as DISPLAY_HOME_ENV does
 * in a display container), its state folder there, DevTools on a pipe, X
 * behind a cookie, and a person's terminals on the bot's terminal host on
 * loopback, so they run as the bot's user.
 */
export function secondUserDisplayEnv(displayHome: string): Record<string, string> {
  return {
    HOME: displayHome,
    ...displayHomeEnvOf(displayHome),
    [DESKTOP_STATE_ENV]: `${displayHome}/desktops`,
    [DEVTOOLS_TRANSPORT_ENV]: "pipe",
    [X_ACCESS_ENV]: "cookie",
    [TERMINAL_HOST_ENV]: `127.0.0.1:${TERMINAL_HOST_PORT}`,
  };
}

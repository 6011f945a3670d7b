/** What `agent-computer-mcp --help` prints. */
export const USAGE = `agent-computer-mcp: an MCP server with the agent tools of one bot on its own computer.

Usage:
  agent-computer-mcp            stdio (for Claude Desktop, Cursor, any MCP client)
  MCP_HTTP_PORT=8765 MCP_AUTH_TOKEN=$(openssl rand -hex 32) agent-computer-mcp
                                streamable HTTP at http://127.0.0.1:8765/mcp, bearer token required
  agent-computer-mcp --prepare  builds the Docker computer image with progress, then exits; run it once
                                before the first start (and after an upgrade): the server never builds it
  agent-computer-mcp --help     this text

Where the computer runs: SANDBOX_PROVIDER (default docker)
  docker      a Docker engine (DOCKER_HOST or the local socket) and the computer image (--prepare builds it;
              without it the server refuses to start and says so), AGENT_COMPUTER_IMAGE or _IMAGE_TAG
  kubernetes  KUBERNETES_SANDBOX_NAMESPACE (required), KUBECONFIG, KUBERNETES_SANDBOX_COMPUTER_IMAGE,
              KUBERNETES_SANDBOX_RUNTIME_CLASS_NAME, KUBERNETES_SANDBOX_CPU_LIMIT / _MEMORY_LIMIT,
              KUBERNETES_SANDBOX_POD_LABELS / _POD_ANNOTATIONS, KUBERNETES_SANDBOX_READY_TIMEOUT_MS,
              KUBERNETES_SANDBOX_HOME_CLAIM (+ _HOME_COLOCATE_NAMESPACE, _HOME_COLOCATE_LABELS)
  e2b         E2B_API_KEY and E2B_TEMPLATE (required), E2B_API_URL, E2B_DOMAIN
  novita      NOVITA_API_KEY and NOVITA_TEMPLATE or SANDBOX_TEMPLATE (required), NOVITA_API_URL, NOVITA_DOMAIN
  daytona     DAYTONA_API_KEY (required), DAYTONA_API_URL, DAYTONA_TARGET, DAYTONA_SNAPSHOT
  boat        BOAT_API_KEY (required), BOAT_API_URL, BOAT_SNAPSHOT (box, BOX_*: the old names)
  boxd        BOXD_API_KEY (required), BOXD_ORG, BOXD_API_URL, BOXD_TOKEN_URL, BOXD_SNAPSHOT
  createos    CREATEOS_SANDBOX_API_KEY and CREATEOS_ROOTFS (required), CREATEOS_SANDBOX_BASE_URL
  railway     RAILWAY_API_TOKEN (or a project's RAILWAY_TOKEN), RAILWAY_PROJECT_ID, RAILWAY_ENVIRONMENT_ID and
              RAILWAY_IMAGE (the computer image in a registry Railway pulls from) (required), RAILWAY_API_URL
  host        this machine, no container and no isolation: HOST_SANDBOX_DISPLAY (private, the default: an X
              display per bot, needs xvfb openbox xdotool x11-utils x11vnc chromium python3 imagemagick;
              or none), HOST_SANDBOX_USER (uid:gid to run commands as, when the server runs as root)
  fake        in-process, commands run on this host in a temporary folder: demos and tests only

The bot: AGENT_COMPUTER_WORKSPACE (default mcp), AGENT_COMPUTER_BOT (default mcp),
  AGENT_COMPUTER_DATA_DIR (homes and state.sqlite; default ~/.agent-computer/mcp-server), MCP_VISION=0 (no screenshot tools).
Secrets the bot types by name, never seeing them: AGENT_COMPUTER_SECRETS_FILE, a JSON file of
  { "<name>": { "value": "...", "origins": ["https://site.example"] } }; typed only into a password field on
  those origins (browser_act with "secret", computer_act's type_secret).
State: leases and computer records in <data dir>/state.sqlite, so the next start reconnects to the same
  computer; AGENT_COMPUTER_DATABASE_URL=postgres://... keeps them in PostgreSQL instead (needs
  @agent-computer/state-store-postgres installed). Servers sharing the state share the computer; a server
  with other state while the computer runs is refused (CONFLICT).
Lifecycle: the computer starts on the first tool call, suspends after SANDBOX_IDLE_MS unused (default 900000,
  15 minutes; 0 = never) and stops when the server exits, unless another server's run still uses it.
HTTP: MCP_HTTP_PORT, MCP_HTTP_HOST (default 127.0.0.1), MCP_AUTH_TOKEN (at least 32 characters),
  MCP_ALLOWED_HOSTS and MCP_ALLOWED_ORIGINS (comma-separated; default the bound address, and localhost
  for a loopback one: any other Host or browser Origin is 403), MCP_MAX_SESSIONS (default 64; when full
  the longest-idle session gives way), MCP_SESSION_IDLE_MS (default 1800000: idle sessions close).
Logs go to stderr; stdout carries the protocol.`;

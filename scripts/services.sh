# shellcheck shell=bash
# Sourced by scripts/test.sh (and by hand, for a development shell): starts the services
# the tests need and exports where they are. `start_postgres` starts a throwaway
# PostgreSQL cluster (stopped by `stop_postgres`); `install_mcp_peers` installs the MCP and
# SMTP test peers; `install_agent_peers` the coding agents' CLIs; `install_browser` installs
# chromium and playwright-core for the browser tests. By hand:
#   source scripts/services.sh && start_postgres && install_mcp_peers
# and `stop_postgres` when done.

# ---------------------------------------------------------------- PostgreSQL
# One throwaway cluster for the whole run, in a temp folder on a free port, removed on
# exit (also on failure). Tests create a fresh database on it each; the store's tests and
# the multi-node tests run on it. initdb refuses root, so as root it runs as `postgres`.
PG_DIR=""
start_postgres() {
  if [[ -n "${AIRLOCK_TEST_PG_URL:-}" ]]; then
    echo "using the PostgreSQL server in AIRLOCK_TEST_PG_URL"
    return
  fi
  local bin
  # shellcheck disable=SC2012 # the folder names are PostgreSQL versions
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [[ -z "$bin" || ! -x "$bin/initdb" ]]; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
      echo "installing PostgreSQL (apt-get)"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
      # shellcheck disable=SC2012
      bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
    else
      echo "PostgreSQL is not installed and cannot be installed here (need root and apt-get)" >&2
      exit 1
    fi
  fi
  local as=()
  PG_DIR=$(mktemp -d /tmp/airlock-pg.XXXXXX)
  if [[ $(id -u) == 0 ]]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    chown postgres "$PG_DIR"
    as=(runuser -u postgres --)
  fi
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "${as[@]}" "$bin/initdb" -D "$PG_DIR/data" -U airlock --auth=trust -E UTF8 >"$PG_DIR/initdb.log" 2>&1 \
    || { cat "$PG_DIR/initdb.log" >&2; exit 1; }
  "${as[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
    -o "-p $port -k $PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=on" start >/dev/null \
    || { cat "$PG_DIR/server.log" >&2; exit 1; }
  PG_STOP=("${as[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -m immediate stop)
  export AIRLOCK_TEST_PG_URL="postgres://airlock@127.0.0.1:$port/postgres"
  echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on port $port"
}
stop_postgres() {
  if [[ -n "$PG_DIR" ]]; then
    "${PG_STOP[@]}" >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
  fi
}

# ---------------------------------------------------------------- MCP test peers
# The MCP tests run real MCP servers (npm: server-filesystem, server-everything) and a real
# MCP client (Python SDK). Installed once into target/test-peers; the tests fail (never
# skip) when they are missing.
MCP_FILESYSTEM_VERSION=2026.8.31
MCP_EVERYTHING_VERSION=2026.8.31
MCP_PYTHON_VERSION=2.3.0
# The SMTP sink of airlock-tools' email delivery test (`python3 -m aiosmtpd`).
AIOSMTPD_VERSION=1.4.6
# The OTLP/HTTP receiver of the telemetry tests (scripts/otlp_receiver.py), built on the
# official protobuf definitions.
OTEL_PROTO_VERSION=1.45.2
install_mcp_peers() {
  local peers="$PWD/target/test-peers/node_modules/@modelcontextprotocol"
  local package
  for package in "server-filesystem@$MCP_FILESYSTEM_VERSION" "server-everything@$MCP_EVERYTHING_VERSION"; do
    if [[ ! -f "$peers/${package%@*}/dist/index.js" ]]; then
      npm install --silent --prefix "$PWD/target/test-peers" "@modelcontextprotocol/$package"
    fi
  done
  export AIRLOCK_TEST_MCP_FILESYSTEM="$peers/server-filesystem"
  export AIRLOCK_TEST_MCP_EVERYTHING="$peers/server-everything"
  if ! python3 -c "import mcp" 2>/dev/null; then
    pip install --quiet "mcp==$MCP_PYTHON_VERSION"
  fi
  if ! python3 -c "import aiosmtpd" 2>/dev/null; then
    pip install --quiet "aiosmtpd==$AIOSMTPD_VERSION"
  fi
  if ! python3 -c "import opentelemetry.proto.collector.trace.v1.trace_service_pb2" 2>/dev/null; then
    pip install --quiet "opentelemetry-proto==$OTEL_PROTO_VERSION"
  fi
}


# ---------------------------------------------------------------- coding agents
# The hook tests (crates/airlock-cli/tests/agents) run the real Claude Code, Codex and
# Gemini CLI offline against a fake model. Pinned, from npm only: Claude Code and Codex
# ship their native binaries as platform optional packages of the same npm release, so
# nothing is downloaded at install or start. The tests fail (never skip) when any is
# missing.
CLAUDE_CODE_VERSION=2.1.332
CODEX_VERSION=0.169.0
GEMINI_CLI_VERSION=0.61.0
install_agent_peers() {
  local prefix="$PWD/target/test-peers"
  local modules="$prefix/node_modules"
  local package version wanted=()
  for package in "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@openai/codex@$CODEX_VERSION" \
    "@google/gemini-cli@$GEMINI_CLI_VERSION"; do
    version=$(node -p "require('$modules/${package%@*}/package.json').version" 2>/dev/null || true)
    if [[ "$version" != "${package##*@}" ]]; then
      wanted+=("$package")
    fi
  done
  if [[ ${#wanted[@]} -gt 0 ]]; then
    npm install --silent --no-fund --no-audit --prefix "$prefix" "${wanted[@]}"
  fi
  export AIRLOCK_TEST_AGENTS="$modules/.bin"
}

# ---------------------------------------------------------------- browser tests
# The web inbox's browser tests (crates/airlock-server/tests/browser) drive Debian's
# chromium with playwright-core (no browser download: it only speaks to /usr/bin/chromium).
# The tests fail (never skip) when either is missing.
PLAYWRIGHT_CORE_VERSION=1.65.1
install_browser() {
  if [[ ! -x /usr/bin/chromium ]]; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
      echo "installing chromium (apt-get)"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
      echo "/usr/bin/chromium is missing and cannot be installed here (need root and apt-get)" >&2
      exit 1
    fi
  fi
  local modules="$PWD/target/test-peers/node_modules"
  if [[ "$(node -p "require('$modules/playwright-core/package.json').version" 2>/dev/null)" != "$PLAYWRIGHT_CORE_VERSION" ]]; then
    npm install --silent --prefix "$PWD/target/test-peers" "playwright-core@$PLAYWRIGHT_CORE_VERSION"
  fi
  export AIRLOCK_TEST_PLAYWRIGHT="$modules"
}

# ---------------------------------------------------------------- security harness
# API fuzzing (scripts/api-fuzz.sh) runs schemathesis from PyPI; fuzzing (scripts/fuzz.sh)
# runs cargo-fuzz from crates.io (libFuzzer flags through RUSTC_BOOTSTRAP=1 on stable).
SCHEMATHESIS_VERSION=4.32.5
CARGO_FUZZ_VERSION=0.13.2
install_schemathesis() {
  if [[ "$(st --version 2>/dev/null)" != *"$SCHEMATHESIS_VERSION"* ]]; then
    pip install --quiet "schemathesis==$SCHEMATHESIS_VERSION"
  fi
}
install_cargo_fuzz() {
  if [[ "$(cargo fuzz --version 2>/dev/null)" != *"$CARGO_FUZZ_VERSION"* ]]; then
    cargo install --locked --version "$CARGO_FUZZ_VERSION" cargo-fuzz
  fi
}

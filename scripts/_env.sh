# Shared by scripts/run and scripts/test: a project virtualenv with the package installed
# (editable) from pyproject.toml, every version pinned by constraints.txt.
# Sourced, not executed. Installs only when the metadata or the pins changed since the
# last install with the same extras.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${KAFKA_MOCK_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
# ensure_env EXTRAS: "" for the base install, else a comma-separated list ("http", "dev").
ensure_env() {
  local extras="$1" stamp digest
  if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
  fi
  digest="$(cat "$ROOT/pyproject.toml" "$ROOT/setup.cfg" "$ROOT/constraints.txt" | sha1sum | cut -c1-12)"
  stamp="$VENV/.installed-$digest-${extras:-base}"
  # An install with the dev extra (everything) also satisfies any other.
  if [ ! -f "$stamp" ] && [ ! -f "$VENV/.installed-$digest-dev" ]; then
    # pip's and the build backend's chatter goes to a log, shown only when the install fails.
    local log="$VENV/install.log"
    echo "installing kafka-mock-broker${extras:+[$extras]} into $VENV (pins: constraints.txt)" >&2
    if ! { "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip \
      && "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        -c "$ROOT/constraints.txt" -e "$ROOT${extras:+[$extras]}"; } >"$log" 2>&1; then
      cat "$log" >&2
      echo "install failed (log: $log)" >&2
      return 1
    fi
    touch "$stamp"
  fi
}
# System tools the test suite drives besides the Python clients (kcat). Installed with
# apt-get when missing and possible (root on Debian/Ubuntu, as on CI); otherwise the
# tests that need them fail and say what to install.
ensure_test_tools() {
  if ! command -v kcat >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q kcat >/dev/null \
      || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q kcat >/dev/null; }
  fi
}

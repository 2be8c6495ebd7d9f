# Shared by scripts/run and scripts/test: a project virtualenv with what setup.cfg pins.
# Sourced, not executed. Installs only when setup.cfg changed since the last install.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${KAFKA_MOCK_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
ensure_env() {
  local extras="$1" stamp
  if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
  fi
  local digest
  digest="$(cat "$ROOT/setup.cfg" "$ROOT/pyproject.toml" | sha1sum | cut -c1-12)"
  stamp="$VENV/.installed-$digest-${extras:-base}"
  # An install with the test extras also satisfies a plain one.
  if [ ! -f "$stamp" ] && [ ! -f "$VENV/.installed-$digest-test" ]; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$ROOT${extras:+[$extras]}"
    touch "$stamp"
  fi
}

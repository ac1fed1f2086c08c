#!/usr/bin/env bash
# Installs what the `hatkit ui` browser tests need, idempotently:
#   - Debian's chromium (only when /usr/bin/chromium is missing), and
#   - Playwright for Python into the given venv.
# Playwright's own browser download is never used (its CDN is unreachable here); the tests
# launch Debian's chromium through `executable_path="/usr/bin/chromium"`.
# Usage: scripts/install_browser.sh VENV   (e.g. scripts/install_browser.sh .venv)
set -euo pipefail
VENV="${1:?usage: $0 VENV (the virtual environment to install playwright into)}"
PLAYWRIGHT_SPEC="playwright==1.65.2"

if [ ! -x /usr/bin/chromium ]; then
    SUDO=""
    if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y chromium
fi

if ! "$VENV/bin/python" -c "import playwright, importlib.metadata as m, sys; \
sys.exit(0 if m.version('playwright') == '${PLAYWRIGHT_SPEC#*==}' else 1)" 2>/dev/null; then
    "$VENV/bin/python" -m pip install -q "$PLAYWRIGHT_SPEC"
fi

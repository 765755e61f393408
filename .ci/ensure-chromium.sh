#!/bin/sh
# Make Debian's `chromium` available for the headless HTML-report test (tests/report/test_chromium.py).
# Idempotent: does nothing when chromium is already on PATH. Never fails the build: when it cannot
# install (no apt-get, not root, no network), it says why and the test skips with that reason.
set -u
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure-chromium: apt-get not available; the Chromium report test will be skipped" >&2
    exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo -n"
    else
        echo "ensure-chromium: not root and no sudo; cannot install chromium; the Chromium report test will be skipped" >&2
        exit 0
    fi
fi
echo "ensure-chromium: installing chromium with apt-get" >&2
if $SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends chromium; then
    exit 0
fi
echo "ensure-chromium: apt-get install chromium failed; the Chromium report test will be skipped" >&2
exit 0

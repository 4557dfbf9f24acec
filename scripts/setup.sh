#!/usr/bin/env bash
# Set up agent-s on a fresh Debian/Ubuntu machine: the system packages it drives and tests
# with, a virtual environment at .venv (from the system Python, so the distribution's PyGObject
# for accessibility and tkinter are visible in it), and the package with its test extras.
#
#   bash scripts/setup.sh          # non-editable install (what CI and users get)
#   bash scripts/setup.sh --dev    # editable install, for working on agent-s itself
set -euo pipefail
cd "$(dirname "$0")/.."

editable=""
[ "${1:-}" = "--dev" ] && editable="-e"

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"

packages=(
  # the virtual desktop: X server, auth cookies, window manager, session bus + accessibility
  xvfb xauth openbox dbus dbus-x11 at-spi2-core libatk-adaptor
  # input, clipboard, window queries (pyautogui covers the mouse; X11 keyboard text via xdotool)
  xdotool xclip x11-utils x11-xserver-utils xdg-utils
  # the code agent's optional sandbox (--code-sandbox bwrap)
  bubblewrap
  # OCR grounding
  tesseract-ocr tesseract-ocr-eng
  # the Python the venv is made from, with PyGObject (AT-SPI) and tkinter from the distribution
  python3 python3-venv python3-pip python3-gi gir1.2-atspi-2.0 python3-tk
  # applications the tests and the built-in task suite drive
  xterm mousepad galculator gtk-3-examples libreoffice-calc libreoffice-gtk3 chromium
  fonts-dejavu-core
)
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null

if [ ! -x .venv/bin/python ]; then
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q $editable ".[test]"
echo "agent-s is installed in .venv: .venv/bin/agent-s --help"

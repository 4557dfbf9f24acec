#!/usr/bin/env bash
# Set up agent-s on a fresh Debian/Ubuntu machine: the system packages it drives and tests
# with, a virtual environment at .venv (from the system Python, so the distribution's PyGObject
# for accessibility and tkinter are visible in it), and the package with its test extras.
#
#   bash scripts/setup.sh               # non-editable install (what CI and users get)
#   bash scripts/setup.sh --dev         # editable install, for working on agent-s itself
#   bash scripts/setup.sh --bench-apps  # only the applications OSWorld's tasks drive (below)
#   bash scripts/setup.sh --desktops    # also GNOME Shell and KWin, headless (--desktop gnome|kde)
#
# Every run is idempotent: what is installed already is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."

editable=""
bench_apps=""
desktops=""
for arg in "$@"; do
  case "$arg" in
    "--dev") editable="-e" ;;
    "--bench-apps") bench_apps=1 ;;
    "--desktops") desktops=1 ;;
    "-h" | "--help") sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $arg (use --dev, --bench-apps, --desktops or --help)" >&2; exit 2 ;;
  esac
done

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "setup.sh: installing system packages needs root: run it as root or install sudo" >&2
    exit 1
  fi
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive

# The applications OSWorld's tasks drive that Debian ships, as "what|package|program": the
# program is what the tasks start or their checks run (`agent-s bench check` looks for it on
# PATH). Tools that task setups install with `sudo apt` come too, so that with no package archive
# at run time the task still finds them.
BENCH_APPS=(
  "GIMP|gimp|gimp"
  "VLC|vlc|vlc"
  "GNOME Videos (Ubuntu's video player)|totem|totem"
  "Thunderbird|thunderbird|thunderbird"
  "LibreOffice Writer|libreoffice-writer|soffice"
  "LibreOffice Calc|libreoffice-calc|soffice"
  "LibreOffice Impress|libreoffice-impress|soffice"
  "LibreOffice GTK3 integration|libreoffice-gtk3|soffice"
  "Chromium (for google-chrome)|chromium|chromium"
  "Files (nautilus)|nautilus|nautilus"
  "terminal: LXTerminal (Ctrl+Alt+T; a VTE terminal, read as GNOME's)|lxterminal|lxterminal"
  "GNOME Terminal|gnome-terminal|gnome-terminal"
  "settings: gsettings (GLib)|libglib2.0-bin|gsettings"
  "settings store: dconf (gsettings backend)|dconf-gsettings-backend|gsettings"
  "settings tool: dconf|dconf-cli|dconf"
  "GNOME desktop settings schemas|gsettings-desktop-schemas|gsettings"
  "GNOME Shell settings schemas|gnome-shell-common|gsettings"
  "GNOME power settings schemas|gnome-settings-daemon-common|gsettings"
  "session bus: dbus-launch|dbus-x11|dbus-launch"
  "sound server: PulseAudio|pulseaudio|pulseaudio"
  "sound control: pactl|pulseaudio-utils|pactl"
  "window tool: wmctrl|wmctrl|wmctrl"
  "setup tool: unzip|unzip|unzip"
  "setup tool: jq|jq|jq"
  "setup tool: sysstat|sysstat|sar"
  "setup tool: xsel|xsel|xsel"
  "setup tool: expect|expect|expect"
  "check tool: bc|bc|bc"
)

installed_version() {
  dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null |
    awk '$1 == "install" && $3 == "installed" {print $4}'
}

install_bench_apps() {
  local entry what package program missing=() available=() candidate
  for entry in "${BENCH_APPS[@]}"; do
    IFS='|' read -r what package program <<<"$entry"
    [ -n "$(installed_version "$package")" ] || missing+=("$package")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    $sudo apt-get update -qq
    for package in "${missing[@]}"; do
      candidate=$(apt-cache policy "$package" 2>/dev/null | awk '/Candidate:/ {print $2}')
      if [ -n "$candidate" ] && [ "$candidate" != "(none)" ]; then
        available+=("$package")
      fi
    done
    if [ "${#available[@]}" -gt 0 ]; then
      echo "installing ${available[*]} (this may take a while)"
      $sudo apt-get install -y -qq --no-install-recommends "${available[@]}" >/dev/null
    fi
  fi
  echo
  echo "Applications for OSWorld tasks:"
  local status failed=0
  for entry in "${BENCH_APPS[@]}"; do
    IFS='|' read -r what package program <<<"$entry"
    version=$(installed_version "$package")
    if [ -z "$version" ]; then
      status="MISSING      (apt has no package $package here)"
      failed=1
    elif [[ " ${missing[*]} " == *" $package "* ]]; then
      status="installed    ($package $version)"
    else
      status="was present  ($package $version)"
    fi
    if [ -n "$version" ] && ! command -v "$program" >/dev/null; then
      status="$status, but $program is not on PATH"
      failed=1
    fi
    printf '  %-38s %s\n' "$what" "$status"
  done
  install_vlc_for_root || failed=1
  echo "Not from Debian: VS Code (\`code\`, Microsoft's apt repository) and Google Chrome"
  echo "(Chromium stands in). \`agent-s bench check DIR\` shows what each task still needs."
  return "$failed"
}

# Debian's /usr/bin/vlc refuses to run as root, and the harness and CI run as root. Move the
# packaged program aside with dpkg-divert (kept across upgrades; /usr/bin/vlc.distrib) and put
# scripts/vlc_as_root.py in its place: it runs the packaged program for other users and, as
# root, starts VLC through libvlc the way the packaged program does (see that file).
install_vlc_for_root() {
  [ -n "$(installed_version vlc-bin)" ] || return 0
  if [ "$(dpkg-divert --truename /usr/bin/vlc)" != /usr/bin/vlc.distrib ]; then
    $sudo dpkg-divert --local --rename --divert /usr/bin/vlc.distrib --add /usr/bin/vlc >/dev/null
  fi
  $sudo install -m 0755 scripts/vlc_as_root.py /usr/bin/vlc
  if vlc --version 2>/dev/null | grep -q '^VLC'; then
    printf '  %-38s %s\n' "VLC as root" "ready (/usr/bin/vlc runs VLC through libvlc as root)"
  else
    printf '  %-38s %s\n' "VLC as root" "FAILED: \`vlc --version\` does not start"
    return 1
  fi
}

if [ -n "$bench_apps" ]; then
  install_bench_apps
  exit
fi

packages=(
  # the virtual desktop: X server, auth cookies, window manager, session bus + accessibility
  xvfb xauth openbox dbus dbus-x11 at-spi2-core libatk-adaptor
  # input, clipboard, window queries (pyautogui covers the mouse; X11 keyboard text via xdotool)
  xdotool xclip x11-utils x11-xserver-utils xdg-utils
  # the prompt-injection tests' stand-in browser and upload (tests/test_injection.py)
  curl
  # the sandbox of model-written code and checks (--code-sandbox auto, the default)
  bubblewrap
  # the Wayland backend (sway: screenshots by grim, text by wtype, wl-clipboard) and its virtual
  # desktop (headless sway); foot and GTK 3 for Python: Wayland-native apps its tests drive
  sway grim wtype wl-clipboard foot gir1.2-gtk-3.0 python3-gi-cairo
  # OCR grounding
  tesseract-ocr tesseract-ocr-eng
  # fc-match: the screen's font, whose glyphs grounding/controls.py matches short labels against
  fontconfig
  # the Python the venv is made from, with PyGObject (AT-SPI) and tkinter from the distribution
  python3 python3-venv python3-pip python3-gi gir1.2-atspi-2.0 python3-tk
  # applications the tests and the built-in task suite drive (rxvt-unicode and lxterminal:
  # terminals that rendered typing code is tested in, beside xterm). The live view (run --view)
  # needs no package of its own (no x11vnc/noVNC: it serves frames itself); its page is tested
  # in the chromium below, headless
  xterm rxvt-unicode lxterminal mousepad galculator gtk-3-examples libreoffice-calc libreoffice-gtk3 chromium
  fonts-dejavu-core
)
# --desktops: the GNOME and KDE Plasma Wayland desktops agent-s drives, for their virtual
# desktops (run --virtual --desktop gnome|kde) and tests
DESKTOP_PACKAGES=(
  # GNOME: the shell (mutter) headless, its screencast read through PipeWire and GStreamer
  gnome-shell mutter pipewire wireplumber gstreamer1.0-pipewire gstreamer1.0-plugins-base
  gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0
  # KDE Plasma: KWin as a virtual Wayland session
  kwin-wayland plasma-wayland-protocols
)
if [ -n "$desktops" ]; then
  packages+=("${DESKTOP_PACKAGES[@]}")
fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null

if [ ! -x .venv/bin/python ]; then
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
# setuptools 77 or newer reads the SPDX licence string in pyproject.toml (tests build the wheel
# without build isolation, with the venv's own)
.venv/bin/python -m pip install -q --upgrade pip "setuptools>=77"
.venv/bin/python -m pip install -q $editable ".[test]"
echo "agent-s is installed in .venv: .venv/bin/agent-s --help"

#!/usr/bin/env bash
# Regenerates screenshots/*.png from a real terminal: sandtop runs in tmux
# on a seeded sandsim demo fleet, each screen is captured with its colours
# (tmux capture-pane -e), turned into HTML by aha, and photographed by
# headless Chromium. Run as root (the demo's cgroups) on a host with no
# other sandboxes: everything on the host shows up. `make screenshots`.
set -euo pipefail
cd "$(dirname "$0")/.."

COLS=${COLS:-132}
ROWS=${ROWS:-36}
OUT=screenshots
BIN=bin/sandtop
SESSION=sandtop-shots-$$
WATCH=sandtop-watch-$$
WORK=$(mktemp -d)

need() {
	command -v "$1" >/dev/null && return
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
}
need tmux tmux
need aha aha
need chromium chromium
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf ] || need fc-list fonts-dejavu-core

cleanup() {
	# Quitting sandtop tears the demo fleet down; killing the session is
	# the fallback (the fleet dies with sandtop either way).
	tmux send-keys -t "$WATCH" q 2>/dev/null || true
	tmux send-keys -t "$SESSION" q 2>/dev/null || true
	tmux kill-session -t "sandtop-replay-$$" 2>/dev/null || true
	sleep 2
	tmux kill-session -t "$WATCH" 2>/dev/null || true
	tmux kill-session -t "$SESSION" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

screen() { tmux capture-pane -p -t "$1"; }

# wait_for SESSION TEXT: until the screen shows TEXT (10 s at most).
wait_for() {
	for _ in $(seq 1 100); do
		screen "$1" | grep -qF -- "$2" && return 0
		sleep 0.1
	done
	echo "timed out waiting for \"$2\" on $1:" >&2
	screen "$1" >&2
	exit 1
}

keys() { tmux send-keys -t "$SESSION" "$@"; sleep 0.4; }

# shot SESSION NAME: the screen as it is now, to $OUT/NAME.png.
shot() {
	local html="$WORK/$2.html"
	{
		printf '<!doctype html><meta charset="utf-8"><style>'
		printf 'html,body{margin:0;background:#101014}'
		printf 'pre{margin:0;padding:12px 14px;font:15px/1.165 "DejaVu Sans Mono",monospace;color:#d8d8d8;white-space:pre}'
		printf '</style><pre>'
		tmux capture-pane -e -p -t "$1" | aha --no-header --black
		printf '</pre>'
	} > "$html"
	chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$WORK/chrome" --hide-scrollbars --force-device-scale-factor=1 \
		--window-size="$((COLS * 9 + 28)),$((ROWS * 35 / 2 + 26))" \
		--screenshot="$OUT/$2.png" "file://$html" >/dev/null 2>&1
	echo "wrote $OUT/$2.png"
}

make -s build
export TERM=xterm-256color
tmux new-session -d -s "$SESSION" -x "$COLS" -y "$ROWS" \
	"$BIN demo --seed 7 --manifest $WORK/manifest.json 2>$WORK/demo.err"
wait_for "$SESSION" "sandboxes"
sleep 2.5 # two refreshes, so CPU% has a value

# The sandbox that ignores SIGTERM: its teardown waits out the grace, long
# enough to photograph while it streams.
stubborn=$(grep -A1 '"name": "containerd-stubborn"' "$WORK/manifest.json" | sed -n 's/.*"id": "\([^"]*\)".*/\1/p')
orphan=$(grep -A1 '"name": "vm0-orphan"' "$WORK/manifest.json" | sed -n 's/.*"id": "\([^"]*\)".*/\1/p')

shot "$SESSION" main

keys / ; keys "id:${orphan:0:12}" Enter
keys l ; keys d
wait_for "$SESSION" "supervisor"
shot "$SESSION" detail
keys d ; keys / ; keys Escape

# Record the fleet while the stubborn sandbox is torn down, for the replay
# shot below.
$BIN record -o "$WORK/demo.rec" --interval 500ms --duration 12s 2>"$WORK/record.err" &
RECORDER=$!
sleep 2

keys / ; keys "id:${stubborn:0:12}" Enter
keys K
wait_for "$SESSION" "Tear down"
shot "$SESSION" confirm
keys y
wait_for "$SESSION" "[OK]"
sleep 1
shot "$SESSION" teardown-running
wait_for "$SESSION" "finished"
sleep 1.2
shot "$SESSION" teardown-done
keys Escape ; keys / ; keys Escape

keys "?"
shot "$SESSION" help
keys "?"

# Replay the recording: the fleet four seconds in, with the time bar.
wait "$RECORDER"
REPLAY=sandtop-replay-$$
tmux new-session -d -s "$REPLAY" -x "$COLS" -y "$ROWS" "$BIN replay $WORK/demo.rec"
wait_for "$REPLAY" "frame 1/"
tmux send-keys -t "$REPLAY" j ; sleep 0.3
tmux send-keys -t "$REPLAY" -l "+4s" ; tmux send-keys -t "$REPLAY" Enter
wait_for "$REPLAY" "jumped to"
tmux send-keys -t "$REPLAY" t t ; sleep 1
shot "$REPLAY" replay
tmux send-keys -t "$REPLAY" q

tmux new-session -d -s "$WATCH" -x "$COLS" -y "$ROWS" "$BIN watch"
wait_for "$WATCH" "READ-ONLY"
sleep 1.5
tmux send-keys -t "$WATCH" K
sleep 0.5
shot "$WATCH" read-only

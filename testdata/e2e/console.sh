#!/usr/bin/env bash
# End-to-end test of the console in a real terminal (tmux): the first-run
# demo (OP-4), pane switching, the live filter, a tool's review view, a
# refresh with its diff preview confirmed, and a confirmation made by a real
# MCP client call approved in the Approvals pane (CO-1..CO-8).
#
# Usage: testdata/e2e/console.sh [TOOLGATE_BINARY]
# Without a binary it builds one. Needs tmux and curl. Exits non-zero with
# the screen on the first failed expectation.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/toolgate-e2e.XXXXXX")
sock="toolgate-e2e-$$"
session=console

command -v tmux >/dev/null || { echo "console.sh: tmux is not installed" >&2; exit 2; }
command -v curl >/dev/null || { echo "console.sh: curl is not installed" >&2; exit 2; }

bin=${1:-}
if [[ -z "$bin" ]]; then
	bin="$work/toolgate"
	(cd "$root" && go build -o "$bin" ./cmd/toolgate)
fi

t() { tmux -L "$sock" "$@"; }
cleanup() {
	t kill-server 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

screen() { t capture-pane -p -t "$session" 2>/dev/null || true; }

fail() {
	echo "FAIL: $*" >&2
	echo "---- screen ----" >&2
	screen >&2
	echo "---- stderr ----" >&2
	cat "$work/stderr" >&2 2>/dev/null || true
	exit 1
}

# wait_for TEXT [SECONDS]: until the screen shows TEXT (fixed string).
wait_for() {
	local want=$1 secs=${2:-15} i
	for ((i = 0; i < secs * 10; i++)); do
		if screen | grep -qF -- "$want"; then return 0; fi
		sleep 0.1
	done
	fail "screen never showed: $want"
}

# wait_re REGEX [SECONDS]: until a line of the screen matches REGEX (ERE).
wait_re() {
	local want=$1 secs=${2:-15} i
	for ((i = 0; i < secs * 10; i++)); do
		if screen | grep -qE -- "$want"; then return 0; fi
		sleep 0.1
	done
	fail "no line of the screen matched: $want"
}

keys() { t send-keys -t "$session" "$@"; sleep 0.15; }
text() { t send-keys -t "$session" -l "$1"; sleep 0.15; }

# A home with no config file: toolgate starts the demo.
mkdir -p "$work/home"
t new-session -d -s "$session" -x 100 -y 30 \
	"cd '$work/home' && env HOME='$work/home' XDG_CONFIG_HOME='$work/home/.config' XDG_DATA_HOME='$work/home/.local/share' NO_COLOR=1 '$bin' 2>'$work/stderr'; echo \$? >'$work/status'"

wait_for "toolgate demo" 20
wait_for "open mode, no auth"
wait_for "confirm secret generated for this session"
url=$(screen | grep -oE 'http://127\.0\.0\.1:[0-9]+/mcp' | head -1)
[[ -n "$url" ]] || fail "no endpoint URL in the header"
echo "endpoint: $url"

# CO-1: upstreams connect; the unreachable one fails.
wait_for "[1 Upstreams 5]"
wait_for "● connected" 20
wait_for "✖ failed" 30
# CO-3: the collision and the drops.
keys 3
wait_for "kept by notes/search"
wait_for "dropped: schema"
wait_for "dropped: pattern"

# CO-2: filter live, open a description: flags and invisible characters.
keys 2
wait_for "[2 Tools"
keys /
text sneaky
wait_for "/sneaky"
wait_for "2 of "
keys Enter
keys Enter
wait_for "hidden-instruction at description"
wait_for "⟦ZWSP⟧"
wait_for "Input schema"
keys Escape
# sneaky's prompt is reviewed like its tool (RV-2, CO-2).
keys Down
keys Enter
wait_for "kind     prompt"
wait_for "hidden-instruction at /description"
keys Escape
keys Escape
wait_for "create_note"

# CO-4: refresh an upstream, see the diff, apply it.
keys 1
keys r
wait_for "Refresh preview: notes"
wait_for "enter applies"
wait_for "no changes"
keys Enter
wait_for "refresh of notes applied"

# CO-6: a real client call waits for the operator; approve it.
h=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
curl -sS -D "$work/headers" "${h[@]}" -o "$work/init.json" \
	-d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}' "$url"
sid=$(grep -i '^mcp-session-id:' "$work/headers" | cut -d' ' -f2 | tr -d '\r')
[[ -n "$sid" ]] || fail "initialize returned no session id: $(cat "$work/init.json")"
curl -sS "${h[@]}" -H "Mcp-Session-Id: $sid" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$url" >/dev/null
preview=$(curl -sS "${h[@]}" -H "Mcp-Session-Id: $sid" \
	-d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_note","arguments":{"text":"from the e2e test"}}}' "$url")
token=$(grep -oE '"confirmToken":"[^"]+"' <<<"$preview" | head -1 | cut -d'"' -f4)
[[ -n "$token" ]] || fail "the preview carried no confirm token: $preview"
curl -sS --max-time 60 "${h[@]}" -H "Mcp-Session-Id: $sid" \
	-d '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_note","arguments":{"text":"from the e2e test","confirm":true,"confirmToken":"'"$token"'"}}}' \
	"$url" >"$work/confirm.json" 2>&1 &
confirm_pid=$!

wait_for "⚑ 1 pending approval"
keys 5
wait_for "[5 Approvals 1]"
wait_for "from the e2e test"
keys a
wait_for "create_note approved"
for ((i = 0; i < 100; i++)); do
	kill -0 "$confirm_pid" 2>/dev/null || break
	sleep 0.1
done
wait "$confirm_pid" || fail "the confirming call failed: $(cat "$work/confirm.json")"
grep -q "note created" "$work/confirm.json" || fail "the approved call did not run: $(cat "$work/confirm.json")"
if screen | grep -qF "pending approval"; then fail "the badge stayed after the approval"; fi

# CO-5 and CO-7: the session and the calls are visible. The pane names the
# session by its key (core.SessionKey), never its id (SV-2).
keys 4
key=$(printf 'toolgate session key\0%s' "$sid" | sha256sum | cut -c1-9)
wait_for "$key"
if screen | grep -qF "${sid:0:12}"; then fail "the Sessions pane shows the session id"; fi
wait_for "e2e 1"
keys 6
wait_for "create_note (notes)"
wait_for "preview"

# The demo's policies (PO-1, PO-4): a note that looks like it holds a
# password is refused with the rule's reason; the Policies pane lists the
# rules and the limit, the deny rule with its hit; the Upstreams list
# counts the one call that reached notes in its traffic columns (CO-1).
denied=$(curl -sS "${h[@]}" -H "Mcp-Session-Id: $sid" \
	-d '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"create_note","arguments":{"text":"wifi password: hunter2"}}}' "$url")
grep -q "notes must not hold passwords, API keys or secrets" <<<"$denied" || fail "the note with a password was not denied: $denied"
keys 7
wait_for "no-secrets-in-notes"
wait_for "list-all-needs-operator"
wait_for "forecast-rate"
wait_re 'no-secrets-in-notes +deny .* 1 +'
keys 1
wait_for "CALLS/MIN"
wait_re 'notes +● connected +[0-9]+ +0\.1 +[^ ]+ +0\.0%'

# CO-8: help, then quit gracefully.
keys ?
wait_for "go to pane"
keys Escape

# SV-9: quitting with an approval pending says what will happen to it, and
# it happens: the waiting client is told the gateway is shutting down, and
# the console exits 0.
preview=$(curl -sS "${h[@]}" -H "Mcp-Session-Id: $sid" \
	-d '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"create_note","arguments":{"text":"at quit"}}}' "$url")
token=$(grep -oE '"confirmToken":"[0-9a-f.]+"' <<<"$preview" | head -1 | cut -d'"' -f4)
[[ -n "$token" ]] || fail "the second preview carried no confirm token: $preview"
curl -sS --max-time 60 "${h[@]}" -H "Mcp-Session-Id: $sid" \
	-d '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"create_note","arguments":{"text":"at quit","confirm":true,"confirmToken":"'"$token"'"}}}' \
	"$url" >"$work/quit.json" 2>&1 &
quit_pid=$!
wait_for "⚑ 1 pending approval"
keys q
wait_for "1 pending approval will be rejected"
keys Right
keys Enter
for ((i = 0; i < 150; i++)); do
	t has-session -t "$session" 2>/dev/null || break
	sleep 0.1
done
if t has-session -t "$session" 2>/dev/null; then fail "toolgate did not quit on q"; fi
grep -q "console closed" "$work/stderr" || fail "no clean exit: $(cat "$work/stderr")"
wait "$quit_pid" || fail "the call pending at quit got no answer: $(cat "$work/quit.json")"
grep -q '"isError":true' "$work/quit.json" && grep -q "the gateway is shutting down" "$work/quit.json" ||
	fail "the call pending at quit was not told the gateway is shutting down: $(cat "$work/quit.json")"
[[ "$(cat "$work/status" 2>/dev/null)" == 0 ]] || fail "the console exited $(cat "$work/status" 2>/dev/null), want 0"
echo "PASS: console end to end"

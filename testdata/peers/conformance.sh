#!/usr/bin/env bash
# Transparency, measured: the official MCP conformance suite's
# server scenarios (--suite all), run directly against mcp-go's conformance
# fixture server and against `toolgate serve` in front of that same fixture.
# toolgate passes through everything the upstream offers when the run via
# toolgate passes at least as many checks as the direct run.
#
#   bash testdata/peers/conformance.sh      # from any directory
#   CONFORMANCE_KEEP=1 bash testdata/peers/conformance.sh   # keep logs
#   CONFORMANCE_ATTEMPTS=N  re-runs per failed scenario, per side (default 3)
#
# Both sides are measured alike: one full run each, then every
# scenario that failed on a side is re-run on its own on that side, up to N
# times, alternating sides so both see the same machine at the same time.
# A scenario counts as passed on a side if any attempt on that side passed;
# its checks from the full run are then replaced by that attempt's. Both
# counts and the re-runs each side used are printed.
#
# Exit status: 0 when via-toolgate passed >= direct passed, both counted so
# (and both servers came up, stayed up, and the direct run passed
# something); 1 otherwise.
#
# Counts are the suite's own: checks, not scenarios ("Total: N passed, M
# failed", the last line of a `--suite all` run). Checks fail even directly
# with mcp-go v1.2.1's fixture: always json-schema-2020-12 (the fixture has no
# json_schema_2020_12_tool), and now and then tools-call-with-progress and
# tools-call-with-logging (the fixture's server sometimes drops the last
# notification a tool sends before returning), on either side.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

attempts=${CONFORMANCE_ATTEMPTS:-3}
case $attempts in '' | *[!0-9]*) echo "conformance: CONFORMANCE_ATTEMPTS must be a number" >&2; exit 1 ;; esac

TMP=$(mktemp -d "${TMPDIR:-/tmp}/toolgate-conformance.XXXXXX")
fix_pid=""
gw_pid=""

cleanup() {
  local pid
  for pid in $gw_pid $fix_pid; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in $gw_pid $fix_pid; do
    # bounded: SIGTERM, up to 5 s, then SIGKILL
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "${CONFORMANCE_KEEP:-}" = 1 ]; then
    echo "conformance: kept $TMP (fixture.log, toolgate.log, direct.out, via.out, rerun-*.out)"
  else
    rm -rf "$TMP"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log_hint() {
  if [ "${CONFORMANCE_KEEP:-}" = 1 ]; then
    echo "conformance: logs in $TMP"
  else
    echo "conformance: logs in $TMP (removed on exit; CONFORMANCE_KEEP=1 keeps them)"
  fi
}

# free_port prints a loopback port in 20000-60000 nothing answers on, not
# already in use by this script. Bounded retries.
free_port() {
  local p
  for _ in $(seq 100); do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 40001))
    case " ${taken_ports:-} " in *" $p "*) continue ;; esac
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  echo "conformance: no free port found in 100 tries" >&2
  return 1
}

# wait_http URL PID: up to 100 x 0.1 s for URL to answer 200 while PID runs.
wait_http() {
  local url=$1 pid=$2
  for _ in $(seq 100); do
    if curl -fsS -o /dev/null --max-time 1 "$url" 2>/dev/null; then return 0; fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

alive() { kill -0 "$1" 2>/dev/null; }

echo "== conformance: building mcp-go's fixture and toolgate"
cd "$root"
go build -o "$TMP/confsrv" github.com/mark3labs/mcp-go/examples/conformance ||
  { echo "conformance: FAIL (building mcp-go's conformance fixture failed)"; exit 1; }
go build -o "$TMP/toolgate" ./cmd/toolgate ||
  { echo "conformance: FAIL (building toolgate failed)"; exit 1; }

if [ ! -d "$here/node_modules/@modelcontextprotocol/conformance" ]; then
  echo "== conformance: npm ci in testdata/peers"
  (cd "$here" && npm ci --no-audit --no-fund)
fi
cli=("node" "--import" "$here/register-hook.mjs" "$here/node_modules/@modelcontextprotocol/conformance/dist/index.js")

taken_ports=""
fix_port=$(free_port); taken_ports="$fix_port"
gw_port=$(free_port); taken_ports="$taken_ports $gw_port"
fix_url="http://127.0.0.1:$fix_port/mcp"
gw_url="http://127.0.0.1:$gw_port/mcp"

cat >"$TMP/toolgate.yaml" <<EOF
gateway:
  listen: 127.0.0.1:$gw_port
  store: $TMP/store.db
endpoints:
  - path: /mcp
    actor: {id: conformance, roles: [MEMBER]}
upstreams:
  - name: conformance
    url: $fix_url
    transport: http
    prefix: ""
    defaultKind: read
EOF

problems=()

CONFORMANCE_ADDR="127.0.0.1:$fix_port" "$TMP/confsrv" >"$TMP/fixture.log" 2>&1 &
fix_pid=$!
fix_ready=1
if ! wait_http "http://127.0.0.1:$fix_port/health" "$fix_pid"; then
  fix_ready=0
  problems+=("the fixture did not answer /health within 10 s (alive: $(alive "$fix_pid" && echo yes || echo no)); see fixture.log")
fi

"$TMP/toolgate" serve --config "$TMP/toolgate.yaml" >"$TMP/toolgate.log" 2>&1 &
gw_pid=$!
gw_ready=1
if wait_http "http://127.0.0.1:$gw_port/readyz" "$gw_pid"; then
  # /readyz turns 200 once required upstreams are connected, which can be a
  # moment before their tools are registered; the "ready" log record follows
  # registration. Bounded like the above.
  for _ in $(seq 100); do
    grep -q '"msg":"ready"' "$TMP/toolgate.log" && break
    sleep 0.1
  done
  grep -q '"msg":"ready"' "$TMP/toolgate.log" || problems+=("toolgate: /readyz 200 but no \"ready\" log record within 10 s")
else
  gw_ready=0
  problems+=("toolgate did not answer /readyz 200 within 10 s (alive: $(alive "$gw_pid" && echo yes || echo no)); see toolgate.log")
  # The log goes with the temp dir: show its end here, where CI keeps it.
  echo "conformance: toolgate.log (last 20 lines):"; tail -n 20 "$TMP/toolgate.log" || true
fi
echo "conformance: fixture $fix_url (pid $fix_pid), toolgate $gw_url (pid $gw_pid)"

# run_suite URL OUT [ARGS...]: one CLI run, output (ANSI stripped) to OUT.
# The CLI exits non-zero whenever a check fails; that is data, not an error.
run_suite() {
  local url=$1 out=$2
  shift 2
  (cd "$TMP" && timeout 600 "${cli[@]}" server --url "$url" "$@") 2>&1 |
    sed -E 's/\x1b\[[0-9;]*m//g' >"$out" || true
}

# total OUT: "N M" from the last "Total: N passed, M failed" line, or nothing.
total() {
  sed -nE 's/^Total: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/p' "$1" | tail -1
}

# scenarios OUT MARK: the names of the summary lines starting with MARK
# (✓ or ✗), one a line.
scenarios() {
  sed -nE "s/^$2 ([^:]+): [0-9]+ passed, [0-9]+ failed.*/\1/p" "$1"
}

# scenario_counts OUT NAME: "P F" of NAME's summary line.
scenario_counts() {
  sed -nE "s/^(✓|✗) $2: ([0-9]+) passed, ([0-9]+) failed.*/\2 \3/p" "$1" | tail -1
}

echo "== conformance: --suite all, direct ($fix_url)"
run_suite "$fix_url" "$TMP/direct.out" --suite all
alive "$fix_pid" || problems+=("the fixture died during the direct run; see fixture.log")

echo "== conformance: --suite all, via toolgate ($gw_url)"
run_suite "$gw_url" "$TMP/via.out" --suite all
alive "$fix_pid" || problems+=("the fixture died (by the end of the run via toolgate); see fixture.log")
alive "$gw_pid" || problems+=("toolgate died during the run via toolgate; see toolgate.log")

read -r d_pass d_fail <<<"$(total "$TMP/direct.out")" || true
read -r v_pass v_fail <<<"$(total "$TMP/via.out")" || true
if [ -z "${d_pass:-}" ]; then problems+=("the direct run printed no 'Total:' line; see direct.out"); d_pass=0 d_fail=0; fi
if [ -z "${v_pass:-}" ]; then problems+=("the run via toolgate printed no 'Total:' line; see via.out"); v_pass=0 v_fail=0; fi
[ "$d_pass" -gt 0 ] || problems+=("the direct run passed nothing: no baseline to compare with")
d_pass_first=$d_pass d_fail_first=$d_fail
v_pass_first=$v_pass v_fail_first=$v_fail

# Per side: its URL, full-run output, recounted checks, re-runs used.
declare -A url=([direct]=$fix_url [via]=$gw_url)
declare -A full=([direct]="$TMP/direct.out" [via]="$TMP/via.out")
declare -A pass=([direct]=$d_pass [via]=$v_pass)
declare -A fail=([direct]=$d_fail [via]=$v_fail)
declare -A used=([direct]=0 [via]=0)
declare -A label=([direct]="direct" [via]="toolgate")
declare -A server=([direct]=$fix_pid [via]=$gw_pid)

# failing["SIDE SCENARIO"] is set while SCENARIO has failed every attempt on
# SIDE so far. A side's full run is its first attempt.
declare -A failing=()
for side in direct via; do
  while IFS= read -r s; do
    [ -n "$s" ] && failing["$side $s"]=1
  done < <(scenarios "${full[$side]}" ✗)
done
mapfile -t rerun < <(for k in "${!failing[@]}"; do echo "${k#* }"; done | sort -u)

# Re-runs: a failed scenario is re-run on its own (--scenario NAME) on each
# side it failed on, until it passes there or N attempts are spent. The
# sides take turns per attempt, so neither gets a quieter machine. If an
# attempt passes (0 failed), the scenario's counts from that side's full run
# are replaced by the attempt's ("Passed: P/T, F failed"): side = full-run
# total - the scenario's full-run passes + the attempt's (failed likewise).
# If none passes, the full run's counts stand. Every number comes from a
# real run, and nothing is excluded.
recounted=()
if [ ${#rerun[@]} -gt 0 ] && [ "$attempts" -gt 0 ]; then
  echo "== conformance: re-running ${#rerun[@]} failed scenario(s) on the side(s) they failed on, up to $attempts attempts each"
  for s in "${rerun[@]}"; do
    for attempt in $(seq "$attempts"); do
      tried=0
      for side in direct via; do
        [ -n "${failing["$side $s"]:-}" ] || continue
        # A side whose server is gone has nothing left to measure (its
        # death is already among the problems).
        alive "${server[$side]}" || continue
        tried=1
        used[$side]=$((used[$side] + 1))
        out="$TMP/rerun-$side-${s//\//_}-$attempt.out"
        run_suite "${url[$side]}" "$out" --scenario "$s"
        line=$(sed -nE 's/^Passed: ([0-9]+)\/([0-9]+), ([0-9]+) failed.*/\1 \3/p' "$out" | tail -1)
        if [ -z "$line" ]; then
          printf '   %-8s %s attempt %d: no result line\n' "${label[$side]}" "$s" "$attempt"
          continue
        fi
        read -r r_pass r_fail <<<"$line"
        printf '   %-8s %s attempt %d: %d passed, %d failed\n' "${label[$side]}" "$s" "$attempt" "$r_pass" "$r_fail"
        if [ "$r_fail" -eq 0 ]; then
          read -r s_pass s_fail <<<"$(scenario_counts "${full[$side]}" "$s")"
          pass[$side]=$((pass[$side] - s_pass + r_pass))
          fail[$side]=$((fail[$side] - s_fail + r_fail))
          unset 'failing["$side $s"]'
          recounted+=("${label[$side]}: $s (attempt $attempt: $r_pass passed; full run: $s_pass passed, $s_fail failed)")
        fi
      done
      [ "$tried" = 1 ] || break
    done
  done
  alive "$fix_pid" || problems+=("the fixture died during the re-runs; see fixture.log")
  alive "$gw_pid" || problems+=("toolgate died during the re-runs; see toolgate.log")
fi
d_pass=${pass[direct]} d_fail=${fail[direct]}
v_pass=${pass[via]} v_fail=${fail[via]}

# still SIDE: the scenarios that failed every attempt on SIDE, one a line.
still() {
  local k
  for k in "${!failing[@]}"; do
    if [ "${k%% *}" = "$1" ]; then echo "${k#* }"; fi
  done | sort
}

echo
echo "== conformance: results (checks, as the suite counts them; up to $attempts re-runs per failed scenario on each side)"
printf '%-9s %d passed, %d failed (full run: %d passed, %d failed; %d re-run(s))\n' \
  "direct:" "$d_pass" "$d_fail" "$d_pass_first" "$d_fail_first" "${used[direct]}"
printf '%-9s %d passed, %d failed (full run: %d passed, %d failed; %d re-run(s))\n' \
  "toolgate:" "$v_pass" "$v_fail" "$v_pass_first" "$v_fail_first" "${used[via]}"
for r in "${recounted[@]}"; do echo "  re-run passed: $r"; done
for side in direct via; do
  mapfile -t left < <(still "$side")
  if [ ${#left[@]} -gt 0 ]; then
    echo "failed on every attempt, ${label[$side]}:"
    for s in "${left[@]}"; do grep -E "^✗ $s:" "${full[$side]}" | sed 's/^/  /'; done
  else
    echo "failed on every attempt, ${label[$side]}: none"
  fi
done
mapfile -t regressed < <(comm -23 <(still via) <(still direct))
if [ ${#regressed[@]} -gt 0 ]; then
  echo "failed via toolgate but not directly: ${regressed[*]}"
else
  echo "failed via toolgate but not directly: none"
fi

if [ ${#problems[@]} -gt 0 ]; then
  echo "problems:"
  for p in "${problems[@]}"; do echo "  $p"; done
fi
log_hint

if [ ${#problems[@]} -eq 0 ] && [ "$fix_ready" = 1 ] && [ "$gw_ready" = 1 ] && [ "$v_pass" -ge "$d_pass" ]; then
  echo "conformance: PASS (via toolgate $v_pass >= direct $d_pass)"
  exit 0
fi
echo "conformance: FAIL (via toolgate $v_pass passed, direct $d_pass passed)"
exit 1

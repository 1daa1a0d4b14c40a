#!/usr/bin/env bash
# run.sh URL [--token T] [--scenarios a,b,c | --all] [--out DIR] [--timeout SECS]
#
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance 0.1.16) against a
# Streamable HTTP server at URL, one scenario at a time. This is brain's own runner (scripts/test
# calls it); it needs npm and the npm registry the first time. The suite is installed (npm ci, from
# the lock file beside this script) into $BRAIN_CONFORMANCE_HOME (default ~/.cache/brain-conformance),
# so the clone stays clean and later runs reuse the install. It needs Node >= 22; the lock pins the npm package `node`
# 22.x, which ships that binary, so the machine's own Node version does not matter.
# Default set = the generic protocol scenarios any server must pass, plus the
# capability-gated ones for capabilities the server declares in its initialize result
# (logging -> logging-set-level, resources -> resources-list, prompts -> prompts-list).
# Fixture scenarios (test_* tools, test:// resources) only run with --scenarios or --all:
# resources-subscribe and resources-unsubscribe are among them, as they subscribe to the
# reference fixture's test://watched-resource, a URI a real server holds no resource for
# (brain answers -32002 for any URI its tenant does not hold; tests/resources.rs covers
# brain's own subscribe and unsubscribe).
#
# --token T: the suite has no header option; a node --import preload (inject-auth.mjs, beside this)
# adds "Authorization: Bearer T" to every request sent to URL's origin. $MCP_BEARER_TOKEN works too.
# Run it against the real server with authentication on.
#
# Output: one line per scenario, failing checks, then
#   failures: <names>|none
#   conformance: N passed, M failed        (scenario counts; always the last line)
# Exit: 0 if the suite ran (even with failures), 2 if it could not run.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE"
CDIR="${BRAIN_CONFORMANCE_HOME:-$HOME/.cache/brain-conformance}"
NODE="$CDIR/node_modules/.bin/node"
CLI="$CDIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"

GENERIC=(server-initialize ping tools-list server-sse-multiple-streams dns-rebinding-protection)

die() { echo "run.sh: $*" >&2; echo "conformance: could not run" >&2; exit 2; }
usage() { awk 'NR>1 && /^#/ {sub(/^# ?/, ""); print; next} NR>1 {exit}' "$0"; exit 2; }

URL="" TOKEN="${MCP_BEARER_TOKEN:-}" SCEN="" ALL=0 OUT="" TMO=120
while [ $# -gt 0 ]; do
  case "$1" in
    --token) [ $# -ge 2 ] || usage; TOKEN="$2"; shift 2 ;;
    --token=*) TOKEN="${1#*=}"; shift ;;
    --scenarios) [ $# -ge 2 ] || usage; SCEN="$2"; shift 2 ;;
    --all) ALL=1; shift ;;
    --out) [ $# -ge 2 ] || usage; OUT="$2"; shift 2 ;;
    --timeout) [ $# -ge 2 ] || usage; TMO="$2"; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "unknown option: $1" >&2; usage ;;
    *) [ -z "$URL" ] || usage; URL="$1"; shift ;;
  esac
done
[ -n "$URL" ] || usage
case "$URL" in http://*|https://*) ;; *) die "URL must start with http:// or https://" ;; esac

# --- the suite needs Node >= 22 (fs.globSync); ./conformance pins a Node 22 binary from npm ---
mkdir -p "$CDIR" || die "cannot create $CDIR"
for f in package.json package-lock.json inject-auth.mjs caps.mjs; do
  cmp -s "$SRC/$f" "$CDIR/$f" || cp "$SRC/$f" "$CDIR/$f" || die "cannot copy $f to $CDIR"
done
# Reinstall only when the lock file's content changed (a fresh clone's mtimes say nothing).
if [ ! -x "$NODE" ] || [ ! -f "$CLI" ] || ! cmp -s "$SRC/package-lock.json" "$CDIR/installed.lock"; then
  echo "run.sh: installing the conformance suite into $CDIR (npm ci)..." >&2
  (cd "$CDIR" && npm ci --no-audit --no-fund >/dev/null 2>&1) || die "npm ci in $CDIR failed"
  cp "$SRC/package-lock.json" "$CDIR/installed.lock"
fi
[ -x "$NODE" ] && [ -f "$CLI" ] || die "conformance suite not installed in $CDIR"
"$NODE" -e 'process.exit(+process.versions.node.split(".")[0] >= 22 ? 0 : 1)' || die "$NODE is not Node >= 22"

# --- preflight: is anything answering HTTP at URL? (any status counts) ---
code=$(curl -s -o /dev/null -m 10 -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  -H 'Accept: application/json, text/event-stream' --data '{}' "$URL" 2>/dev/null)
[ -n "$code" ] && [ "$code" != "000" ] || die "no HTTP server answering at $URL"

export MCP_BEARER_TOKEN="$TOKEN"
ORIGIN="$("$NODE" -e 'console.log(new URL(process.argv[1]).origin)' "$URL")"
export MCP_AUTH_ORIGIN="$ORIGIN"
if [ -n "$TOKEN" ]; then
  export NODE_OPTIONS="--import $CDIR/inject-auth.mjs${NODE_OPTIONS:+ $NODE_OPTIONS}"
  echo "auth: Authorization: Bearer <token> injected for $ORIGIN"
fi

# --- choose scenarios ---
if [ "$ALL" = 1 ]; then
  mapfile -t LIST < <("$NODE" "$CLI" list --server | sed -n 's/^  - \([^ ]*\).*/\1/p')
elif [ -n "$SCEN" ]; then
  IFS=',' read -r -a LIST <<<"$SCEN"
else
  LIST=("${GENERIC[@]}")
  if caps=$("$NODE" "$CDIR/caps.mjs" "$URL" 2>/dev/null); then
    echo "server: $(echo "$caps" | "$NODE" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const j=JSON.parse(s);console.log(JSON.stringify(j.serverInfo)+" protocol "+j.protocolVersion+" session "+(j.sessionId?"yes":"no")+" caps "+Object.keys(j.capabilities||{}).join(","))})')"
    mapfile -t EXTRA < <(echo "$caps" | "$NODE" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const c=JSON.parse(s).capabilities||{};const o=[];if(c.logging)o.push("logging-set-level");if(c.resources){o.push("resources-list")}if(c.prompts)o.push("prompts-list");console.log(o.join("\n"))})')
    for e in "${EXTRA[@]}"; do [ -n "$e" ] && LIST+=("$e"); done
  else
    echo "server: initialize failed in preflight (server-initialize will show why)"
  fi
  case "$ORIGIN" in
    http://localhost:*|http://127.0.0.1:*|http://\[::1\]:*|http://localhost|http://127.0.0.1) ;;
    *) LIST=("${LIST[@]/dns-rebinding-protection}"); echo "note: dns-rebinding-protection skipped (needs a localhost http URL)" ;;
  esac
fi

[ -n "$OUT" ] || OUT="$CDIR/results/run-$(date -u +%Y%m%dT%H%M%SZ)-$$"
mkdir -p "$OUT" || die "cannot create $OUT"
echo "results: $OUT"

PASS=0 FAIL=0 FAILED=()
for s in "${LIST[@]}"; do
  [ -n "$s" ] || continue
  sdir="$OUT/$s"; mkdir -p "$sdir"
  timeout "$TMO" "$NODE" "$CLI" server --url "$URL" --scenario "$s" -o "$sdir" >"$sdir/log.txt" 2>&1
  rc=$?
  f=$(ls "$sdir"/*/checks.json 2>/dev/null | head -1)
  if [ -z "$f" ]; then
    reason="no checks.json (exit $rc$([ $rc = 124 ] && echo ', timed out'))"
    grep -q "Unknown scenario" "$sdir/log.txt" && reason="unknown scenario"
    echo "FAIL $s: $reason"; FAIL=$((FAIL+1)); FAILED+=("$s"); continue
  fi
  line=$("$NODE" -e '
    const c=require(process.argv[1]);
    const n=s=>c.filter(x=>x.status===s).length;
    const bad=c.filter(x=>x.status==="FAILURE").map(x=>"    - "+x.id+": "+(x.errorMessage||x.description));
    const warn=c.filter(x=>x.status==="WARNING").map(x=>"    ~ "+x.id+": "+(x.errorMessage||x.details?.message||x.description));
    console.log((n("FAILURE")?"FAIL":"PASS")+" "+process.argv[2]+" (checks: "+n("SUCCESS")+" ok, "+n("FAILURE")+" failed, "+n("WARNING")+" warnings)");
    for (const l of [...bad,...warn]) console.log(l);' "$f" "$s")
  echo "$line"
  if [[ "$line" == FAIL* ]]; then FAIL=$((FAIL+1)); FAILED+=("$s"); else PASS=$((PASS+1)); fi
done

[ $((PASS+FAIL)) -gt 0 ] || die "no scenarios were run"
if [ ${#FAILED[@]} -gt 0 ]; then echo "failures: ${FAILED[*]}"; else echo "failures: none"; fi
echo "conformance: $PASS passed, $FAIL failed"
exit 0

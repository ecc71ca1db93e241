#!/usr/bin/env bash
# The loopkit demo: a tiny agent, a verify that keeps failing, and an escalation.
# Copies this folder to a temporary workspace (the repository stays clean) and runs
# `loopkit run --exit-on-block` there: three failures, then a question, BLOCKED.md, exit 2.
# It runs in a loopkit home of its own (LOOPKIT_HOME): your `loopkit inbox`, `ps` and phone
# never see its question, and it answers that question itself before it ends.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
loopkit="${LOOPKIT:-loopkit}"
ws="$(mktemp -d "${TMPDIR:-/tmp}/loopkit-demo.XXXXXX")"
cp "$here/agent.py" "$here/verify.py" "$here/price.py" "$here/PLAN.md" "$here/loopkit.toml" "$ws/"
export LOOPKIT_HOME="$ws/.loopkit-home"
# The demo's question goes nowhere but the console: no channel of yours is used.
unset LOOPKIT_HITL_CHANNEL LOOPKIT_FLEET_DSN

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "loopkit run --exit-on-block   (workspace: $ws)"
"$loopkit" -C "$ws" run --exit-on-block
echo "-> exit $? (2 = blocked)"

say "the request record (requests/<id>.json; the five-line message is above)"
request="$(ls "$ws"/requests/*.json | head -n 1)"
python3 - "$request" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"request {r['request_id']}: status {r['status']}, trigger {r['trigger']}")
for i, o in enumerate(r["options"]):
    print(f"  {'ABC'[i]}) {o['label']}  (value: {o['value']})")
PY

say "loopkit check   (what run.sh does at the head of every iteration)"
"$loopkit" -C "$ws" check >/dev/null
echo "-> exit $? (2 = blocked, until BLOCKED.md is gone)"

say "loopkit unblock   (a human lifts the block: the request is closed, BLOCKED.md removed)"
"$loopkit" -C "$ws" unblock
"$loopkit" -C "$ws" check
echo "-> exit $? (0 = unblocked)"

echo
echo "Workspace kept at $ws — look at requests/, .loopkit/events.jsonl, .loopkit/logs/."
echo "As a daemon, 'LOOPKIT_HOME=$LOOPKIT_HOME loopkit -C $ws run' waits instead of exiting"
echo "and resumes the moment BLOCKED.md is deleted or the question is answered"
echo "('loopkit unblock --reply B'). Your own loops live in your own LOOPKIT_HOME."

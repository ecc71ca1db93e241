#!/usr/bin/env bash
# run.sh — the seed-compatible loop runner, supervised by loopkit.
#
#   while true; do agent; verify; done      # what loops used to be
#   ./run.sh [WORKSPACE]                    # what this is
#
# At the head of each iteration: if BLOCKED.md exists, print its first 30 lines and exit 2
# (`loopkit check` does exactly that, honouring [escalation] blocked_file). Otherwise one
# iteration of `loopkit run` runs the agent and verify from loopkit.toml, counts failures
# and escalates when stuck. Exit codes are loopkit's: 0 done, 2 blocked, 3 aborted, ...
# For a daemon that waits for the human instead of exiting, use `loopkit run`.
set -u
ws="${1:-.}"
loopkit="${LOOPKIT:-loopkit}"

while :; do
    "$loopkit" -C "$ws" check || exit $?
    "$loopkit" -C "$ws" run --exit-on-block --max-iterations 1 || exit $?
    if "$loopkit" -C "$ws" status --json | grep -q '"state": "finished"'; then
        exit 0
    fi
done

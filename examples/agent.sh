#!/bin/sh
# The examples' agent: a stand-in for yours. hookgate's command runner sends one
# JSON object on stdin ({"kind","runId","agentId","sessionKey","message",...})
# and takes the trimmed stdout as the reply; exit 0 is success. Point the
# runner's argv at your agent instead (see "Runners" in the README).
input=$(cat)
printf 'received a %s-byte run for agent %s\n' "${#input}" "${HOOKGATE_AGENT_ID:-unknown}"

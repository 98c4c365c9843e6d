#!/usr/bin/env bash
# A launcher template that records every trial start, used as
#   --launcher "bash log_launcher.sh LOGFILE {key} {cmd}"
# Each start appends the trial key to LOGFILE; the short pause keeps trials
# long enough for a test to kill the tuner in the middle of a sweep.
log=$1 key=$2
shift 2
echo "$key" >> "$log"
sleep 0.3
exec "$@"

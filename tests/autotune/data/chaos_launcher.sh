#!/usr/bin/env bash
# A launcher template for hybrid-tune's failure tests, used as
#   --launcher "bash chaos_launcher.sh {key} {nprocs} MPIRUN {cmd}"
# It routes trials by key, the way a site wrapper around srun/mpirun could:
#   key ends in CRASH_KEY  a real training run whose ranks SIGKILL themselves after step 1
#   key ends in HANG_KEY   mpirun of ranks that never finish (sleep)
#   anything else          the trial as given
key=$1 nprocs=$2 mpirun=$3
shift 3
case "$key" in
  "$CRASH_KEY") exec "$mpirun" -np "$nprocs" "$@" --kill-after-step 1 ;;
  "$HANG_KEY") exec "$mpirun" -np "$nprocs" sleep 617 ;;
  *) exec "$mpirun" -np "$nprocs" "$@" ;;
esac

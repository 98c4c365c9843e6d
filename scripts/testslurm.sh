#!/usr/bin/env bash
# A real Slurm on this machine, for the tests and CI: Debian's slurmctld and
# slurmd (one node: this machine) authenticated by a munged of its own, all with
# private ports, socket, key and state, so nothing of a system Slurm or munge is
# touched.
#
#   scripts/testslurm.sh up       start munged, slurmctld, slurmd; wait for the node
#   scripts/testslurm.sh down     cancel every job, stop the daemons, remove the state
#   scripts/testslurm.sh status   "up" or "down"; exit 1 when down
#   scripts/testslurm.sh env      the variable srun, sbatch, squeue and scancel need
#
# Needs root (the daemons run as root). `up` exits 2 with the reason when Slurm
# is not installed or cannot start here; tests skip on that.
set -euo pipefail

state=${HYBRID_TESTSLURM_STATE:-/run/hybrid-testslurm}
conf=$state/slurm.conf

die() {
  echo "testslurm: $*" >&2
  exit 1
}

unavailable() {
  echo "testslurm: $*" >&2
  exit 2
}

# Stops the daemons of these pid files together: SIGTERM to each, SIGKILL to
# those still running 5 s later. Each takes a second or two to shut down.
stop_pids() {  # PIDFILE...
  local pids=() f pid alive
  for f in "$@"; do
    [ -f "$f" ] && pids+=("$(cat "$f")")
  done
  ((${#pids[@]})) || return 0
  kill "${pids[@]}" 2>/dev/null || true
  for _ in $(seq 50); do
    alive=0
    for pid in "${pids[@]}"; do
      kill -0 "$pid" 2>/dev/null && alive=1
    done
    ((alive)) || return 0
    sleep 0.1
  done
  kill -9 "${pids[@]}" 2>/dev/null || true
}

down() {
  if [ -f "$conf" ]; then
    SLURM_CONF=$conf scancel --quiet --user=root 2>/dev/null || true
    # The cancelled jobs' steps end by reporting to the daemons: wait (up to
    # 10 s) until the queue is empty before stopping them.
    for _ in $(seq 100); do
      [ -z "$(SLURM_CONF=$conf squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  # Together (one after another, they added 4 s to every Slurm test).
  stop_pids "$state/slurmd.pid" "$state/slurmctld.pid" "$state/munged.pid"
  rm -rf "$state"
}

write_conf() {
  local host mem
  host=$(hostname)
  mem=$(awk '/MemTotal/ {print int($2 / 1024) - 1024}' /proc/meminfo)
  cat >"$conf" <<EOF
# Written by scripts/testslurm.sh: one node, this machine.
ClusterName=hybridtest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$state/munge.socket
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
SlurmctldPort=6917
SlurmdPort=6918
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
SchedulerType=sched/backfill
# Memory: each task's RSS sampled every second, and a step over its --mem killed
# (no cgroups needed, so it works in containers); the tests' OOM trial relies on it.
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
JobAcctGatherParams=OverMemoryKill
MpiDefault=none
ReturnToService=2
KillWait=5
# A job's time limit is its limit: no grace minutes.
OverTimeLimit=0
InactiveLimit=0
# Ended jobs are forgotten after 4 s at the earliest, which also keeps sbatch
# --wait's polling interval at 2 s (it grows up to MinJobAge / 2), instead of
# up to 32 s: the job's end is seen within 2 s.
MinJobAge=4
MessageTimeout=10
NodeName=$host CPUs=$(nproc) RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
}

up() {
  for tool in munged slurmctld slurmd srun; do
    command -v "$tool" >/dev/null || unavailable "$tool is not installed (scripts/setup.sh installs Slurm)"
  done
  [ "$(id -u)" = 0 ] || unavailable "the daemons need root"
  down
  mkdir -p "$state/ctld" "$state/spool"
  trap 'echo "testslurm: up failed; cleaning up" >&2; tail -5 "$state"/*.log >&2 2>/dev/null; down; exit 1' ERR
  dd if=/dev/urandom of="$state/munge.key" bs=1024 count=1 2>/dev/null
  chmod 400 "$state/munge.key"
  munged --force --key-file="$state/munge.key" --socket="$state/munge.socket" \
    --pid-file="$state/munged.pid" --log-file="$state/munged.log" --seed-file="$state/munge.seed"
  write_conf
  slurmctld -f "$conf"
  slurmd -f "$conf"
  for _ in $(seq 100); do
    if [ "$(SLURM_CONF=$conf sinfo -h -o %t 2>/dev/null)" = idle ]; then
      trap - ERR
      echo "testslurm: up (node $(hostname), $(nproc) CPUs; SLURM_CONF=$conf)"
      return 0
    fi
    sleep 0.2
  done
  echo "testslurm: the node did not become idle in 20 s" >&2
  false
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status)
    if [ -f "$conf" ] && SLURM_CONF=$conf sinfo -h >/dev/null 2>&1; then echo up; else
      echo down
      exit 1
    fi
    ;;
  env) echo "export SLURM_CONF=$conf" ;;
  *) die "usage: $0 up | down | status | env" ;;
esac

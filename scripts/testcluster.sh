#!/usr/bin/env bash
# Test hosts on one machine: N Linux network namespaces ("hosts" hyb-node1..N,
# each with its own hostname) joined by veth pairs on a bridge, named in
# /etc/hosts, that Open MPI starts ranks in over TCP. mpirun runs here, in the
# root namespace (the login node); its rsh agent (scripts/testcluster-agent.sh)
# enters a host's namespace instead of ssh-ing to it.
#
#   scripts/testcluster.sh up N [--rate RATE] [--delay TIME]   e.g. up 2 --rate 1gbit
#   scripts/testcluster.sh down          remove everything `up` made (also after a failed run)
#   scripts/testcluster.sh status        "up N" or "down"; exit 1 when down
#   scripts/testcluster.sh hostfile [SLOTS]   an Open MPI hostfile of the hosts
#   scripts/testcluster.sh env           the Open MPI settings to run across the hosts (ranks
#                                        yield when idle: the hosts share this machine's
#                                        cores with the network stack that carries their traffic)
#   scripts/testcluster.sh kill HOST     SIGKILL every process in that host
#   scripts/testcluster.sh cut HOST | heal HOST   take its link down / up (heal returns once
#                                        the link forwards again)
#
# --rate shapes every host's outgoing traffic with a token bucket (tc tbf), so a
# host-to-host link carries RATE; --delay TIME (e.g. 1ms, 500us) delays it by
# TIME: one-way latency. The delay is a small process per host
# (scripts/delay-line.cpp, compiled here) between a TAP device that is the
# host's eth0 and one on the bridge, not tc netem, which many kernels lack.
# Within a host, ranks talk over shared memory. Needs root (CAP_NET_ADMIN,
# CAP_SYS_ADMIN for the hostnames) and, for --delay, /dev/net/tun and c++.
# `up` exits 2 with the reason when namespaces cannot be created here; tests
# skip on that.
set -euo pipefail

prefix=hyb-node
net=10.77.0
bridge=hyb-br0
jumbo=9000
state=${HYBRID_TESTCLUSTER_STATE:-/run/hybrid-testcluster}
marker="# hybrid-testcluster"
here=$(cd "$(dirname "$0")" && pwd)

die() {
  echo "testcluster: $*" >&2
  exit 1
}

# In `up`, once it has made something: fail so that its ERR trap cleans up.
fail() {
  echo "testcluster: $*" >&2
  return 1
}

hosts() { [ -f "$state/hosts" ] && cat "$state/hosts" || true; }

down() {
  local h i
  pkill -9 -x hyb-delay-line 2>/dev/null || true  # their TAP devices go with them
  for i in $(seq 50); do
    pgrep -x hyb-delay-line >/dev/null || break
    sleep 0.1
  done
  for h in $(hosts) $(ip netns list 2>/dev/null | awk -v p="$prefix" 'index($1, p) == 1 {print $1}'); do
    ip netns pids "$h" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    # A namespace outlives its name while a process is still in it, and keeps
    # its end of the veth pair (the next `up` would find the link existing).
    for i in $(seq 50); do
      [ -z "$(ip netns pids "$h" 2>/dev/null)" ] && break
      sleep 0.1
    done
    ip netns del "$h" 2>/dev/null || true
  done
  for h in $(ip -o link show 2>/dev/null | grep -o 'hyb-veth[0-9]*' | sort -u); do
    ip link del "$h" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
  if grep -q "$marker" /etc/hosts 2>/dev/null; then
    # /etc/hosts may be a bind mount: rewrite it in place, never replace it.
    grep -v "$marker" /etc/hosts >"$state.hosts.tmp" || true
    cat "$state.hosts.tmp" >/etc/hosts
    rm -f "$state.hosts.tmp"
  fi
  rm -rf "$state"
}

shape() {  # HOST RATE
  [ -z "$2" ] && return 0
  ip netns exec "$1" tc qdisc add dev eth0 root tbf rate "$2" burst "$(burst_of "$2")" \
    latency 400ms || die "cannot shape $1 to $2 (tc tbf)"
}

# Host i's link to the bridge: a veth pair, or with a delay two TAP devices
# with a delay line between them (scripts/delay-line.cpp). Either way the host
# sees eth0 and the bridge a port hyb-veth<i>, which `cut` takes down.
link() {  # HOST INDEX DELAY_US
  local h=$1 i=$2 us=$3
  if [ -z "$us" ]; then
    ip link add "hyb-veth$i" type veth peer name eth0 netns "$h"
    return 0
  fi
  setsid "$state/hyb-delay-line" "hyb-tap$i" "hyb-veth$i" "$us" "$jumbo" \
    </dev/null >"$state/delay$i.log" 2>&1 &
  local n
  for n in $(seq 100); do
    grep -q ready "$state/delay$i.log" 2>/dev/null && break
    kill -0 $! 2>/dev/null || fail "the delay line of $h failed: $(cat "$state/delay$i.log")"
    sleep 0.05
  done
  grep -q ready "$state/delay$i.log" || fail "the delay line of $h did not start in 5 s"
  ip link set "hyb-tap$i" netns "$h"
  ip -n "$h" link set "hyb-tap$i" name eth0
  # Jumbo frames: a sixth of the frames to forward per byte, so the delay line
  # costs little of the cores the ranks share.
  ip -n "$h" link set eth0 mtu "$jumbo" txqueuelen 10000
  ip link set "hyb-veth$i" mtu "$jumbo" txqueuelen 10000
}

delay_us() {  # 1ms, 500us, 2000us -> microseconds
  local v=${1,,}
  case "$v" in
    *ms) [[ "${v%ms}" =~ ^[0-9]+$ ]] && echo $((${v%ms} * 1000)) && return ;;
    *us) [[ "${v%us}" =~ ^[0-9]+$ ]] && echo "${v%us}" && return ;;
  esac
  die "--delay $1: give a whole number with ms or us (e.g. 1ms)"
}

# A token bucket of 4 ms at the rate (at least 16 KiB, a few packets). A 1 ms
# bucket halved the rate at times in a VM whose timers fire late (the bucket
# filled up between two dequeues); 4 ms lets a 16 MiB message through 3 %
# faster than the rate.
burst_of() {
  local bits
  bits=$(tc_rate_bits "$1")
  local bytes=$((bits / 8 / 250))
  ((bytes < 16384)) && bytes=16384
  echo "$bytes"
}

tc_rate_bits() {  # 1gbit, 100mbit, 500kbit, 1000000bit -> bits/s
  local v=${1,,}
  case "$v" in
    *gbit) echo $((${v%gbit} * 1000000000)) ;;
    *mbit) echo $((${v%mbit} * 1000000)) ;;
    *kbit) echo $((${v%kbit} * 1000)) ;;
    *bit) echo "${v%bit}" ;;
    *) die "--rate $1: give a whole number with gbit, mbit, kbit or bit (e.g. 1gbit)" ;;
  esac
}

up() {
  local n=${1:-}
  shift || true
  [[ "$n" =~ ^[1-9][0-9]?$ ]] && ((n <= 64)) || die "up: the host count must be 1..64, got '${n}'"
  local rate="" delay=""
  while (($#)); do
    case "$1" in
      --rate)
        rate=${2:?--rate needs a value}
        shift 2
        ;;
      --delay)
        delay=${2:?--delay needs a value}
        shift 2
        ;;
      *) die "up: unknown option $1" ;;
    esac
  done
  [ -n "$rate" ] && tc_rate_bits "$rate" >/dev/null
  local us=""
  [ -n "$delay" ] && { us=$(delay_us "$delay") || exit 1; }
  [ "$us" = 0 ] && us=""
  down
  if ! ip netns add "${prefix}-probe" 2>"$state.err"; then
    echo "testcluster: cannot create network namespaces here: $(cat "$state.err")" >&2
    rm -f "$state.err"
    exit 2
  fi
  ip netns del "${prefix}-probe"
  rm -f "$state.err"
  mkdir -p "$state"
  # Exit 1 whatever failed: 2 means "no namespaces here" to the tests.
  trap 'echo "testcluster: up failed; cleaning up" >&2; down; exit 1' ERR
  if [ -n "$us" ]; then
    [ -c /dev/net/tun ] || fail "--delay needs /dev/net/tun (TAP devices), which this machine lacks"
    c++ -O2 -std=c++17 -o "$state/hyb-delay-line" "$here/delay-line.cpp" ||
      fail "--delay: cannot compile scripts/delay-line.cpp"
  fi
  ip link add "$bridge" type bridge
  ip addr add "$net.1/24" dev "$bridge"
  ip link set "$bridge" up
  for i in $(seq 1 "$n"); do
    local h=$prefix$i
    ip netns add "$h"
    link "$h" "$i" "$us"
    ip link set "hyb-veth$i" master "$bridge" up
    ip -n "$h" addr add "$net.$((i + 1))/24" dev eth0
    ip -n "$h" link set eth0 up
    ip -n "$h" link set lo up
    shape "$h" "$rate"
    echo "$h" >>"$state/hosts"
    echo "$net.$((i + 1)) $h $marker" >>/etc/hosts
  done
  printf 'rate=%s\ndelay=%s\n' "$rate" "$delay" >"$state/shaping"
  trap - ERR
  echo "testcluster: up $n host(s) (${prefix}1..$n on $net.0/24)${rate:+, links at $rate}${delay:+, +$delay}"
}

host_index() {
  hosts | grep -qx "$1" || die "no test host '$1' (hosts: $(hosts | tr '\n' ' '))"
  echo "${1#"$prefix"}"
}

# Brings a host's link back up and returns once it carries traffic: the bridge
# forwards on its port and the host's eth0 has its carrier again (the kernel
# reports a carrier change up to a second late, and a trial started before
# that cannot reach the host).
heal() {
  local i
  i=$(host_index "$1")
  ip link set "hyb-veth$i" up
  for _ in $(seq 200); do
    if [ "$(cat "/sys/class/net/hyb-veth$i/brport/state" 2>/dev/null)" = 3 ] &&
      ip -n "$prefix$i" -o link show eth0 | grep -q "state UP"; then
      return 0
    fi
    sleep 0.05
  done
  die "heal $1: the link does not forward 10 s after it was brought up"
}

cmd=${1:-}
shift || true
case "$cmd" in
  up) up "$@" ;;
  down) down ;;
  status)
    n=$(hosts | wc -l)
    if ((n > 0)); then echo "up $n"; else
      echo down
      exit 1
    fi
    ;;
  hostfile)
    slots=${1:-1}
    [ -n "$(hosts)" ] || die "the test cluster is down (scripts/testcluster.sh up N)"
    for h in $(hosts); do echo "$h slots=$slots"; done
    ;;
  env)
    cat <<EOF
export OMPI_MCA_plm_rsh_agent=$here/testcluster-agent.sh
export OMPI_MCA_btl=self,vader,tcp
export OMPI_MCA_oob_tcp_if_include=$net.0/24
export OMPI_MCA_btl_tcp_if_include=$net.0/24
export OMPI_MCA_mpi_yield_when_idle=1
EOF
    ;;
  kill) ip netns pids "$prefix$(host_index "${1:?kill needs a host}")" | xargs -r kill -9 ;;
  cut) ip link set "hyb-veth$(host_index "${1:?cut needs a host}")" down ;;
  heal) heal "${1:?heal needs a host}" ;;
  *) die "usage: $0 up N [--rate RATE] [--delay TIME] | down | status | hostfile [SLOTS] | env | kill HOST | cut HOST | heal HOST" ;;
esac

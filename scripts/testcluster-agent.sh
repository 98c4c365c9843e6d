#!/bin/sh
# Open MPI's rsh agent for the test hosts of scripts/testcluster.sh: where ssh
# would log in to HOST and run the command line, this enters HOST's network
# namespace, gives the process its own hostname (a UTS namespace) and runs it.
#   testcluster-agent.sh HOST WORD...    (as Open MPI calls plm_rsh_agent)
set -eu
host=$1
shift
# The words are one remote command line, as ssh would join them (Open MPI sends
# "PATH=... ; export PATH ; ... orted ..." when mpirun is named by its path).
exec ip netns exec "$host" unshare --uts sh -c "hostname $host || exit 1; $*"

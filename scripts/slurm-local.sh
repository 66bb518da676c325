#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, from Debian's packages (slurm-wlm, munge), for
# trying `decodelab sweep --slurm` and for the CI test (tests/slurm/run-slurm-tests.sh).
#
#   scripts/slurm-local.sh start    generate a munge key and slurm.conf, start munged,
#                                   slurmctld and slurmd, wait until sinfo shows the node idle
#   scripts/slurm-local.sh stop     stop the three daemons (the state folder stays, for its logs)
#   scripts/slurm-local.sh status   sinfo and squeue
#   scripts/slurm-local.sh env      the line to eval so that sbatch/squeue use this cluster
#
# Everything lives in one state folder ($DECODELAB_SLURM_DIR, default /tmp/decodelab-slurm):
# the key, munged's socket, slurm.conf, the controller's state, the logs. Nothing under /etc
# is touched, so the script never disturbs a Slurm the machine already has; the clients find
# this one through SLURM_CONF (see `env`). Run as root: slurmd starts jobs as their user.
#
# The non-obvious choices: ProctrackType=proctrack/linuxproc and TaskPlugin=task/none need
# no cgroups (a container has none to give); the node line is `slurmd -C`'s own reading of
# this machine (CPUs, sockets, cores, memory), so slurmd never drains the node for a
# mismatch; several partitions share the one node ($DECODELAB_SLURM_PARTITIONS, default
# "main other"), so a study over two partitions can be tried here; MinJobAge keeps finished
# jobs in `scontrol show job` for an hour, since this cluster has no accounting (sacct) database.
set -euo pipefail

state_dir="${DECODELAB_SLURM_DIR:-/tmp/decodelab-slurm}"
partitions="${DECODELAB_SLURM_PARTITIONS:-main other}"
ctld_port="${DECODELAB_SLURM_CTLD_PORT:-6817}"
slurmd_port="${DECODELAB_SLURM_SLURMD_PORT:-6818}"
conf="$state_dir/slurm.conf"
socket="$state_dir/munge/munge.socket"

say() { echo "slurm-local: $*"; }
die() { echo "slurm-local: $*" >&2; exit 1; }

need_tools() {
  local tool
  for tool in munged slurmctld slurmd sinfo sbatch scontrol; do
    command -v "$tool" >/dev/null ||
      PATH="$PATH:/usr/sbin:/sbin" command -v "$tool" >/dev/null ||
      die "$tool not found: install slurm-wlm and munge (DECODELAB_SETUP_EXTRAS=slurm scripts/setup.sh)"
  done
  [[ $(id -u) -eq 0 ]] || die "needs root (slurmd starts jobs as their owner)"
}

pid_alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_daemon() {  # pid file, name
  local pid_file="$1" name="$2" i
  pid_alive "$pid_file" || return 0
  local pid
  pid=$(cat "$pid_file")
  kill "$pid" 2>/dev/null || true
  for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    say "$name (pid $pid) did not stop on SIGTERM: SIGKILL"
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pid_file"
}

write_config() {
  local node_line node_name first=1 partition
  node_line=$(slurmd -C | head -1)  # NodeName=… CPUs=… Boards=… SocketsPerBoard=… … RealMemory=…
  [[ "$node_line" == NodeName=* ]] || die "slurmd -C did not describe this node: $node_line"
  node_name=$(hostname -s)
  node_line="NodeName=$node_name ${node_line#NodeName=* }"
  {
    echo "# Written by decodelab scripts/slurm-local.sh: a one-node cluster for tests."
    echo "ClusterName=decodelab-local"
    echo "SlurmctldHost=$node_name(127.0.0.1)"  # the loopback address: no name resolution needed
    echo "SlurmctldPort=$ctld_port"
    echo "SlurmdPort=$slurmd_port"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$socket"
    echo "StateSaveLocation=$state_dir/ctld-state"
    echo "SlurmdSpoolDir=$state_dir/slurmd-spool"
    echo "SlurmctldPidFile=$state_dir/slurmctld.pid"
    echo "SlurmdPidFile=$state_dir/slurmd.pid"
    echo "SlurmctldLogFile=$state_dir/slurmctld.log"
    echo "SlurmdLogFile=$state_dir/slurmd.log"
    echo "SlurmctldDebug=info"
    echo "SlurmdDebug=info"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "SchedulerType=sched/backfill"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "MpiDefault=none"
    echo "ReturnToService=2"
    echo "MinJobAge=3600"
    echo "KillWait=5"
    echo "$node_line NodeAddr=127.0.0.1 State=UNKNOWN"
    for partition in $partitions; do
      if ((first)); then
        echo "PartitionName=$partition Nodes=$node_name Default=YES MaxTime=INFINITE State=UP"
        first=0
      else
        echo "PartitionName=$partition Nodes=$node_name MaxTime=INFINITE State=UP"
      fi
    done
  } >"$conf"
}

start() {
  need_tools
  export PATH="$PATH:/usr/sbin:/sbin"
  if pid_alive "$state_dir/slurmctld.pid" && pid_alive "$state_dir/slurmd.pid"; then
    say "already running ($conf)"
    return 0
  fi
  stop_all quietly
  mkdir -p "$state_dir"/{munge,ctld-state,slurmd-spool}
  chmod 700 "$state_dir/munge"
  if [[ ! -s "$state_dir/munge.key" ]]; then
    (umask 077 && dd if=/dev/urandom of="$state_dir/munge.key" bs=1024 count=1 status=none)
  fi
  chmod 400 "$state_dir/munge.key"
  # --force: the key and the socket sit in a folder of root's, under /tmp (sticky, world-writable).
  munged --force --key-file="$state_dir/munge.key" --socket="$socket" --pid-file="$state_dir/munged.pid" \
    --log-file="$state_dir/munged.log" --seed-file="$state_dir/munged.seed"
  write_config
  SLURM_CONF="$conf" slurmctld -f "$conf"
  SLURM_CONF="$conf" slurmd -f "$conf"
  local i state=""
  for i in $(seq 300); do
    state=$(SLURM_CONF="$conf" sinfo -h -N -o "%T" 2>/dev/null | head -1 || true)
    [[ "$state" == idle ]] && break
    sleep 0.1
  done
  if [[ "$state" != idle ]]; then
    echo "slurm-local: the node is not idle after 30 s (state: ${state:-none}); the logs:" >&2
    tail -n 20 "$state_dir/slurmctld.log" "$state_dir/slurmd.log" "$state_dir/munged.log" >&2 || true
    stop_all quietly
    exit 1
  fi
  say "up: node $(hostname -s), partitions: $partitions (export SLURM_CONF=$conf)"
}

stop_all() {
  stop_daemon "$state_dir/slurmd.pid" slurmd
  stop_daemon "$state_dir/slurmctld.pid" slurmctld
  stop_daemon "$state_dir/munged.pid" munged
  [[ "${1:-}" == quietly ]] || say "stopped (logs in $state_dir)"
}

case "${1:-}" in
  start) start ;;
  stop) stop_all ;;
  status)
    SLURM_CONF="$conf" sinfo
    SLURM_CONF="$conf" squeue
    ;;
  env) echo "export SLURM_CONF=$conf" ;;
  *)
    echo "usage: $0 start|stop|status|env" >&2
    exit 2
    ;;
esac

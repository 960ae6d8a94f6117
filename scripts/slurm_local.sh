#!/usr/bin/env bash
# A one-node SLURM cluster on localhost, for testing the harness's SLURM path against a real SLURM.
#   scripts/slurm_local.sh start   # installs Debian's slurm-wlm and munge when missing (root), starts the daemons
#   scripts/slurm_local.sh stop    # stops them
# Exit 3 (with the reason on stderr) where SLURM cannot run here: not root, or the packages cannot be had.
set -euo pipefail
STATE=${SLURM_LOCAL_STATE:-/tmp/harness-slurm}

need_root() { [ "$(id -u)" = 0 ] || { echo "slurm_local: needs root (apt-get, daemons)" >&2; exit 3; }; }

install() {
  command -v slurmctld >/dev/null && command -v munged >/dev/null && return
  need_root
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge; } >/dev/null 2>&1 \
    || { echo "slurm_local: cannot install slurm-wlm and munge" >&2; exit 3; }
}

start() {
  need_root
  install
  mkdir -p "$STATE"/{ctld,d} /etc/slurm /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge
  [ -s /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null;
                                   chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key; }
  pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
  local host cpus mem
  host=$(hostname -s); cpus=$(nproc); mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
  cat > /etc/slurm/slurm.conf <<EOF
ClusterName=harness
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
# A requeued job waits cred_expire seconds before it may start again (slurm.conf(5), AuthInfo; default 120):
# 10 s is enough for a job step's credential on one local node. The main scheduling loop runs every 2 s.
AuthInfo=cred_expire=10
SchedulerParameters=sched_interval=2,bf_interval=2
# A cancelled job's processes get SIGKILL this many seconds after SIGTERM (default 30; submitit's runs ignore
# SIGTERM, so a cancel took 30 s).
KillWait=2
# Arrays of at most 8 tasks (SLURM's default is 1001): the harness's sweeps of 12 runs are cut into arrays here
# as sweeps of thousands are on a real cluster.
MaxArraySize=8
SlurmdPidFile=$STATE/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  # a fresh cluster each start: no job of an earlier start is left to hold the node
  pgrep -x slurmctld >/dev/null || { rm -rf "$STATE"/ctld/* "$STATE"/d/*; slurmctld; }
  pgrep -x slurmd >/dev/null || slurmd
  for _ in $(seq 1 60); do
    timeout 5 sinfo -h -o %t 2>/dev/null | grep -qx idle && { echo "slurm_local: one node up ($host, $cpus CPUs)"; return; }
    timeout 5 scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
    sleep 1
  done
  echo "slurm_local: the node did not come up" >&2; sinfo >&2 || true; exit 3
}

# Waits until the daemons have exited: a start right after a stop would otherwise find a controller still
# shutting down, start none, and ask it for the node until every client call timed out.
stop() {
  local daemon
  for daemon in slurmd slurmctld munged; do
    pkill -x "$daemon" || true
    for _ in $(seq 1 50); do pgrep -x "$daemon" >/dev/null || break; sleep 0.2; done
    pkill -9 -x "$daemon" 2>/dev/null || true
  done
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac

#!/bin/sh
# start-slurm.sh start|stop DIR [GPUS [CTLD_PORT SLURMD_PORT]]
#
# Starts (or stops) a private single-node Slurm cluster on this host whose
# every file lives under DIR: a munge key and socket, slurm.conf, state,
# spool, logs and pid files. Nothing under /etc is read or written, so it
# runs next to any system-wide Slurm. It needs the Debian packages slurm-wlm
# and munge and must run as root (slurmd starts jobs as their owner).
#
# The node advertises GPUS generic "gpu" resources (default 1) with no device
# files behind them, the way a node whose GPU runtime is broken looks to the
# scheduler: a job that asks for GPUs is scheduled, and it is the job's own
# preflight that must notice there is no working GPU.
#
# On success "start" prints one line, SLURM_CONF=DIR/slurm.conf, for the
# caller to export before running sbatch, squeue or scontrol.
set -eu

cmd=${1:?usage: start-slurm.sh start|stop DIR [GPUS]}
dir=${2:?usage: start-slurm.sh start|stop DIR [GPUS]}
gpus=${3:-1}

stop_pid() {
	if [ -s "$1" ]; then
		pid=$(cat "$1")
		kill "$pid" 2>/dev/null || true
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		rm -f "$1"
	fi
}

case $cmd in
stop)
	stop_pid "$dir/run/slurmd.pid"
	stop_pid "$dir/run/slurmctld.pid"
	stop_pid "$dir/run/munged.pid"
	exit 0
	;;
start) ;;
*)
	echo "start-slurm.sh: unknown command $cmd (want start or stop)" >&2
	exit 2
	;;
esac

for tool in munged slurmctld slurmd sinfo; do
	command -v "$tool" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin
	command -v "$tool" >/dev/null 2>&1 || {
		echo "start-slurm.sh: $tool not found: install the Debian packages slurm-wlm and munge" >&2
		exit 3
	}
done
if [ "$(id -u)" != 0 ]; then
	echo "start-slurm.sh: must run as root (slurmd starts jobs as their owner)" >&2
	exit 3
fi

mkdir -p "$dir/munge" "$dir/run" "$dir/log" "$dir/state" "$dir/spool"
chmod 0700 "$dir" "$dir/munge"
if [ ! -s "$dir/munge/munge.key" ]; then
	(umask 077 && head -c 1024 /dev/urandom >"$dir/munge/munge.key")
fi
chmod 0400 "$dir/munge/munge.key"
sock=$dir/munge/munge.socket.2
munged --force --socket="$sock" --key-file="$dir/munge/munge.key" \
	--pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
	--seed-file="$dir/munge/munged.seed"

# TCP ports for slurmctld and slurmd: given, or Slurm's defaults.
ctld_port=${4:-6817}
slurmd_port=${5:-6818}

host=$(hostname -s)
cpus=$(nproc)
mem_mb=$(awk '/^MemTotal:/ {print int($2/1024*0.8)}' /proc/meminfo)

: >"$dir/plugstack.conf"
# Slurm drops a GPU without device files; plain files stand in for them.
mkdir -p "$dir/dev"
files=
n=0
while [ $n -lt "$gpus" ]; do
	: >"$dir/dev/gpu$n"
	files=$files${files:+,}$dir/dev/gpu$n
	n=$((n + 1))
done
printf 'NodeName=%s Name=gpu File=%s\n' "$host" "$files" >"$dir/gres.conf"
cat >"$dir/slurm.conf" <<CONF
ClusterName=repro-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
PlugStackConfig=$dir/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
GresTypes=gpu
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb Gres=gpu:$gpus State=UNKNOWN
PartitionName=repro Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF

export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"

i=0
until sinfo -h -o '%t' 2>/dev/null | grep -q '^idle'; do
	i=$((i + 1))
	if [ $i -gt 150 ]; then
		echo "start-slurm.sh: the node did not become idle within 30 s; logs in $dir/log" >&2
		sinfo >&2 || true
		exit 1
	fi
	sleep 0.2
done
echo "SLURM_CONF=$SLURM_CONF"

#!/usr/bin/env bash
# ctest `slurm_cluster` (label slurm): the [slurm] tests of decodelab_tests against a real
# one-node Slurm (scripts/slurm-local.sh) brought up for them in a state folder of its own
# and stopped afterwards. Fails with one line saying why where Slurm cannot run here: its
# packages are absent (DECODELAB_SETUP_EXTRAS=slurm scripts/setup.sh installs them, as the
# README's test command does) or this is not root. It never skips: a missing install is a failure.
#
#   tests/slurm/run-slurm-tests.sh build/tests/decodelab_tests      (or: ctest -L slurm)
set -uo pipefail

tests_binary="${1:?usage: run-slurm-tests.sh path/to/decodelab_tests}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export PATH="$PATH:/usr/sbin:/sbin"

for tool in munged slurmctld slurmd sbatch scontrol squeue scancel; do
  if ! command -v "$tool" >/dev/null; then
    echo "FAIL: $tool is not installed: the Slurm packages (slurm-wlm, munge) are missing; install them with" \
         "DECODELAB_SETUP_EXTRAS=slurm scripts/setup.sh"
    exit 1
  fi
done
if [[ $(id -u) -ne 0 ]]; then
  echo "FAIL: a local Slurm cluster needs root (slurmd starts jobs as their owner); run ctest -LE slurm as another user"
  exit 1
fi

state_dir="$(mktemp -d /tmp/decodelab-slurm-test.XXXXXX)"
export DECODELAB_SLURM_DIR="$state_dir"
export DECODELAB_SLURM_PARTITIONS="main other"
# Roofs are measured once per build tree, by the first task, and read by the rest.
export DECODELAB_CACHE_DIR="${DECODELAB_CACHE_DIR:-$(dirname "$tests_binary")/slurm-test-cache}"
started=$(date +%s)

stop_cluster() {
  "$repo/scripts/slurm-local.sh" stop >/dev/null
  rm -rf "$state_dir"
}
if ! "$repo/scripts/slurm-local.sh" start; then
  stop_cluster
  exit 1
fi
trap stop_cluster EXIT
export SLURM_CONF="$state_dir/slurm.conf"

"$tests_binary" "[slurm]" "${@:2}"
status=$?
if ((status != 0)); then
  echo "--- the cluster's logs (last lines) ---"
  tail -n 30 "$state_dir/slurmctld.log" "$state_dir/slurmd.log"
fi
echo "slurm_cluster: $(($(date +%s) - started)) s, cluster start and stop included"
exit "$status"

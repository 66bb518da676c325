#!/usr/bin/env bash
# Profiles one decodelab run with Nsight Systems and exports the reports `decodelab nsys`
# reads: the timeline (cuda_gpu_trace), the host's CUDA calls (cuda_api_trace), the NVTX
# ranges (nvtx_pushpop_trace: run, group N, prefill N, step N, layer N, and each op's
# range from the CUDA backend), and the per-name totals (cuda_gpu_kern_sum, cuda_api_sum).
#
# The whole process is recorded and the decode steps are picked out afterwards by their
# NVTX ranges (`decodelab nsys ... --nvtx 'step [0-9]+'`, or the GUI's NVTX row): nsys's
# own --capture-range=nvtx would record only the first matching range, which is a warm-up.
# Sampling and context switches are off: the question is the GPU timeline, not CPU hot spots.
# decodelab times its ops with CUDA events here (DECODELAB_CUDA_TIMER=events): CUPTI belongs to
# the profiler. The events timer adds a cudaEventSynchronize at most once a second, on an
# idle stream, which the reading lists among the host syncs.
#
# usage: scripts/nsys-profile.sh SCENARIO [DECODELAB RUN ARGS...]
#   e.g. scripts/nsys-profile.sh scenarios/bugs/host_sync.yaml --set workload.new_tokens=32
# env:   DECODELAB  the binary (default: build/decodelab, build-gpu/decodelab, then PATH)
#        NSYS_OUT   report base name (default: nsys-<scenario>); writes NSYS_OUT.nsys-rep and
#                   NSYS_OUT_<report>.csv
set -euo pipefail

# shellcheck source=scripts/profile-common.sh
source "$(dirname "$0")/profile-common.sh"
profile_setup nsys-profile nsys "Nsight Systems" "$0" "$@"
scenario="$1"
shift
profiled_run_of "$scenario"
out="$(report_base nsys "$scenario" "${NSYS_OUT:-}")"

nsys profile \
  --trace=cuda,nvtx,osrt \
  --sample=none \
  --cpuctxsw=none \
  --force-overwrite=true \
  --output="$out" \
  "${profiled_run[@]}" "$@"

reports=cuda_gpu_trace,cuda_api_trace,nvtx_pushpop_trace,cuda_gpu_kern_sum,cuda_api_sum
nsys stats --force-export=true --format csv --report "$reports" --output "$out" "$out.nsys-rep"

echo
echo "read it with:"
echo "  $decodelab nsys ${out}_cuda_gpu_trace.csv ${out}_cuda_api_trace.csv ${out}_nvtx_pushpop_trace.csv --nvtx 'step [0-9]+'"

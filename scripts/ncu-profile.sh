#!/usr/bin/env bash
# Profiles the kernels of one decodelab run's decode steps with Nsight Compute, collecting
# exactly the metrics `decodelab ncu` reads, and exports both CSV forms it understands.
#
# What the command line does, and why:
#   --nvtx --nvtx-include "regex:step [0-9]+/"  only kernels inside the engine's "step N"
#                                                NVTX push/pop ranges: the decode steps
#   --kernel-name regex:KERNEL_REGEX            optionally, only kernels whose name matches
#   --launch-count N                            replay at most N launches (NCU_LAUNCH_COUNT,
#                                                default 60): each is replayed once per pass
#   --clock-control none                        keep the GPU's own clocks, as in a real run
#   --metrics ...                               duration, DRAM bytes, FLOP counters (CUDA
#                                                cores and tensor pipe), SM% and memory%,
#                                                occupancy, global-load sectors and requests,
#                                                and the device's name (to pick its peaks);
#                                                only those `ncu --query-metrics` lists
# then `ncu --import` writes REPORT-raw.csv (`--csv --page raw --print-units base`, the wide
# form) and REPORT-details.csv (`--csv --print-units base --print-metric-name name`, the
# long form). The run itself is shortened to one repeat without warm-up (ncu flushes the
# caches before each replay anyway), and times its ops with CUDA events, not CUPTI, which the
# profiler owns. Counters need profiling permission: run as root or
# with NVreg_RestrictProfilingToAdminUsers=0, else ncu reports ERR_NVGPUCTRPERM.
#
# usage: scripts/ncu-profile.sh SCENARIO [KERNEL_REGEX] [-- DECODELAB RUN ARGS...]
#   e.g. scripts/ncu-profile.sh scenarios/bugs/non_contiguous.yaml attention -- --set workload.new_tokens=4
# env:   DECODELAB        the binary (default: build/decodelab, build-gpu/decodelab, then PATH)
#        NCU_OUT          report base name (default: ncu-<scenario>)
#        NCU_LAUNCH_COUNT launches to profile (default 60)
#        NCU_AVAILABLE_METRICS  a file of `ncu --query-metrics` output (default: queried)
set -euo pipefail

# shellcheck source=scripts/profile-common.sh
source "$(dirname "$0")/profile-common.sh"
profile_setup ncu-profile ncu "Nsight Compute" "$0" "$@"
scenario="$1"
shift
kernel_regex=""
if [[ $# -gt 0 && "$1" != "--" ]]; then
  kernel_regex="$1"
  shift
fi
[[ $# -gt 0 && "$1" == "--" ]] && shift
profiled_run_of "$scenario"

# The metrics profiling/trace/ncu_reader.h reads (ncu_metric::all()), and the fp16 tensor-pipe
# counters by destination that NVIDIA lists (the reader adds them up where the bare
# src_fp16 is missing): the query below keeps the names this ncu knows.
metrics=(
  gpu__time_duration.sum
  dram__bytes_read.sum
  dram__bytes_write.sum
  sm__throughput.avg.pct_of_peak_sustained_elapsed
  gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
  sm__warps_active.avg.pct_of_peak_sustained_active
  l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
  l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
  sm__sass_thread_inst_executed_op_fadd_pred_on.sum
  sm__sass_thread_inst_executed_op_fmul_pred_on.sum
  sm__sass_thread_inst_executed_op_ffma_pred_on.sum
  sm__sass_thread_inst_executed_op_hadd_pred_on.sum
  sm__sass_thread_inst_executed_op_hmul_pred_on.sum
  sm__sass_thread_inst_executed_op_hfma_pred_on.sum
  sm__sass_thread_inst_executed_op_dadd_pred_on.sum
  sm__sass_thread_inst_executed_op_dmul_pred_on.sum
  sm__sass_thread_inst_executed_op_dfma_pred_on.sum
  sm__ops_path_tensor_src_fp16.sum
  sm__ops_path_tensor_src_fp16_dst_fp16.sum
  sm__ops_path_tensor_src_fp16_dst_fp32.sum
  sm__ops_path_tensor_src_bf16_dst_fp32.sum
  sm__ops_path_tensor_src_tf32_dst_fp32.sum
  sm__ops_path_tensor_src_fp64.sum
  device__attribute_display_name
)
# An unknown metric name can make ncu refuse the whole run, and the tensor-pipe names differ
# between architectures and versions (NVIDIA lists src_fp16_dst_fp16 and _dst_fp32, not a
# bare src_fp16): ask this ncu and device which exist, and drop the others, saying so. The
# listing comes from NCU_AVAILABLE_METRICS (a file of `ncu --query-metrics` output, as
# gpu-check's preflight writes) or is queried here; one that does not even list the
# duration is not a listing (no device, an old ncu), and the full list is asked for.
listing="${NCU_AVAILABLE_METRICS:-}"
if [[ -z "$listing" ]]; then
  listing="$(mktemp)"
  trap 'rm -f "$listing"' EXIT
  ncu --query-metrics >"$listing" 2>&1 || true
fi
if grep -q '^[[:space:]]*gpu__time_duration\b' "$listing" 2>/dev/null; then
  kept=()
  for metric in "${metrics[@]}"; do
    if grep -q "^[[:space:]]*${metric%%.*}\b" "$listing"; then
      kept+=("$metric")
    else
      echo "ncu-profile: $metric is not among this ncu's metrics for this device: not collected" >&2
    fi
  done
  metrics=("${kept[@]}")
else
  echo "ncu-profile: no usable \`ncu --query-metrics\` listing: every metric asked for" >&2
fi
metric_list="$(IFS=,; echo "${metrics[*]}")"

out="$(report_base ncu "$scenario" "${NCU_OUT:-}")"
filters=(--nvtx --nvtx-include "regex:step [0-9]+/")
[[ -n "$kernel_regex" ]] && filters+=(--kernel-name "regex:$kernel_regex")

ncu \
  --target-processes all \
  "${filters[@]}" \
  --launch-count "${NCU_LAUNCH_COUNT:-60}" \
  --clock-control none \
  --metrics "$metric_list" \
  --force-overwrite \
  --export "$out" \
  "${profiled_run[@]}" --set "run={warmup: 0, repeats: 1}" "$@"

ncu --import "$out.ncu-rep" --csv --page raw --print-units base >"$out-raw.csv"
ncu --import "$out.ncu-rep" --csv --print-units base --print-metric-name name >"$out-details.csv"

echo
echo "read it with:"
echo "  $decodelab ncu $out-raw.csv          # or $out-details.csv"

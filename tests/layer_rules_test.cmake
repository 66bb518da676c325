# ctest layer_rules_refuse_forbidden_includes: the build's layer check (cmake/layer_rules.cmake,
# run before any layer library compiles) passes on a copy of the tree as it is, and fails on
# that copy with one forbidden include written into a real file of a layer — once per rule
# kind — naming the file, the line and the rule; and where a forbidden header comes in through
# another one, naming the chain.
#   cmake -DSOURCE_DIR=<tree> -DWORK_DIR=<scratch> -P tests/layer_rules_test.cmake
set(checker "${SOURCE_DIR}/cmake/layer_rules.cmake")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
foreach(layer engine bugs profiling)
  file(COPY "${SOURCE_DIR}/${layer}" DESTINATION "${WORK_DIR}")
endforeach()

function(run_checker result_var output_var)
  execute_process(COMMAND "${CMAKE_COMMAND}" -DSOURCE_DIR=${WORK_DIR} -P "${checker}"
                  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${result_var} "${result}" PARENT_SCOPE)
  set(${output_var} "${out}${err}" PARENT_SCOPE)
endfunction()

run_checker(result output)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "the layer check fails on the tree as it is:\n${output}")
endif()

# file | the forbidden include written as its first line | the rule the check must name
set(injections
  "engine/model/model.cpp|profiling/trace.h|the engine knows no profiling"
  "engine/cpu/kernels/matmul.cpp|lab/run/runner.h|the engine knows no lab"
  "bugs/host_sync.cpp|profiling/model/analysis.h|the bugs know no profiling"
  "bugs/bug_set.h|lab/scenario/scenario.h|the bugs know no lab"
  "profiling/model/analysis.cpp|lab/paths.h|profiling knows no lab"
  "profiling/measure/roof_measure.cpp|engine/cpu/fan_out.h|profiling knows no backend's insides"
  "profiling/report/printers.cpp|engine/cuda/cuda_backend.h|profiling knows no backend's insides"
  "profiling/trace/torch_trace.cpp|engine/backend.h|trace readers know no Backend"
  "profiling/model/prediction.cpp|profiling/measure/roof_measure.h|the model is pure functions of data: no Backend"
  "profiling/model/cache_residency.h|engine/dry_run_backend.h|the model is pure functions of data: no Backend"
  "profiling/diagnosis/diagnosis.cpp|engine/backend.h|the diagnosis reads a trace alone: no Backend"
  "engine/base/dtype.cpp|engine/model/model_config.h|base/ is what every part of the engine shares: it includes no other part"
  "engine/model/kv_cache.cpp|engine/cpu/stream.h|the model runs on any backend: no backend's insides"
  "engine/checkpoint/safetensors.cpp|engine/cuda/cuda_backend.h|checkpoints load through the Backend interface: no backend's insides"
  "engine/events/event_sink.cpp|engine/cpu/cpu_backend.h|the events are any backend's: no backend's insides"
  "engine/cuda/matmul.cpp|engine/cpu/kernels/kernels.h|one backend knows nothing of the other"
  "engine/cpu/kernels/rope.cpp|engine/backend.h|the kernels compute on tensor views: no Backend"
  "engine/cuda/kernels/add.cuh|engine/backend.h|the kernels compute on tensor views: no Backend"
  "bugs/no_kv_cache.cpp|engine/cpu/fan_out.h|the bugs deviate through the Backend's ops: no backend's insides")
# Forbidden includes that come in through another header: the header that gets the include |
# the include | a regular expression the check's output must match (the governed file, the
# chain of headers, the rule).
set(indirect_injections
  "profiling/trace.h|engine/backend.h|profiling/trace/[a-z_]+\\.[a-z]+:[0-9]+: #include \"profiling/trace\\.h\" brings in \"engine/backend\\.h\" \\(profiling/trace\\.h -> engine/backend\\.h\\): trace readers know no Backend"
  "engine/backend.h|engine/cpu/stream.h|engine/model/[a-z_]+\\.[a-z]+:[0-9]+: #include \"[a-z_/]+\\.h\" brings in \"engine/cpu/stream\\.h\" \\([a-z_/. >-]+ -> engine/backend\\.h -> engine/cpu/stream\\.h\\): the model runs on any backend")
set(failures 0)
foreach(injection IN LISTS injections)
  string(REPLACE "|" ";" parts "${injection}")
  list(GET parts 0 file)
  list(GET parts 1 included)
  list(GET parts 2 rule)
  if(NOT EXISTS "${WORK_DIR}/${file}")
    message(SEND_ERROR "${file}: not in the tree (update this test's injections)")
    math(EXPR failures "${failures} + 1")
    continue()
  endif()
  file(READ "${WORK_DIR}/${file}" original)
  file(WRITE "${WORK_DIR}/${file}" "#include \"${included}\"\n${original}")
  run_checker(result output)
  file(WRITE "${WORK_DIR}/${file}" "${original}")
  set(expected "${file}:1: #include \"${included}\": ${rule}")
  string(FIND "${output}" "${expected}" at)
  if(result EQUAL 0 OR at EQUAL -1)
    message(SEND_ERROR "${file}: #include \"${included}\" was not refused as expected "
                       "(exit ${result}; wanted \"${expected}\"):\n${output}")
    math(EXPR failures "${failures} + 1")
  endif()
endforeach()
foreach(injection IN LISTS indirect_injections)
  string(REPLACE "|" ";" parts "${injection}")
  list(GET parts 0 file)
  list(GET parts 1 included)
  list(GET parts 2 expected)
  file(READ "${WORK_DIR}/${file}" original)
  file(WRITE "${WORK_DIR}/${file}" "#include \"${included}\"\n${original}")
  run_checker(result output)
  file(WRITE "${WORK_DIR}/${file}" "${original}")
  if(result EQUAL 0 OR NOT output MATCHES "${expected}")
    message(SEND_ERROR "#include \"${included}\" in ${file} was not refused where it comes in indirectly "
                       "(exit ${result}; wanted a line matching \"${expected}\"):\n${output}")
    math(EXPR failures "${failures} + 1")
  endif()
endforeach()
list(LENGTH injections direct_count)
list(LENGTH indirect_injections indirect_count)
math(EXPR count "${direct_count} + ${indirect_count}")
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} of ${count} forbidden includes were not refused")
endif()
message(STATUS "layer rules: the tree passes, and each of ${count} forbidden includes fails the check")

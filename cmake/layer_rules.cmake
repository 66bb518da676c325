# The layers' rules of inclusion (docs/architecture.md, "Layers"), checked on every build:
#   cmake -DSOURCE_DIR=<tree> [-DSTAMP=<file>] -P cmake/layer_rules.cmake
# Every include in this project is written from the repository root ("profiling/model/analysis.h"),
# so one include path serves every library and an include directory cannot forbid anything;
# the rules are therefore read off the #include lines themselves. A forbidden include fails
# the build (the layer libraries depend on this check) with the file, the line and the rule
# it breaks. The ctest layer_rules_refuse_forbidden_includes runs this script on a copy of
# the tree with one forbidden include injected per rule and expects each to fail.
#
# Each rule: the folder it governs | an include prefix it may not use | why.
set(DECODELAB_LAYER_RULES
  "engine/|profiling/|the engine knows no profiling"
  "engine/|lab/|the engine knows no lab"
  "bugs/|profiling/|the bugs know no profiling"
  "bugs/|lab/|the bugs know no lab"
  "profiling/|lab/|profiling knows no lab"
  "profiling/|engine/cpu/|profiling knows no backend's insides"
  "profiling/|engine/cuda/|profiling knows no backend's insides"
  "profiling/trace/|engine/backend.h|trace readers know no Backend"
  "profiling/trace/|engine/dry_run_backend.h|trace readers know no Backend"
  "profiling/trace/|engine/device_buffer.h|trace readers know no Backend"
  "profiling/trace/|profiling/measure/|trace readers know no Backend (measure/ drives one)"
  "profiling/model/|engine/backend.h|the model is pure functions of data: no Backend"
  "profiling/model/|engine/dry_run_backend.h|the model is pure functions of data: no Backend"
  "profiling/model/|engine/device_buffer.h|the model is pure functions of data: no Backend"
  "profiling/model/|profiling/measure/|the model is pure functions of data: no Backend (measure/ drives one)"
  "profiling/diagnosis/|engine/backend.h|the diagnosis reads a trace alone: no Backend"
  "profiling/diagnosis/|engine/dry_run_backend.h|the diagnosis reads a trace alone: no Backend"
  "profiling/diagnosis/|engine/device_buffer.h|the diagnosis reads a trace alone: no Backend"
  "profiling/diagnosis/|profiling/measure/|the diagnosis reads a trace alone: no Backend (measure/ drives one)")

if(NOT DEFINED SOURCE_DIR)
  message(FATAL_ERROR "layer_rules.cmake: give -DSOURCE_DIR=<the source tree>")
endif()

set(violations "")
set(checked 0)
foreach(layer engine bugs profiling)
  file(GLOB_RECURSE layer_files RELATIVE "${SOURCE_DIR}"
       "${SOURCE_DIR}/${layer}/*.h" "${SOURCE_DIR}/${layer}/*.cpp" "${SOURCE_DIR}/${layer}/*.cu"
       "${SOURCE_DIR}/${layer}/*.cuh" "${SOURCE_DIR}/${layer}/*.inc")
  foreach(file ${layer_files})
    math(EXPR checked "${checked} + 1")
    # Lines as they are, numbered, so that a violation names its line (file(STRINGS) drops
    # empty lines, which would shift the numbers).
    file(READ "${SOURCE_DIR}/${file}" text)
    # A list splits on ';' but not inside [...] nor after a backslash (CMake's list expansion):
    # all three are taken out first, as no include line needs them.
    string(REPLACE ";" "," text "${text}")
    string(REPLACE "\\" "/" text "${text}")
    string(REPLACE "[" "(" text "${text}")
    string(REPLACE "]" ")" text "${text}")
    string(REPLACE "\n" ";" lines "${text}")
    set(line_number 0)
    foreach(line IN LISTS lines)
      math(EXPR line_number "${line_number} + 1")
      if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"")
        continue()
      endif()
      set(included "${CMAKE_MATCH_1}")
      foreach(rule IN LISTS DECODELAB_LAYER_RULES)
        string(REPLACE "|" ";" parts "${rule}")
        list(GET parts 0 folder)
        list(GET parts 1 forbidden)
        list(GET parts 2 why)
        string(FIND "${file}" "${folder}" at_folder)
        string(FIND "${included}" "${forbidden}" at_forbidden)
        if(at_folder EQUAL 0 AND at_forbidden EQUAL 0)
          string(APPEND violations "  ${file}:${line_number}: #include \"${included}\": ${why}\n")
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()

if(checked EQUAL 0)
  message(FATAL_ERROR "layer rules: no source file under ${SOURCE_DIR}/{engine,bugs,profiling}")
endif()
if(violations)
  message(FATAL_ERROR "layer rules: forbidden includes (docs/architecture.md, \"Layers\"):\n${violations}")
endif()
if(DEFINED STAMP)
  file(WRITE "${STAMP}" "layer rules: ok (${checked} files)\n")
endif()
message(STATUS "layer rules: ok (${checked} files)")

# The layers' rules of inclusion (docs/architecture.md, "Layers"), checked on every build:
#   cmake -DSOURCE_DIR=<tree> [-DSTAMP=<file>] -P cmake/layer_rules.cmake
# Every include in this project is written from the repository root ("profiling/model/analysis.h"),
# so one include path serves every library and an include directory cannot forbid anything;
# the rules are therefore read off the #include lines themselves, and each is held against
# everything an include brings in, directly or through other headers of the tree: a header a
# layer may include must not carry in what the layer may not (a trace reader including
# profiling/trace.h gets all that header includes). A forbidden include fails the build (the
# layer libraries depend on this check) with the file, the line, the chain of headers when the
# forbidden one comes in indirectly, and the rule it breaks. The ctest
# layer_rules_refuse_forbidden_includes runs this script on a copy of the tree with one
# forbidden include injected per rule and expects each to fail.
#
# Each rule: the folder it governs | an include prefix it may not use | why [| direct].
# A folder may always include its own files (engine/base/ may include engine/base/ though
# not the rest of engine/). "direct" holds a rule against the #include lines only, where an
# indirect path is known and not yet cut: profiling/model/ reaches the Backend through
# engine/model/generator.h and engine/events/op_stream.h (prediction.h's op-stream recording),
# and measure/ through profiling/report/report.h (attribution.cpp's page).
cmake_minimum_required(VERSION 3.25)  # run with -P: the policies of this version (IN_LIST)

set(DECODELAB_LAYER_RULES
  "engine/|profiling/|the engine knows no profiling"
  "engine/|lab/|the engine knows no lab"
  "engine/base/|engine/|base/ is what every part of the engine shares: it includes no other part"
  "engine/base/|bugs/|base/ is what every part of the engine shares: it includes no other part"
  "engine/model/|engine/cpu/|the model runs on any backend: no backend's insides"
  "engine/model/|engine/cuda/|the model runs on any backend: no backend's insides"
  "engine/checkpoint/|engine/cpu/|checkpoints load through the Backend interface: no backend's insides"
  "engine/checkpoint/|engine/cuda/|checkpoints load through the Backend interface: no backend's insides"
  "engine/events/|engine/cpu/|the events are any backend's: no backend's insides"
  "engine/events/|engine/cuda/|the events are any backend's: no backend's insides"
  "engine/cpu/|engine/cuda/|one backend knows nothing of the other"
  "engine/cuda/|engine/cpu/|one backend knows nothing of the other"
  "engine/cpu/kernels/|engine/backend.h|the kernels compute on tensor views: no Backend"
  "engine/cuda/kernels/|engine/backend.h|the kernels compute on tensor views: no Backend"
  "bugs/|profiling/|the bugs know no profiling"
  "bugs/|lab/|the bugs know no lab"
  "bugs/|engine/cpu/|the bugs deviate through the Backend's ops: no backend's insides"
  "bugs/|engine/cuda/|the bugs deviate through the Backend's ops: no backend's insides"
  "profiling/|lab/|profiling knows no lab"
  "profiling/|engine/cpu/|profiling knows no backend's insides"
  "profiling/|engine/cuda/|profiling knows no backend's insides"
  "profiling/trace/|engine/backend.h|trace readers know no Backend"
  "profiling/trace/|engine/dry_run_backend.h|trace readers know no Backend"
  "profiling/trace/|engine/device_buffer.h|trace readers know no Backend"
  "profiling/trace/|profiling/measure/|trace readers know no Backend (measure/ drives one)"
  "profiling/model/|engine/backend.h|the model is pure functions of data: no Backend|direct"
  "profiling/model/|engine/dry_run_backend.h|the model is pure functions of data: no Backend|direct"
  "profiling/model/|engine/device_buffer.h|the model is pure functions of data: no Backend|direct"
  "profiling/model/|profiling/measure/|the model is pure functions of data: no Backend (measure/ drives one)|direct"
  "profiling/nsight/|engine/backend.h|the Nsight readings read exports alone: no Backend"
  "profiling/nsight/|engine/dry_run_backend.h|the Nsight readings read exports alone: no Backend"
  "profiling/nsight/|engine/device_buffer.h|the Nsight readings read exports alone: no Backend"
  "profiling/nsight/|profiling/measure/|the Nsight readings read exports alone: no Backend (measure/ drives one)"
  "profiling/diagnosis/|engine/backend.h|the diagnosis reads a trace alone: no Backend"
  "profiling/diagnosis/|engine/dry_run_backend.h|the diagnosis reads a trace alone: no Backend"
  "profiling/diagnosis/|engine/device_buffer.h|the diagnosis reads a trace alone: no Backend"
  "profiling/diagnosis/|profiling/measure/|the diagnosis reads a trace alone: no Backend (measure/ drives one)")

if(NOT DEFINED SOURCE_DIR)
  message(FATAL_ERROR "layer_rules.cmake: give -DSOURCE_DIR=<the source tree>")
endif()

# A prefix as a regular expression that matches paths starting with it.
function(layer_prefix_regex prefix out_var)
  string(REGEX REPLACE "([][.+*?^$()|\\])" "\\\\\\1" escaped "${prefix}")
  set(${out_var} "^${escaped}" PARENT_SCOPE)
endfunction()

# Everything a header of the tree brings in: itself and what it includes, directly or not
# (memoised in a global property; headers outside engine/, bugs/ and profiling/ end a chain).
function(layer_reach header out_var)
  get_property(known GLOBAL PROPERTY "layer_reach_${header}" SET)
  if(NOT known)
    set(reached "${header}")
    set(queue "${header}")
    while(queue)
      list(POP_FRONT queue current)
      foreach(next IN LISTS "includes_${current}")
        if(NOT next IN_LIST reached)
          list(APPEND reached "${next}")
          list(APPEND queue "${next}")
        endif()
      endforeach()
    endwhile()
    set_property(GLOBAL PROPERTY "layer_reach_${header}" "${reached}")
  endif()
  get_property(reached GLOBAL PROPERTY "layer_reach_${header}")
  set(${out_var} "${reached}" PARENT_SCOPE)
endfunction()

# The chain of includes from a header to one it reaches: "a.h -> b.h -> c.h".
function(layer_chain from to out_var)
  set(queue "${from}")
  set(seen "${from}")
  while(queue)
    list(POP_FRONT queue current)
    if(current STREQUAL to)
      break()
    endif()
    foreach(next IN LISTS "includes_${current}")
      if(NOT next IN_LIST seen)
        list(APPEND seen "${next}")
        list(APPEND queue "${next}")
        set("parent_${next}" "${current}")
      endif()
    endforeach()
  endwhile()
  set(chain "${to}")
  set(current "${to}")
  while(NOT current STREQUAL from)
    set(current "${parent_${current}}")
    set(chain "${current} -> ${chain}")
  endwhile()
  set(${out_var} "${chain}" PARENT_SCOPE)
endfunction()

# Every file's includes, and the line of each.
set(layer_files_all "")
set(checked 0)
foreach(layer engine bugs profiling)
  file(GLOB_RECURSE layer_files RELATIVE "${SOURCE_DIR}"
       "${SOURCE_DIR}/${layer}/*.h" "${SOURCE_DIR}/${layer}/*.cpp" "${SOURCE_DIR}/${layer}/*.cu"
       "${SOURCE_DIR}/${layer}/*.cuh" "${SOURCE_DIR}/${layer}/*.inc")
  foreach(file ${layer_files})
    math(EXPR checked "${checked} + 1")
    list(APPEND layer_files_all "${file}")
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
    set("includes_${file}" "")
    set("include_lines_${file}" "")
    set(line_number 0)
    foreach(line IN LISTS lines)
      math(EXPR line_number "${line_number} + 1")
      if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"")
        list(APPEND "includes_${file}" "${CMAKE_MATCH_1}")
        list(APPEND "include_lines_${file}" "${line_number}")
      endif()
    endforeach()
  endforeach()
endforeach()

set(violations "")
foreach(file IN LISTS layer_files_all)
  # The rules that govern this file.
  set(file_rules "")
  foreach(rule IN LISTS DECODELAB_LAYER_RULES)
    string(REPLACE "|" ";" parts "${rule}")
    list(GET parts 0 folder)
    string(FIND "${file}" "${folder}" at_folder)
    if(at_folder EQUAL 0)
      list(APPEND file_rules "${rule}")
    endif()
  endforeach()
  if(NOT file_rules)
    continue()
  endif()
  list(LENGTH "includes_${file}" count)
  if(count EQUAL 0)
    continue()
  endif()
  math(EXPR last "${count} - 1")
  foreach(index RANGE ${last})
    list(GET "includes_${file}" ${index} included)
    list(GET "include_lines_${file}" ${index} line_number)
    layer_reach("${included}" reached)
    foreach(rule IN LISTS file_rules)
      string(REPLACE "|" ";" parts "${rule}")
      list(GET parts 0 folder)
      list(GET parts 1 forbidden)
      list(GET parts 2 why)
      list(LENGTH parts fields)
      layer_prefix_regex("${forbidden}" forbidden_regex)
      layer_prefix_regex("${folder}" folder_regex)
      if(fields GREATER 3)
        set(hits "${included}")  # "direct": this line only
      else()
        set(hits "${reached}")
      endif()
      list(FILTER hits INCLUDE REGEX "${forbidden_regex}")
      list(FILTER hits EXCLUDE REGEX "${folder_regex}")
      if(NOT hits)
        continue()
      endif()
      list(GET hits 0 hit)
      if(hit STREQUAL included)
        string(APPEND violations "  ${file}:${line_number}: #include \"${included}\": ${why}\n")
      else()
        layer_chain("${included}" "${hit}" chain)
        string(APPEND violations
               "  ${file}:${line_number}: #include \"${included}\" brings in \"${hit}\" (${chain}): ${why}\n")
      endif()
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

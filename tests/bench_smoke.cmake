# ctest bench_smoke: the one-command benchmark runs its quickest section and writes JSON
# holding the yardsticks, the section's figures and its targets. Nothing here judges a
# timing (those are the benchmark's own report); it checks that the command works from
# a clean build and that the file says what docs/performance.md says it does.
execute_process(COMMAND ${BENCH} overheads --json ${OUT}
                RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE errors)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "decodelab_bench_cpu overheads exited ${result}:\n${output}\n${errors}")
endif()
file(READ ${OUT} json)
foreach(path "sections;stream;triad_gbs" "sections;fma_peak;gflops" "sections;stream_costs;per_marker_us"
             "sections;stream_costs;sync_awake_us" "sections;stream_costs;lab_tiny_step_us")
  string(JSON value ERROR_VARIABLE missing GET "${json}" ${path})
  if(missing OR NOT value GREATER 0)
    message(FATAL_ERROR "${OUT}: ${path} should be a positive number, got '${value}' ${missing}")
  endif()
endforeach()
string(JSON checks LENGTH "${json}" checks)
if(NOT checks EQUAL 2)
  message(FATAL_ERROR "${OUT}: expected the 2 stream-cost targets, got ${checks}")
endif()
string(JSON met GET "${json}" checks 0 met)
if(NOT met MATCHES "^(ON|OFF|TRUE|FALSE|true|false)$")
  message(FATAL_ERROR "${OUT}: checks[0].met should be a boolean, got '${met}'")
endif()
string(FIND "${output}" "## targets (issue 7)" table)
if(table EQUAL -1)
  message(FATAL_ERROR "the printed report has no targets table:\n${output}")
endif()

# Bad arguments: exit 2 and no file, as decodelab's own commands.
file(REMOVE ${OUT}.bad)
execute_process(COMMAND ${BENCH} no_such_section --json ${OUT}.bad
                RESULT_VARIABLE result OUTPUT_QUIET ERROR_VARIABLE errors)
if(NOT result EQUAL 2 OR EXISTS ${OUT}.bad)
  message(FATAL_ERROR "an unknown section should exit 2 and write nothing; exited ${result}: ${errors}")
endif()

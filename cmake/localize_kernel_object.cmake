# Run by cmake/cpu_kernels.cmake as `cmake -DNM= -DOBJCOPY= -DINPUT= -DOUTPUT= -DKEEP= -P`:
# makes every defined symbol of the merged variant object INPUT local but KEEP (its table
# function), drops the COMDAT groups, and weakens the symbols objcopy leaves global: GCC's
# "unique" ones (nm's `u`, the function-local statics of inline templates), so that the
# copies in each variant and in the rest of the library link as one, as constant data they
# may. Only those: objcopy's --weaken would also weaken the object's *undefined*
# references (GOMP_parallel, the shared argument checks), and a weak undefined reference
# neither pulls an archive member in nor fails the link — it is null at run time, in any
# program that links the kernels without some other, strong reference to the same symbol.
foreach(variable NM OBJCOPY INPUT OUTPUT KEEP)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "localize_kernel_object.cmake: -D${variable}= is required")
  endif()
endforeach()
execute_process(COMMAND ${NM} --defined-only ${INPUT} OUTPUT_VARIABLE listing RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "localize_kernel_object.cmake: ${NM} ${INPUT} failed (${status})")
endif()
string(REGEX MATCHALL "[^\n]+" lines "${listing}")
set(unique "")
foreach(line ${lines})
  if(line MATCHES "^[0-9a-fA-F]* u (.+)$")
    string(APPEND unique "${CMAKE_MATCH_1}\n")
  endif()
endforeach()
file(WRITE ${OUTPUT}.weaken "${unique}")
execute_process(COMMAND ${OBJCOPY} --keep-global-symbol=${KEEP} --remove-section=.group
                        --weaken-symbols=${OUTPUT}.weaken ${INPUT} ${OUTPUT}
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "localize_kernel_object.cmake: ${OBJCOPY} ${INPUT} failed (${status})")
endif()

# ctest cpu_kernel_objects_link_strongly: each CPU kernel variant's object (cmake/cpu_kernels.cmake)
# exports its table function as a strong symbol and refers to nothing weakly. A weak undefined
# reference (objcopy --weaken does that to every undefined symbol) neither pulls an archive
# member in nor fails the link: in a program with no other, strong reference to the same
# symbol (GOMP_parallel, the shared argument checks) it is null, and the first kernel to call
# it jumps to address 0.
#   cmake -DNM=<nm> -DOBJECTS=<object,object,...> -P tests/kernel_objects.cmake
string(REPLACE "," ";" objects "${OBJECTS}")
if(NOT objects)
  message(FATAL_ERROR "kernel_objects.cmake: no objects given (-DOBJECTS=)")
endif()
set(failures "")
foreach(object ${objects})
  execute_process(COMMAND ${NM} ${object} OUTPUT_VARIABLE listing RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "kernel_objects.cmake: ${NM} ${object} failed (${status})")
  endif()
  get_filename_component(variant ${object} NAME_WE)
  if(NOT listing MATCHES "\n[0-9a-fA-F]+ T decodelab_cpu_kernels_${variant}\n")
    string(APPEND failures "${object}: decodelab_cpu_kernels_${variant} is not a strong (T) definition\n")
  endif()
  string(REGEX MATCHALL "\n *[wv] [^\n]+" weak "\n${listing}")
  foreach(line ${weak})
    string(STRIP "${line}" line)
    string(APPEND failures "${object}: weak undefined reference: ${line}\n")
  endforeach()
endforeach()
if(failures)
  message(FATAL_ERROR "${failures}")
endif()
list(LENGTH objects count)
message(STATUS "${count} kernel objects: table functions strong, no weak undefined references")

# The CPU kernels, compiled once per instruction-set level into one binary
# (engine/cpu/kernel_variant.h says why and how one is chosen at run time).
#
#   decodelab_cpu_kernel_objects(<out-var>)
#
# sets <out-var> to one relocatable object per variant, to be added to a library's sources.
# Each variant's files compile as an OBJECT library with DECODELAB_CPU_VARIANT=<name> and
# that variant's flags; its objects are then linked into one (`-r`), and objcopy makes every
# symbol in it local except its table function, decodelab_cpu_kernels_<name>, and drops the
# COMDAT groups (cmake/localize_kernel_object.cmake; GCC's "unique" symbols, which objcopy
# leaves global, are made weak there). Without that step the final link would merge the variants' copies of
# every inline function and template (simd.h's helpers, std::vector's members) into one,
# compiled for whichever variant came first — an AVX-512 instruction in AVX2 code.
#
# DECODELAB_CPU_DISPATCH=OFF builds one variant, `portable`, with DECODELAB_CPU_FLAGS
# (-march=native by default): fastest on the build machine, for that machine only.

# engine/cpu/kernels/<file>.cpp
set(DECODELAB_CPU_VARIANT_FILES argmax attention elementwise embedding fma_probe kv_store matmul rmsnorm rope
    kernel_table)

# Flags per variant. GCC and Clang spell them alike. BMI1/2 come with AVX2 on every CPU
# that has it, and the compiler uses them for address arithmetic.
set(DECODELAB_CPU_VARIANT_FLAGS_avx2 -mavx2 -mfma -mf16c -mbmi -mbmi2)
set(DECODELAB_CPU_VARIANT_FLAGS_avx512 ${DECODELAB_CPU_VARIANT_FLAGS_avx2} -mavx512f -mavx512bw -mavx512vl
    -mavx512dq -mavx512cd)

function(decodelab_cpu_kernel_objects out_var)
  set(sources "")
  foreach(file ${DECODELAB_CPU_VARIANT_FILES})
    list(APPEND sources ${PROJECT_SOURCE_DIR}/engine/cpu/kernels/${file}.cpp)
  endforeach()
  if(DECODELAB_CPU_DISPATCH AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    set(variants avx512 avx2 portable)
    set(DECODELAB_CPU_VARIANT_FLAGS_portable "")
  else()
    set(variants portable)
    set(DECODELAB_CPU_VARIANT_FLAGS_portable ${DECODELAB_CPU_FLAGS})
  endif()
  if(NOT CMAKE_OBJCOPY)
    message(FATAL_ERROR "decodelab: the CPU kernel variants need objcopy (binutils)")
  endif()
  set(objects "")
  set(definitions "")
  foreach(variant ${variants})
    set(target decodelab_cpu_kernels_${variant})
    add_library(${target} OBJECT ${sources})
    target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
    target_compile_definitions(${target} PRIVATE DECODELAB_CPU_VARIANT=${variant})
    target_compile_options(${target} PRIVATE -Wall -Wextra ${DECODELAB_CPU_VARIANT_FLAGS_${variant}})
    target_link_libraries(${target} PRIVATE OpenMP::OpenMP_CXX)
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    set(merged ${CMAKE_CURRENT_BINARY_DIR}/cpu_kernels/${variant}.merged.o)
    set(object ${CMAKE_CURRENT_BINARY_DIR}/cpu_kernels/${variant}.o)
    add_custom_command(OUTPUT ${object}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/cpu_kernels
      COMMAND ${CMAKE_CXX_COMPILER} -r -nostdlib -o ${merged} $<TARGET_OBJECTS:${target}>
      COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DOBJCOPY=${CMAKE_OBJCOPY} -DINPUT=${merged} -DOUTPUT=${object}
              -DKEEP=decodelab_cpu_kernels_${variant} -P ${PROJECT_SOURCE_DIR}/cmake/localize_kernel_object.cmake
      DEPENDS $<TARGET_OBJECTS:${target}> ${PROJECT_SOURCE_DIR}/cmake/localize_kernel_object.cmake
      COMMENT "CPU kernels, ${variant}: one object, its table function the only global symbol"
      COMMAND_EXPAND_LISTS VERBATIM)
    list(APPEND objects ${object})
    string(TOUPPER ${variant} upper)
    list(APPEND definitions DECODELAB_CPU_VARIANT_${upper})
  endforeach()
  set_source_files_properties(${objects} PROPERTIES EXTERNAL_OBJECT ON GENERATED ON)
  set(${out_var} ${objects} PARENT_SCOPE)
  set(DECODELAB_CPU_VARIANT_DEFINITIONS ${definitions} PARENT_SCOPE)
endfunction()

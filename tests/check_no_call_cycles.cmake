# SPDX-License-Identifier: MIT
# check_no_call_cycles.cmake: no two source files of the library (plugin/lib/, dicom/, kernels/)
# or of a host (plugin/cli, plugin/report, plugin/orthanc, plugin/python)
# call each other. A pair that does is two files with one job between them, or a function in the
# wrong file; the layers only read downwards when every pair points one way.
# From each object file: the global symbols it defines (strong definitions only: weak ones are
# inline functions and templates of some header, not of the file) and the ones it uses undefined.
# X uses Y when X uses a symbol that Y defines; the check fails for every X and Y using each other.
# cmake -DNM=nm -DOBJECT_LIST=file-with-one-object-path-per-line -P check_no_call_cycles.cmake
cmake_minimum_required(VERSION 3.22)
file(STRINGS ${OBJECT_LIST} objects)
list(LENGTH objects count)
if(count LESS 20)
  message(FATAL_ERROR "found only ${count} object files in ${OBJECT_LIST}")
endif()

# The file an object was compiled from, for messages: dh_api.dir/context.c.o -> context.c.
function(source_of object out)
  get_filename_component(name ${object} NAME)
  string(REGEX REPLACE "\\.o(bj)?$" "" name "${name}")
  set(${out} ${name} PARENT_SCOPE)
endfunction()

# Pass 1: who defines what.
foreach(object ${objects})
  execute_process(COMMAND ${NM} -g --defined-only ${object} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${object}")
  endif()
  string(REGEX MATCHALL "[^\n]+" lines "${out}")
  source_of(${object} file)
  foreach(line ${lines})
    if(line MATCHES "^[0-9a-fA-F]* *[TDBRGSC] (.+)$")
      set("defined_in_${CMAKE_MATCH_1}" ${file})
    endif()
  endforeach()
endforeach()

# Pass 2: who uses whom.
set(files "")
foreach(object ${objects})
  source_of(${object} file)
  list(APPEND files ${file})
  execute_process(COMMAND ${NM} -u ${object} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${object}")
  endif()
  string(REGEX MATCHALL "[^\n]+" lines "${out}")
  set("uses_${file}" "")
  foreach(line ${lines})
    string(REGEX REPLACE "^ *U " "" symbol "${line}")
    set(owner "${defined_in_${symbol}}")
    if(owner AND NOT owner STREQUAL file)
      list(APPEND "uses_${file}" ${owner})
      list(APPEND "uses_${file}_${owner}" ${symbol})
    endif()
  endforeach()
endforeach()

set(cycles 0)
foreach(a ${files})
  list(REMOVE_DUPLICATES "uses_${a}")
  foreach(b ${uses_${a}})
    if(a STRLESS b AND a IN_LIST "uses_${b}")
      list(REMOVE_DUPLICATES "uses_${a}_${b}")
      list(REMOVE_DUPLICATES "uses_${b}_${a}")
      message(SEND_ERROR "${a} and ${b} call each other: ${a} uses ${uses_${a}_${b}}; "
                         "${b} uses ${uses_${b}_${a}}")
      math(EXPR cycles "${cycles} + 1")
    endif()
  endforeach()
endforeach()
if(cycles EQUAL 0)
  message(STATUS "${count} object files, no two of them calling each other")
endif()

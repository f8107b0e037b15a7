# SPDX-License-Identifier: MIT
# The installed package that C and C++ hosts build against (docs/install.md), included by the top
# CMakeLists.txt once the targets exist (plugin/CMakeLists.txt installs them):
#   <libdir>/cmake/dicomhist/  dicomhistConfig.cmake, dicomhistConfigVersion.cmake and two export
#                              files: dicomhist::dicomhist (shared; nothing else to find) and
#                              dicomhist::dicomhist_static (found with COMPONENTS static, which
#                              finds its dependencies too)
#   <libdir>/pkgconfig/        dicomhist.pc: the shared library, with Requires.private and
#                              Libs.private for `pkg-config --static`
# All in the `development` component.
include(CMakePackageConfigHelpers)

set(DH_CMAKE_PACKAGE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/dicomhist" CACHE STRING
    "Where dicomhistConfig.cmake is installed, relative to the prefix")
install(EXPORT dicomhistTargets NAMESPACE dicomhist:: DESTINATION ${DH_CMAKE_PACKAGE_DIR}
        COMPONENT development)
install(EXPORT dicomhistStaticTargets NAMESPACE dicomhist:: DESTINATION ${DH_CMAKE_PACKAGE_DIR}
        COMPONENT development)
if(DH_WITH_CUDA)
  set(DH_CONFIG_CUDA_NOTE ", the static CUDA runtime")
endif()
# The config file is relocatable (it finds the prefix from its own place), so one file serves
# every prefix, DESTDIR and package.
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/dicomhistConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/dicomhistConfig.cmake INSTALL_DESTINATION ${DH_CMAKE_PACKAGE_DIR})
# The same compatibility as the shared library's SONAME (libdicomhist.so.<major>): the structs
# carry their size so that the API grows within a major version without breaking callers.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/dicomhistConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/dicomhistConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/dicomhistConfigVersion.cmake
        DESTINATION ${DH_CMAKE_PACKAGE_DIR} COMPONENT development)

# --- dicomhist.pc ----------------------------------------------------------------------------
# Libs.private and Requires.private come from the static library's own link dependencies
# (plugin/lib/CMakeLists.txt), walked through the imported targets to what a linker is given:
# those with a pkg-config module of their own become Requires.private, the rest (DCMTK, libm,
# the CUDA runtime) -l flags. DCMTK's own dcmtk.pc is not required: it names all 28 DCMTK
# libraries, dcmtkcharls among them (whose symbols clash with CharLS 2's, docs/architecture.md),
# and Requires.private modules Debian does not install with it (sndfile), so `pkg-config --static`
# fails on it.
set(_dh_pc_modules charls "charls >= 2.1" openjp2 "libopenjp2 >= 2.5" PNG::PNG libpng
                   ZLIB::ZLIB zlib OpenSSL::Crypto libcrypto)

# Depth first, each item after everything it needs; reversed below, so that every library comes
# before the libraries it needs, as a static link wants.
function(_dh_pc_visit item)
  string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" item "${item}")
  # What a C compiler driver needs (the C++ runtime): pkg-config users link with either.
  string(REGEX REPLACE "^\\$<\\$<LINK_LANGUAGE:C>:(.*)>$" "\\1" item "${item}")
  get_property(seen GLOBAL PROPERTY _DH_PC_SEEN)
  if(item STREQUAL "" OR item MATCHES "^\\$<" OR item IN_LIST seen)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY _DH_PC_SEEN "${item}")
  list(FIND _dh_pc_modules "${item}" module)
  if(TARGET ${item} AND module EQUAL -1)
    get_property(deps TARGET ${item} PROPERTY INTERFACE_LINK_LIBRARIES)
    foreach(dep IN LISTS deps)
      _dh_pc_visit("${dep}")
    endforeach()
  endif()
  set_property(GLOBAL APPEND PROPERTY _DH_PC_ORDER "${item}")
endfunction()

# The file an imported target links: its location for this build type, else its first one.
function(_dh_pc_location target out)
  string(TOUPPER "${CMAKE_BUILD_TYPE}" config)
  get_target_property(configs ${target} IMPORTED_CONFIGURATIONS)
  set(location "")
  foreach(suffix _${config} "" ${configs})
    if(NOT location)
      string(TOUPPER "${suffix}" suffix)
      if(suffix AND NOT suffix MATCHES "^_")
        set(suffix _${suffix})
      endif()
      get_target_property(location ${target} IMPORTED_LOCATION${suffix})
    endif()
  endforeach()
  if(NOT location)
    message(WARNING "dicomhist.pc: no file found for ${target}, left out of Libs.private")
  endif()
  set(${out} "${location}" PARENT_SCOPE)
endfunction()

get_target_property(_dh_links dicomhist_static LINK_LIBRARIES)
list(FILTER _dh_links EXCLUDE REGEX "^\\$<BUILD_INTERFACE:")
list(REVERSE _dh_links) # so that they keep their order once the result is reversed
foreach(_dh_item IN LISTS _dh_links)
  _dh_pc_visit("${_dh_item}")
endforeach()
get_property(_dh_order GLOBAL PROPERTY _DH_PC_ORDER)
list(REVERSE _dh_order)

set(_dh_requires "")
set(_dh_dirs "")
set(_dh_libs "")
foreach(_dh_item IN LISTS _dh_order)
  list(FIND _dh_pc_modules "${_dh_item}" _dh_index)
  if(NOT _dh_index EQUAL -1)
    math(EXPR _dh_index "${_dh_index} + 1")
    list(GET _dh_pc_modules ${_dh_index} _dh_module)
    list(APPEND _dh_requires "${_dh_module}")
    continue()
  endif()
  set(_dh_file "")
  if(TARGET ${_dh_item})
    get_target_property(_dh_type ${_dh_item} TYPE)
    if(NOT _dh_type STREQUAL "INTERFACE_LIBRARY")
      _dh_pc_location(${_dh_item} _dh_file)
    endif()
  elseif(_dh_item MATCHES "^-")
    list(APPEND _dh_libs "${_dh_item}")
  elseif(IS_ABSOLUTE "${_dh_item}")
    set(_dh_file "${_dh_item}")
  else()
    list(APPEND _dh_libs "-l${_dh_item}")
  endif()
  if(_dh_file)
    get_filename_component(_dh_dir "${_dh_file}" DIRECTORY)
    get_filename_component(_dh_name "${_dh_file}" NAME_WE)
    string(REGEX REPLACE "^lib" "" _dh_name "${_dh_name}")
    if(NOT _dh_dir IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
      list(APPEND _dh_dirs "-L${_dh_dir}")
    endif()
    list(APPEND _dh_libs "-l${_dh_name}")
  endif()
endforeach()
list(REMOVE_DUPLICATES _dh_dirs)
# Kept in order; a library named twice stays at its last place (after all that need it).
list(REVERSE _dh_libs)
list(REMOVE_DUPLICATES _dh_libs)
list(REVERSE _dh_libs)
list(JOIN _dh_requires ", " DH_PC_REQUIRES_PRIVATE)
list(JOIN _dh_dirs " " _dh_dirs)
list(JOIN _dh_libs " " _dh_libs)
string(STRIP "${_dh_dirs} ${_dh_libs}" DH_PC_LIBS_PRIVATE)

foreach(_dh_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dh_dir}}")
    set(DH_PC_${_dh_dir} "${CMAKE_INSTALL_${_dh_dir}}")
  else()
    set(DH_PC_${_dh_dir} "\${prefix}/${CMAKE_INSTALL_${_dh_dir}}")
  endif()
endforeach()
# The prefix is the one `cmake --install` (or CPack) installs into, known only then: this step
# leaves @CMAKE_INSTALL_PREFIX@ in the file, which the install step below fills in.
set(DH_PC_PREFIX "@CMAKE_INSTALL_PREFIX@")
configure_file(${CMAKE_CURRENT_LIST_DIR}/dicomhist.pc.in ${PROJECT_BINARY_DIR}/cmake/dicomhist.pc.in
               @ONLY)
install(CODE "configure_file(\"${PROJECT_BINARY_DIR}/cmake/dicomhist.pc.in\"
                             \"${PROJECT_BINARY_DIR}/cmake/dicomhist.pc\" @ONLY)"
        COMPONENT development)
install(FILES ${PROJECT_BINARY_DIR}/cmake/dicomhist.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT development)

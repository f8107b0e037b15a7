# SPDX-License-Identifier: MIT
# Debian packages from the install components, by CPack's DEB generator (docs/packaging.md says
# why CPack rather than a debian/ directory). From a build tree configured for the system:
#
#   cmake -S . -B build-deb -DCMAKE_INSTALL_PREFIX=/usr -DDH_WITH_CUDA=OFF
#   cmake --build build-deb -j && (cd build-deb && cpack -G DEB)
#
# gives, one package per component:
#   libdicomhist0      runtime      libdicomhist.so.0 (Debian's name for SONAME libdicomhist.so.0)
#   libdicomhist-dev   development  the header, the libdicomhist.so link, and whatever else the
#                                   `development` component installs (CMake package, .pc, .a)
#   dicomhist          cli          the command
#   orthanc-dicomhist  orthanc      the Orthanc plugin (GPL-3.0-or-later), as Debian's own Orthanc
#                                   plugins: /usr/lib/orthanc, a link in /usr/share/orthanc/plugins,
#                                   the commented snippet /etc/orthanc/dicomhist.json (a conffile)
# each with its copyright (DEP-5) and changelog in /usr/share/doc/<package>/, Depends from
# dpkg-shlibdeps. Needs dpkg-dev (dpkg-shlibdeps) and file; lintian checks the result
# (tests/package/test_debian_packages.sh).
if(NOT CMAKE_SYSTEM_NAME STREQUAL "Linux")
  return()
endif()

set(DH_DEB_MAINTAINER "dicomhist maintainers <maintainers@dicomhist.invalid>" CACHE STRING
    "Maintainer field of the Debian packages (Name <address>)")
set(_dh_deb_src ${PROJECT_SOURCE_DIR}/cmake/deb)
set(_dh_deb_out ${PROJECT_BINARY_DIR}/deb)

# The changelog's latest entry must be this version: one version, as for the header.
file(STRINGS ${_dh_deb_src}/changelog _dh_deb_top REGEX "^dicomhist \\(" LIMIT_COUNT 1)
if(NOT _dh_deb_top MATCHES "^dicomhist \\(${PROJECT_VERSION}\\) ")
  message(FATAL_ERROR "cmake/deb/changelog starts with '${_dh_deb_top}': add an entry for "
                      "${PROJECT_VERSION}")
endif()

# The files of cmake/deb/ start with an SPDX line, which the installed copy leaves out;
# @VARIABLES@ are replaced.
function(dh_deb_configure in out)
  file(READ ${_dh_deb_src}/${in} text)
  string(REGEX REPLACE "^# SPDX-License-Identifier: [^\n]*\n" "" text "${text}")
  string(CONFIGURE "${text}" text @ONLY)
  file(WRITE ${_dh_deb_out}/${out} "${text}")
endfunction()

# The MIT text of LICENSE in DEP-5 form: its Copyright line apart, the rest indented by one space,
# an empty line written " .".
file(STRINGS ${PROJECT_SOURCE_DIR}/LICENSE _dh_license_lines)
set(DH_DEB_MIT_TEXT "")
foreach(line IN LISTS _dh_license_lines)
  if(line MATCHES "^Copyright \\(c\\) (.*)$")
    set(DH_DEB_COPYRIGHT "${CMAKE_MATCH_1}")
  elseif(NOT line STREQUAL "MIT License")
    if(line STREQUAL "")
      set(line ".")
    endif()
    string(APPEND DH_DEB_MIT_TEXT " ${line}\n")
  endif()
endforeach()
string(REGEX REPLACE "^ \\.\n" "" DH_DEB_MIT_TEXT "${DH_DEB_MIT_TEXT}")
string(REGEX REPLACE "\n$" "" DH_DEB_MIT_TEXT "${DH_DEB_MIT_TEXT}")

dh_deb_configure(copyright.in copyright)
dh_deb_configure(copyright-orthanc.in copyright-orthanc)
dh_deb_configure(changelog changelog)
dh_deb_configure(README.Debian.orthanc README.Debian.orthanc)
find_program(DH_GZIP gzip)
if(DH_GZIP) # -n: no name nor time stamp, so that the same tree gives the same package
  execute_process(COMMAND ${DH_GZIP} -9nf changelog WORKING_DIRECTORY ${_dh_deb_out}
                  RESULT_VARIABLE _dh_gzip_result)
endif()
if(NOT DH_GZIP OR NOT _dh_gzip_result EQUAL 0)
  message(STATUS "Debian packages: not configured (gzip failed or is absent)")
  return()
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dicomhist)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "the dicomhist authors")
set(CPACK_PACKAGE_CONTACT "${DH_DEB_MAINTAINER}")
# CPack's own default summary: CPackDeb then leaves each package's description (below) as written,
# instead of putting the project's one-line description before it as the synopsis.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CMAKE_PROJECT_NAME} built using CMake")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

# Component -> package name, section, description (synopsis, then the long text).
set(_dh_deb_common_text
    "dicomhist computes histograms, histogram equalization and mutual information\n"
    "of 12- and 16-bit DICOM X-ray and CT images, exactly right on real files:\n"
    "stored values masked to BitsStored and sign-extended, modality values through\n"
    "the rescale or the Modality LUT, every common transfer syntax including\n"
    "JPEG-LS, JPEG 2000 and HTJ2K. This build runs on the CPU.\n\n")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libdicomhist${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# The library is in a folder of the dynamic loader: its package activates libc's ldconfig trigger
# (what dh_makeshlibs writes; CPack 3.25 only writes postinst/postrm scripts that run ldconfig).
file(WRITE ${_dh_deb_out}/runtime/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${_dh_deb_out}/runtime/triggers)
string(CONCAT CPACK_DEBIAN_RUNTIME_DESCRIPTION
       "histograms and mutual information of DICOM images (library)\n" ${_dh_deb_common_text}
       "This package holds the shared library, thread-safe and without global state,\n"
       "for hosts that embed it (PACS gateways, registration programs).")
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libdicomhist-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
# The static archive and the CMake package's find_dependency() need the -dev packages of the
# libraries libdicomhist links privately.
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS
    "libdcmtk-dev, libcharls-dev, libopenjp2-7-dev, libpng-dev, libssl-dev, zlib1g-dev")
string(CONCAT CPACK_DEBIAN_DEVELOPMENT_DESCRIPTION
       "histograms and mutual information of DICOM images (development files)\n"
       ${_dh_deb_common_text}
       "This package holds the C header dicomhist.h and what a C or C++ program needs\n"
       "to build against libdicomhist.")
set(CPACK_DEBIAN_CLI_PACKAGE_NAME dicomhist)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION science)
string(CONCAT CPACK_DEBIAN_CLI_DESCRIPTION
       "histograms, equalization and mutual information of DICOM images\n"
       ${_dh_deb_common_text}
       "This package holds the command dicomhist: info, histogram, mi, equalize and\n"
       "window, on files, series and whole archives, with text, JSON and CSV output,\n"
       "SVG and PNG histogram plots, and derived DICOM series written.")
# The command and the Orthanc plugin draw plots with cairo: their packages depend on libcairo2
# through dpkg-shlibdeps (CPACK_DEBIAN_PACKAGE_SHLIBDEPS above), the library's do not.
set(CPACK_DEBIAN_ORTHANC_PACKAGE_NAME orthanc-dicomhist)
set(CPACK_DEBIAN_ORTHANC_PACKAGE_SECTION science)
set(CPACK_DEBIAN_ORTHANC_PACKAGE_DEPENDS "orthanc (>= 1.10.1)")
string(CONCAT CPACK_DEBIAN_ORTHANC_DESCRIPTION
       "Orthanc plugin for histograms and equalization of DICOM images\n"
       ${_dh_deb_common_text}
       "This package holds the plugin for the Orthanc DICOM server: dicomhist's\n"
       "info, histogram, equalize, window and mi as REST routes, and automatic\n"
       "equalization of new X-ray series. It is configured in\n"
       "/etc/orthanc/dicomhist.json.")

set(CPACK_COMPONENTS_ALL runtime development cli)
if(TARGET orthanc_dicomhist)
  list(APPEND CPACK_COMPONENTS_ALL orthanc)
  # The snippet is a configuration file: kept on upgrades, removed on purge.
  file(WRITE ${_dh_deb_out}/orthanc/conffiles "${DH_ORTHANC_CONFIG_DIR}/dicomhist.json\n")
  set(CPACK_DEBIAN_ORTHANC_PACKAGE_CONTROL_EXTRA ${_dh_deb_out}/orthanc/conffiles)
endif()

# The packages' own files (the manual page, each package's copyright, changelog and README.Debian)
# join the components only in a tree configured for the system's prefix, as tools/build-debs
# configures it: a `cmake --install --component` elsewhere gets the project's files alone.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(_dh_deb_files_default ON)
else()
  set(_dh_deb_files_default OFF)
endif()
option(DH_DEB_FILES "Install the Debian packages' own files with the components"
       ${_dh_deb_files_default})

# dicomhist(1), made from the built command's --help texts (cmake/deb/manpage.cmake), for the
# command's package. Not in sanitizer builds, whose command would run under the sanitizers.
if(DH_DEB_FILES AND NOT DH_SANITIZE)
  add_custom_command(OUTPUT ${_dh_deb_out}/dicomhist.1.gz
    COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:dicomhist_cli> -DVERSION=${PROJECT_VERSION}
            -DCOMMANDS=info,histogram,mi,equalize,window -DOUT=${_dh_deb_out}/dicomhist.1.gz
            -P ${_dh_deb_src}/manpage.cmake
    DEPENDS dicomhist_cli ${_dh_deb_src}/manpage.cmake VERBATIM)
  add_custom_target(dicomhist_manpage ALL DEPENDS ${_dh_deb_out}/dicomhist.1.gz)
  install(FILES ${_dh_deb_out}/dicomhist.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
          COMPONENT cli EXCLUDE_FROM_ALL)
endif()

# Each package's /usr/share/doc/<package>: copyright and changelog (the orthanc plugin's copyright
# says GPL-3+, and it has a README.Debian). Only in component installs (CPack's).
foreach(component IN LISTS CPACK_COMPONENTS_ALL)
  if(NOT DH_DEB_FILES)
    break()
  endif()
  string(TOUPPER ${component} upper)
  set(doc ${CMAKE_INSTALL_DATADIR}/doc/${CPACK_DEBIAN_${upper}_PACKAGE_NAME})
  set(copyright ${_dh_deb_out}/copyright)
  if(component STREQUAL "orthanc")
    set(copyright ${_dh_deb_out}/copyright-orthanc)
    install(FILES ${_dh_deb_out}/README.Debian.orthanc DESTINATION ${doc} RENAME README.Debian
            COMPONENT ${component} EXCLUDE_FROM_ALL)
  endif()
  install(FILES ${copyright} DESTINATION ${doc} RENAME copyright
          COMPONENT ${component} EXCLUDE_FROM_ALL)
  install(FILES ${_dh_deb_out}/changelog.gz DESTINATION ${doc}
          COMPONENT ${component} EXCLUDE_FROM_ALL)
endforeach()

# The packages install under /usr, and their paths (/etc/orthanc, the libdir's multiarch folder)
# are those GNUInstallDirs chose at configure time for this build's prefix: cpack refuses others.
set(CPACK_DH_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_SOURCE_DIR}/cmake/DicomhistCPackCheck.cmake)
include(CPack)
cpack_add_component(runtime)
cpack_add_component(development DEPENDS runtime)
cpack_add_component(cli)
cpack_add_component(orthanc)

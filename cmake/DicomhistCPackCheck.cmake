# SPDX-License-Identifier: MIT
# Read by cpack (CPACK_PROJECT_CONFIG_FILE, cmake/DicomhistDebian.cmake) before it packages.
if(CPACK_GENERATOR STREQUAL "DEB" AND NOT CPACK_DH_INSTALL_PREFIX STREQUAL "/usr")
  message(FATAL_ERROR "Debian packages need a build configured with -DCMAKE_INSTALL_PREFIX=/usr "
                      "(this one: ${CPACK_DH_INSTALL_PREFIX})")
endif()

# The version is written once, in project(VERSION) of the top CMakeLists.txt. From it come the
# header macros (include/portattn_version.h), the Python package version (python/portattn/_version.py),
# the library's VERSION/SOVERSION, the .pc and CMake package files and the Debian packages.
# The two generated sources live in the source tree, so that the header and the binding work
# without a build; configure_file rewrites them only when their content changes, so a read-only
# source tree at a consistent version is never written to. The test version_agree checks them all.
configure_file(${CMAKE_CURRENT_LIST_DIR}/portattn_version.h.in ${PROJECT_SOURCE_DIR}/include/portattn_version.h @ONLY)
configure_file(${CMAKE_CURRENT_LIST_DIR}/portattn_version.py.in ${PROJECT_SOURCE_DIR}/python/portattn/_version.py @ONLY)

# Installs portattn three ways and builds examples/consumer against each, with find_package(portattn)
# and with pkg-config, then runs the programs:
#   1. this build, `cmake --install --prefix` into a scratch folder (a non-/usr prefix);
#   2. a CPU-only shared build for /usr with the Debian multiarch libdir lib/<arch>, installed with
#      DESTDIR; where cpack and dpkg-deb exist, also its two .deb packages, unpacked and checked;
#   3. a CPU-only static build (BUILD_SHARED_LIBS=OFF) into another non-/usr prefix, also with the
#      multiarch libdir (a relative .pc three folders deep).
# cmake -DBUILD_DIR=.. -DSOURCE_DIR=.. -DWORK_DIR=.. -DC_COMPILER=.. -DGENERATOR=.. [-DMULTIARCH=..]
#       -P install_consumer.cmake
file(REMOVE_RECURSE ${WORK_DIR})
set(multiarch_hint "")
if(NOT MULTIARCH)  # not a multiarch toolchain: CMake's prefix search does not look in lib/<arch>
  set(MULTIARCH x86_64-linux-gnu)
  set(multiarch_hint -Dportattn_DIR=<prefix>/lib/${MULTIARCH}/cmake/portattn)
endif()
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
function(same_dir what got want)  # pkg-config paths may hold ../ : compare the real folders
  file(REAL_PATH "${got}" g)
  file(REAL_PATH "${want}" w)
  if(NOT g STREQUAL w)
    message(FATAL_ERROR "pkg-config ${what} is ${got} (${g}), expected ${w}")
  endif()
endfunction()

# A CPU-only build of the source with extra cache settings, in WORK_DIR/<name>.
function(build_variant name)
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/${name} -G ${GENERATOR} -DCMAKE_C_COMPILER=${C_COMPILER}
      -DCMAKE_BUILD_TYPE=Release -DPORTATTN_ENABLE_CUDA=OFF -DPORTATTN_ENABLE_HIP=OFF -DPORTATTN_BUILD_TESTS=OFF
      -DPORTATTN_BUILD_TOOLS=OFF ${ARGN})
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/${name} --parallel 2)
endfunction()

# The consumer through find_package(portattn), the install found by prefix search (extra -D
# arguments after `prefix`); built and run as ${WORK_DIR}/consumer-<tag>/portattn_consumer.
function(consume_cmake tag prefix)
  set(cm ${WORK_DIR}/consumer-${tag})
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/consumer -B ${cm} -G ${GENERATOR} -DCMAKE_C_COMPILER=${C_COMPILER}
      -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF ${ARGN})
  run(${CMAKE_COMMAND} --build ${cm})
  run(${cm}/portattn_consumer)
endfunction()

# The consumer through pkg-config from `pcdir` only, whose includedir and libdir must be `incdir`
# and `libdir`; built and run as ${WORK_DIR}/pc_consumer-<tag>. A tree installed for /usr
# somewhere else is read through PKG_CONFIG_SYSROOT_DIR = `pc_sysroot`.
function(consume_pkgconfig tag pcdir incdir libdir static)
  set(ENV{PKG_CONFIG_PATH} ${pcdir})
  set(ENV{PKG_CONFIG_LIBDIR} ${pcdir})  # this tree only, never a system copy
  if(pc_sysroot)
    set(ENV{PKG_CONFIG_SYSROOT_DIR} ${pc_sysroot})
  else()
    unset(ENV{PKG_CONFIG_SYSROOT_DIR})
  endif()
  foreach(var includedir libdir)
    execute_process(COMMAND pkg-config --variable=${var} portattn OUTPUT_VARIABLE v RESULT_VARIABLE rc
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "pkg-config does not find portattn in ${pcdir}")
    endif()
    set(pc_${var} ${v})
  endforeach()
  same_dir(includedir "${pc_includedir}" "${incdir}")
  same_dir(libdir "${pc_libdir}" "${libdir}")
  if(static)
    set(pcflags --static)
  endif()
  execute_process(COMMAND pkg-config ${pcflags} --cflags --libs portattn OUTPUT_VARIABLE flags
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(exe ${WORK_DIR}/pc_consumer-${tag})
  run(${C_COMPILER} -std=c11 ${SOURCE_DIR}/examples/consumer/main.c ${flags} -Wl,-rpath,${libdir} -o ${exe})
  run(${exe})
endfunction()

# Both consumers of an install (see above), then what they link: the static archive leaves no
# libportattn to load (and a static install holds no .so), a shared one is loaded as .so.0.
function(consume tag prefix pcdir incdir libdir static)
  consume_cmake(${tag} ${prefix} ${ARGN})
  consume_pkgconfig(${tag} ${pcdir} ${incdir} ${libdir} ${static})
  file(GLOB so ${libdir}/libportattn.so*)
  if(static AND so)
    message(FATAL_ERROR "a static install holds ${so}")
  endif()
  foreach(bin ${WORK_DIR}/pc_consumer-${tag} ${WORK_DIR}/consumer-${tag}/portattn_consumer)
    execute_process(COMMAND readelf -d ${bin} OUTPUT_VARIABLE dyn)
    if(static AND dyn MATCHES "libportattn")
      message(FATAL_ERROR "${bin} links the shared libportattn, not the static one")
    elseif(NOT static AND NOT dyn MATCHES "NEEDED.*libportattn\\.so\\.0")
      message(FATAL_ERROR "${bin} does not load libportattn.so.0")
    endif()
  endforeach()
  message("== ${tag}: CMake and pkg-config consumers built and ran")
endfunction()

# 1. This build under a scratch prefix.
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
file(GLOB pcdir ${prefix}/lib*/pkgconfig)
get_filename_component(libdir ${pcdir} DIRECTORY)
file(GLOB shared ${libdir}/libportattn.so)
if(shared)
  consume(this-build ${prefix} ${pcdir} ${prefix}/include ${libdir} 0)
else()
  consume(this-build ${prefix} ${pcdir} ${prefix}/include ${libdir} 1)
endif()

# 2. /usr with the multiarch libdir, as a distribution installs it (DESTDIR), and as .deb packages.
build_variant(multiarch -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_LIBDIR=lib/${MULTIARCH})
set(ENV{DESTDIR} ${WORK_DIR}/root)
run(${CMAKE_COMMAND} --install ${WORK_DIR}/multiarch)
unset(ENV{DESTDIR})
set(usr ${WORK_DIR}/root/usr)
set(pc_sysroot ${WORK_DIR}/root)
string(REPLACE "<prefix>" "${usr}" hint "${multiarch_hint}")
consume(multiarch ${usr} ${usr}/lib/${MULTIARCH}/pkgconfig ${usr}/include ${usr}/lib/${MULTIARCH} 0 ${hint})
find_program(CPACK NAMES cpack HINTS ${CMAKE_COMMAND}/..)
find_program(DPKG_DEB dpkg-deb)
if(CPACK AND DPKG_DEB)
  run(${CMAKE_COMMAND} -E chdir ${WORK_DIR}/multiarch ${CPACK} -G DEB)
  file(GLOB debs ${WORK_DIR}/multiarch/*.deb)
  list(LENGTH debs n)
  if(NOT n EQUAL 2)
    message(FATAL_ERROR "cpack made ${n} packages, expected libportattn0 and libportattn-dev: ${debs}")
  endif()
  foreach(deb ${debs})
    execute_process(COMMAND ${DPKG_DEB} -f ${deb} Package Depends OUTPUT_VARIABLE fields)
    execute_process(COMMAND ${DPKG_DEB} -c ${deb} OUTPUT_VARIABLE files)
    message("${deb}:\n${fields}${files}")
    if(fields MATCHES "Package: libportattn0")
      set(want "/usr/lib/${MULTIARCH}/libportattn\\.so\\.0 -> ;/usr/share/doc/portattn/LICENSE")
    elseif(fields MATCHES "Package: libportattn-dev" AND fields MATCHES "Depends: libportattn0 \\(= ")
      set(want "/usr/include/portattn\\.h;/usr/lib/${MULTIARCH}/pkgconfig/portattn\\.pc;/usr/lib/${MULTIARCH}/cmake/portattn/portattnConfig\\.cmake;/usr/lib/${MULTIARCH}/libportattn\\.so -> ")
    else()
      message(FATAL_ERROR "unexpected package ${deb}: ${fields}")
    endif()
    foreach(w ${want})
      if(NOT files MATCHES "\\.${w}")
        message(FATAL_ERROR "${deb} lacks ${w}")
      endif()
    endforeach()
    run(${DPKG_DEB} -x ${deb} ${WORK_DIR}/deb-root)
  endforeach()
  set(usr ${WORK_DIR}/deb-root/usr)
  set(pc_sysroot ${WORK_DIR}/deb-root)
  string(REPLACE "<prefix>" "${usr}" hint "${multiarch_hint}")
  consume(deb ${usr} ${usr}/lib/${MULTIARCH}/pkgconfig ${usr}/include ${usr}/lib/${MULTIARCH} 0 ${hint})
else()
  message("-- no cpack or dpkg-deb: the .deb packages were not checked")
endif()

# 3. A static library through the same CMake package and pkg-config (--static).
unset(pc_sysroot)
build_variant(static -DBUILD_SHARED_LIBS=OFF -DCMAKE_INSTALL_LIBDIR=lib/${MULTIARCH})
set(prefix ${WORK_DIR}/static-prefix)
run(${CMAKE_COMMAND} --install ${WORK_DIR}/static --prefix ${prefix})
set(libdir ${prefix}/lib/${MULTIARCH})
string(REPLACE "<prefix>" "${prefix}" hint "${multiarch_hint}")
consume(static ${prefix} ${libdir}/pkgconfig ${prefix}/include ${libdir} 1 ${hint})
message("1 passed, 0 failed")

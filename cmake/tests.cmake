# Test conventions (see tests/README.md):
#   tl_c_tests(LAYER LIBS...)  every tests/LAYER/test_*.c becomes one CTest test,
#                              linked with LIBS; run from the build dir with
#                              TL_FIXTURES and TL_BIN (the typellm binary) set.
#   tl_sh_tests(LAYER)         every tests/LAYER/test_*.sh runs under bash with the same env.
# Tests are labelled with the layer, and "slow" when the file name ends in _slow.
set(TL_TEST_ENV "TL_FIXTURES=${TL_FIXTURES};TL_BIN=$<TARGET_FILE:typellm>;TL_SRC=${CMAKE_SOURCE_DIR};UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1;ASAN_OPTIONS=detect_leaks=1")

function(tl_c_tests layer)
  file(GLOB tests CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/test_*.c")
  foreach(t ${tests})
    get_filename_component(name ${t} NAME_WE)
    set(target ${layer}_${name})
    add_executable(${target} ${t})
    target_include_directories(${target} PRIVATE "${CMAKE_SOURCE_DIR}/include" "${CMAKE_SOURCE_DIR}/src" "${CMAKE_SOURCE_DIR}/tests")
    target_link_libraries(${target} PRIVATE ${ARGN})
    add_test(NAME ${layer}/${name} COMMAND ${target})
    set(labels ${layer})
    if(name MATCHES "_slow$")
      list(APPEND labels slow)
    endif()
    set_tests_properties(${layer}/${name} PROPERTIES ENVIRONMENT "${TL_TEST_ENV}" LABELS "${labels}" TIMEOUT 600)
  endforeach()
endfunction()

function(tl_sh_tests layer)
  file(GLOB tests CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/test_*.sh")
  foreach(t ${tests})
    get_filename_component(name ${t} NAME_WE)
    add_test(NAME ${layer}/${name} COMMAND bash ${t})
    set(labels ${layer})
    if(name MATCHES "_slow$")
      list(APPEND labels slow)
    endif()
    set_tests_properties(${layer}/${name} PROPERTIES ENVIRONMENT "${TL_TEST_ENV}" LABELS "${labels}" TIMEOUT 600)
  endforeach()
endfunction()

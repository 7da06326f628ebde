# Test conventions (see tests/README.md):
#   tl_c_tests(LAYER LIBS...)  every tests/LAYER/test_*.c becomes one CTest test,
#                              linked with LIBS; run from the build dir with
#                              TL_FIXTURES and TL_BIN (the typellm binary) set.
#   tl_sh_tests(LAYER)         every tests/LAYER/test_*.sh runs under bash with the same env.
# Tests are labelled with the layer, and "slow" when the file name ends in _slow.
# Sanitized processes exit 77 (UBSan) or 86 (ASan/LeakSanitizer) rather than
# the default 1, so a script that expects "exit 1" from bad input fails on a
# sanitizer report instead of taking it for the expected error.
# TL_SANITIZER_LOG_DIR (set by scripts/test.sh for build-asan): every ASan/LSan
# report goes to DIR/asan.PID instead of stderr, so a report from a process
# whose stderr or exit status a test does not look at (a background server)
# still fails the run. (GCC's separate libubsan ignores log_path: UBSan reports
# stay on stderr; scripts/test.sh also scans the ctest log for them.)
set(TL_SANITIZER_LOG_DIR "" CACHE PATH "Directory for sanitizer reports (empty: stderr)")
set(tl_san_log "")
if(TL_SANITIZER_LOG_DIR)
  set(tl_san_log ":log_path=${TL_SANITIZER_LOG_DIR}/asan")
endif()
set(TL_TEST_ENV "TL_FIXTURES=${TL_FIXTURES};TL_BIN=$<TARGET_FILE:typellm>;TL_SRC=${CMAKE_SOURCE_DIR};UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=77;ASAN_OPTIONS=detect_leaks=1:exitcode=86${tl_san_log}")

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

# Fuzz corpora as ordinary tests: each fuzz target (fuzz/fuzz_*.c) is linked with
# fuzz/replay.c instead of libFuzzer and replays its committed corpus fuzz/corpus/<name>/
# (seeds and every reproducer found so far) in seconds, here and in the ASan/UBSan build;
# fuzz_pathological generates the hostile inputs (10^5-deep nesting, a 10 MB line,
# 10^{10^{10}}, a catastrophic pre-tokenizer regex) and requires each to end in bounded time.
include(${CMAKE_CURRENT_LIST_DIR}/../python.cmake)
if(NOT OR1_FUZZ)
  # corpus inputs must end within 5 s each, pathological ones (10 MB of text to tokenize is
  # 3 s of real work) within 10 s; 4x that under the sanitizers
  set(OR1_REPLAY_SECONDS 5)
  set(OR1_PATHOLOGICAL_SECONDS 10)
  if(OR1_SANITIZE)
    set(OR1_REPLAY_SECONDS 20)
    set(OR1_PATHOLOGICAL_SECONDS 40)
  endif()
  file(GLOB OR1_FUZZ_TARGETS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/fuzz/fuzz_*.c)
  set(OR1_REPLAY_BINS)
  foreach(src ${OR1_FUZZ_TARGETS})
    get_filename_component(target ${src} NAME_WE)
    string(REPLACE "fuzz_" "" name ${target})
    or1_fuzz_harness(replay_${name} ${src} ${CMAKE_SOURCE_DIR}/fuzz/replay.c)
    add_test(NAME fuzz_replay_${name}
             COMMAND replay_${name} --max-seconds ${OR1_REPLAY_SECONDS} ${CMAKE_SOURCE_DIR}/fuzz/corpus/${name})
    set_tests_properties(fuzz_replay_${name} PROPERTIES TIMEOUT 600)
    list(APPEND OR1_REPLAY_BINS ${name}=$<TARGET_FILE:replay_${name}>)
  endforeach()
  or1_python_test(fuzz_pathological ${CMAKE_CURRENT_LIST_DIR}/pathological.py
                  ${CMAKE_CURRENT_BINARY_DIR}/fuzz_pathological ${OR1_PATHOLOGICAL_SECONDS} ${OR1_REPLAY_BINS}
                  TIMEOUT 900)
endif()

# or1_fuzz_harness(EXE SOURCE [extra sources...])
#
# One executable around a fuzz target's LLVMFuzzerTestOneInput: the library, the repository
# root as OR1_FUZZ_ROOT (targets read the demo model's tokenizer and configs/quickstart.yaml), and for
# fuzz_rows the command sources it calls (src/cli without main.c). The libFuzzer build
# (OR1_FUZZ) adds libFuzzer's main; the replay test (tests/fuzz) adds fuzz/replay.c.
function(or1_fuzz_harness exe src)
  get_filename_component(target ${src} NAME_WE)
  add_executable(${exe} ${src} ${ARGN})
  target_compile_definitions(${exe} PRIVATE OR1_FUZZ_ROOT="${PROJECT_SOURCE_DIR}")
  target_link_libraries(${exe} PRIVATE or1lib)
  if(target STREQUAL "fuzz_rows")
    file(GLOB cli CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/cli/*.c)
    list(REMOVE_ITEM cli ${PROJECT_SOURCE_DIR}/src/cli/main.c)
    target_sources(${exe} PRIVATE ${cli})
    target_include_directories(${exe} PRIVATE ${PROJECT_SOURCE_DIR}/src/cli ${CMAKE_BINARY_DIR}/generated)
    target_compile_definitions(${exe} PRIVATE OR1_VERSION="${PROJECT_VERSION}")
    add_dependencies(${exe} or1_version) # help.c prints the version and the commit (or1_commit.h)
  endif()
endfunction()

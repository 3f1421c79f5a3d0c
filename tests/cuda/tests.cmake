# CUDA backend: every kernel against the CPU kernel, and the device model against the CPU
# model. Built only where nvcc is found; each test exits 77 (skipped) when no GPU is visible.
include(CheckLanguage)
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  foreach(name kernels model)
    add_executable(cuda_test_${name} ${CMAKE_CURRENT_LIST_DIR}/test_${name}.c)
    set_target_properties(cuda_test_${name} PROPERTIES LINKER_LANGUAGE C)
    target_link_libraries(cuda_test_${name} PRIVATE or1cuda)
    add_test(NAME cuda_${name} COMMAND cuda_test_${name})
    set_tests_properties(cuda_${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
  endforeach()
  # the CLI with --device cuda against the CPU path (checkpoints from tests/model/ref.py)
  add_test(NAME cuda_cli COMMAND ${OR1_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_cli.py $<TARGET_FILE:or1>)
  set_tests_properties(cuda_cli PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=2;PYTHONPATH=${CMAKE_SOURCE_DIR}/tests/model")
endif()

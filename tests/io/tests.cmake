# The io module's GGUF reader, dequantizers and writer: a C unit test over hand-made malformed
# files, and gguf-py (PyPI gguf, the tests' virtual environment) as the oracle for the block
# formats, the metadata and the writer, through the small driver gguf_tool (docs/gguf.md).
include(${CMAKE_CURRENT_LIST_DIR}/../python.cmake)

add_executable(test_gguf ${CMAKE_CURRENT_LIST_DIR}/test_gguf.c)
target_link_libraries(test_gguf PRIVATE or1lib)
add_test(NAME io_gguf_malformed COMMAND test_gguf)

add_executable(gguf_tool ${CMAKE_CURRENT_LIST_DIR}/gguf_tool.c)
target_link_libraries(gguf_tool PRIVATE or1lib)

# One test per part of test_gguf.py; `real` reads the GGUF file named by OR1_GGUF_REAL (SmolLM2's
# Q4_1 file) and is skipped (exit 77) when the variable is unset or the file absent.
foreach(part blocks meta writer real)
  or1_venv_test(io_gguf_${part} ${CMAKE_CURRENT_LIST_DIR}/test_gguf.py $<TARGET_FILE:gguf_tool> ${part}
                TIMEOUT 600 ENV OMP_NUM_THREADS=2)
endforeach()
set_tests_properties(io_gguf_real PROPERTIES SKIP_RETURN_CODE 77)

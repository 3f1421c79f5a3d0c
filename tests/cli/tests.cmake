# The command line itself: help and version, flag parsing errors, difficulty's output choice,
# verify-math's gold forms, and generate's stdout kept clean of its progress bar.
include(${CMAKE_CURRENT_LIST_DIR}/../python.cmake)

or1_python_test(cli_flags ${CMAKE_CURRENT_LIST_DIR}/test_cli.py $<TARGET_FILE:or1> ${CMAKE_SOURCE_DIR}
                TIMEOUT 600 ENV OMP_NUM_THREADS=2)
# The loss options: --help-config, or1 grad --help, both parsers and docs/algorithms.md's table agree.
or1_python_test(cli_options ${CMAKE_CURRENT_LIST_DIR}/test_options.py $<TARGET_FILE:or1> ${CMAKE_SOURCE_DIR})
# docs/testing.md names every registered test.
or1_python_test(cli_docs ${CMAKE_CURRENT_LIST_DIR}/test_docs.py ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})

# scripts/parquet_to_rows.py: its Parquet reader on Apache parquet-testing files of known contents
# (tests/data/parquet), its mapping of a Skywork-OR1-RL-Data-shaped file to or1 rows (which the
# dataset loader of tests/rl then reads) and its errors on hostile files.
include(${CMAKE_CURRENT_LIST_DIR}/../python.cmake)
or1_python_test(data_parquet ${CMAKE_CURRENT_LIST_DIR}/test_parquet.py ${CMAKE_SOURCE_DIR}
                ${CMAKE_CURRENT_BINARY_DIR}/data_parquet $<TARGET_FILE:test_rl_data_driver> TIMEOUT 300)

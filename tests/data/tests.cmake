# scripts/parquet_to_rows.py: its mapping of files pyarrow writes in the Skywork-OR1-RL-Data schema
# to or1 rows (which the dataset loader of tests/rl then reads) and its errors on damaged, foreign,
# wrongly typed and null-holding files; run by the PyPI environment's python, which has pyarrow.
include(${CMAKE_CURRENT_LIST_DIR}/../python.cmake)
or1_venv_test(data_parquet ${CMAKE_CURRENT_LIST_DIR}/test_parquet.py ${CMAKE_SOURCE_DIR}
              ${CMAKE_CURRENT_BINARY_DIR}/data_parquet $<TARGET_FILE:test_rl_data_driver> TIMEOUT 120)

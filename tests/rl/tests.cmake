# RL formulas (or1/algo.h) against Python/PyTorch references, and the dataset (or1/data.h)
# on the shipped data files (data/) and on malformed rows.
include(${CMAKE_CURRENT_LIST_DIR}/../python.cmake)
add_executable(test_rl_algo_driver ${CMAKE_CURRENT_LIST_DIR}/algo_driver.c)
target_include_directories(test_rl_algo_driver PRIVATE ${CJSON_INCLUDE})
target_link_libraries(test_rl_algo_driver PRIVATE or1lib)
or1_python_test(rl_algo ${CMAKE_CURRENT_LIST_DIR}/test_algo.py $<TARGET_FILE:test_rl_algo_driver>
                ${CMAKE_CURRENT_BINARY_DIR}/rl_algo TIMEOUT 300 ENV OMP_NUM_THREADS=1)

add_executable(test_rl_data_driver ${CMAKE_CURRENT_LIST_DIR}/data_driver.c)
target_include_directories(test_rl_data_driver PRIVATE ${CJSON_INCLUDE})
target_link_libraries(test_rl_data_driver PRIVATE or1lib)
or1_python_test(rl_data ${CMAKE_CURRENT_LIST_DIR}/test_data.py $<TARGET_FILE:test_rl_data_driver>
                ${CMAKE_SOURCE_DIR}/data ${CMAKE_CURRENT_BINARY_DIR}/rl_data TIMEOUT 600 ENV OMP_NUM_THREADS=2)

add_executable(test_rl_data_fuzz ${CMAKE_CURRENT_LIST_DIR}/test_data_fuzz.c)
target_include_directories(test_rl_data_fuzz PRIVATE ${CJSON_INCLUDE})
target_link_libraries(test_rl_data_fuzz PRIVATE or1lib)
add_test(NAME rl_data_fuzz
         COMMAND test_rl_data_fuzz ${CMAKE_SOURCE_DIR}/data/aime24.jsonl
                 ${CMAKE_SOURCE_DIR}/data/code_eval.jsonl
                 ${CMAKE_SOURCE_DIR}/data/lcb_2408_2502_public_tests.jsonl)
set_tests_properties(rl_data_fuzz PROPERTIES TIMEOUT 300)

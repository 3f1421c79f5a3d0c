# Math verifier tests: labelled cases, hostile inputs, threads, the CLI, and every gold
# answer of the shipped data (data/) accepted against itself.
include(${CMAKE_CURRENT_LIST_DIR}/../python.cmake)
set(OR1_MATH_DATA ${CMAKE_SOURCE_DIR}/data)

add_executable(test_math_gold tests/math/test_math_gold.c)
target_include_directories(test_math_gold PRIVATE src ${CJSON_INCLUDE})
target_link_libraries(test_math_gold PRIVATE or1lib)
add_test(NAME math_gold_self
         COMMAND test_math_gold ${OR1_MATH_DATA}/aime24.jsonl ${OR1_MATH_DATA}/aime25.jsonl
                 ${OR1_MATH_DATA}/math500.jsonl ${OR1_MATH_DATA}/deepscaler_first500.jsonl)

add_executable(test_math_cases tests/math/test_math_cases.c)
target_include_directories(test_math_cases PRIVATE ${CJSON_INCLUDE})
target_link_libraries(test_math_cases PRIVATE or1lib pthread)
add_test(NAME math_cases COMMAND test_math_cases ${CMAKE_SOURCE_DIR}/tests/math/cases.jsonl)
add_test(NAME math_cases_threads COMMAND test_math_cases ${CMAKE_SOURCE_DIR}/tests/math/cases.jsonl --threads 4)

add_executable(test_math_hostile tests/math/test_math_hostile.c)
target_link_libraries(test_math_hostile PRIVATE or1lib)
add_test(NAME math_hostile COMMAND test_math_hostile)
set_tests_properties(math_hostile math_cases math_cases_threads math_gold_self PROPERTIES TIMEOUT 300)

or1_python_test(math_cli ${CMAKE_SOURCE_DIR}/tests/math/cli_test.py $<TARGET_FILE:or1>)

add_executable(test_math_fuzz tests/math/test_math_fuzz.c)
target_include_directories(test_math_fuzz PRIVATE ${CJSON_INCLUDE})
target_link_libraries(test_math_fuzz PRIVATE or1lib)
add_test(NAME math_fuzz COMMAND test_math_fuzz ${CMAKE_SOURCE_DIR}/tests/math/cases.jsonl 30)
set_tests_properties(math_fuzz math_cli PROPERTIES TIMEOUT 300)

# Agreement with Math-Verify on cases taken from public graders' test suites (README.md).
add_executable(test_math_parity tests/math/test_math_parity.c)
target_include_directories(test_math_parity PRIVATE ${CJSON_INCLUDE})
target_link_libraries(test_math_parity PRIVATE or1lib)
add_test(NAME math_parity COMMAND test_math_parity ${CMAKE_SOURCE_DIR}/tests/math/parity.jsonl)
set_tests_properties(math_parity PROPERTIES TIMEOUT 300)

# Agreement with the real Math-Verify (PyPI, in the tests' virtual environment) called as
# Skywork-OR1 calls it, on the shipped cases and a corpus of RL-shaped responses that the test
# generates from data/ (scripts/make_math_corpus.py); every 10th corpus pair under the sanitizers.
set(OR1_MV_EVERY 1)
if(OR1_SANITIZE)
  set(OR1_MV_EVERY 10)
endif()
or1_venv_test(math_verify_oracle ${CMAKE_CURRENT_LIST_DIR}/mv_oracle_test.py $<TARGET_FILE:or1>
              ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/math_verify_oracle --every ${OR1_MV_EVERY}
              TIMEOUT 900)

# The strict rule (reward.strict_box, --strict-box) against verl's DAPO choice of box and the real
# Math-Verify's verdict on its content, with the labels of each case.
or1_venv_test(math_strict_box ${CMAKE_CURRENT_LIST_DIR}/strict_box_test.py $<TARGET_FILE:or1> TIMEOUT 300)

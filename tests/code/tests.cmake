# Code sandbox: unit cases, hostile programs in every isolation mode the host permits, real rows.
include(${CMAKE_CURRENT_LIST_DIR}/../python.cmake)
add_executable(test_code_unit ${CMAKE_CURRENT_LIST_DIR}/test_code_unit.c)
target_link_libraries(test_code_unit PRIVATE or1lib)
add_test(NAME code_unit COMMAND test_code_unit)

add_executable(test_reward ${CMAKE_CURRENT_LIST_DIR}/test_reward.c)
target_link_libraries(test_reward PRIVATE or1lib)
add_test(NAME reward_status COMMAND test_reward ok)
add_test(NAME reward_status_rlimits COMMAND test_reward ok)
set_tests_properties(reward_status_rlimits PROPERTIES ENVIRONMENT "OR1_SANDBOX_ISOLATION=rlimits")
add_test(NAME reward_status_broken_sandbox COMMAND test_reward broken-sandbox)
set_tests_properties(reward_status_broken_sandbox PROPERTIES
                     ENVIRONMENT "OR1_SANDBOX_ISOLATION=rlimits;TMPDIR=${CMAKE_CURRENT_BINARY_DIR}/no-such-dir")

# The tool executor: ordinary and hostile calls on two workers, cancelling, a broken sandbox.
add_executable(test_tool ${CMAKE_CURRENT_LIST_DIR}/test_tool.c)
target_link_libraries(test_tool PRIVATE or1lib)
add_test(NAME code_tool COMMAND test_tool ok)
add_test(NAME code_tool_broken_sandbox COMMAND test_tool broken-sandbox)
set_tests_properties(code_tool_broken_sandbox PROPERTIES
                     ENVIRONMENT "OR1_SANDBOX_ISOLATION=rlimits;TMPDIR=${CMAKE_CURRENT_BINARY_DIR}/no-such-dir")
# It counts the host's leftover processes of its own: nothing else may run sandboxes meanwhile.
set_tests_properties(code_tool code_tool_broken_sandbox PROPERTIES RUN_SERIAL TRUE)

foreach(mode root userns rlimits)
  or1_python_test(code_hostile_${mode} ${CMAKE_CURRENT_LIST_DIR}/check_verdicts.py $<TARGET_FILE:or1>
                  ${CMAKE_CURRENT_LIST_DIR}/hostile.jsonl ${mode} ENV OR1_CODE_DEBUG=1)
  # Leftover-process checks look at the whole host: nothing else may run sandboxes meanwhile.
  set_tests_properties(code_hostile_${mode} PROPERTIES RUN_SERIAL TRUE)
endforeach()

# hundreds of programs, hostile ones among them, through one pool: verdicts and what is left
or1_python_test(code_load ${CMAKE_CURRENT_LIST_DIR}/load.py $<TARGET_FILE:or1> ${CMAKE_CURRENT_LIST_DIR}/hostile.jsonl)
set_tests_properties(code_load PROPERTIES RUN_SERIAL TRUE)

# a killed or1's sandboxed grandchildren and control groups, cleaned by the next or1
or1_python_test(code_killed ${CMAKE_CURRENT_LIST_DIR}/killed.py $<TARGET_FILE:or1>)
set_tests_properties(code_killed PROPERTIES RUN_SERIAL TRUE SKIP_RETURN_CODE 77)

or1_python_test(code_real_problems ${CMAKE_CURRENT_LIST_DIR}/real_problems.py $<TARGET_FILE:or1>
                ${CMAKE_SOURCE_DIR}/data)
set_tests_properties(code_real_problems PROPERTIES RUN_SERIAL TRUE)

# Malformed input rows: the CLI fails and names the file, the line and what is wrong.
foreach(case json:malformed_json.jsonl:2:.invalid.JSON
             missing_tests:malformed_missing_tests.jsonl:3:.missing.key.\"tests\"
             time_limit:malformed_time_limit.jsonl:1:.\"time_limit_s\".must.be
             counts:malformed_counts.jsonl:1:.2.inputs.and.1.outputs
             response:malformed_response.jsonl:1:.key.\"response\".must.be.a.string)
  string(REPLACE ":" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 file)
  list(GET parts 2 line)
  list(GET parts 3 what)
  # PASS_REGULAR_EXPRESSION alone ignores the exit status: the shell turns a zero exit into a failure.
  add_test(NAME code_cli_malformed_${name}
           COMMAND sh -c "! \"$0\" verify-code --input \"$1\"" $<TARGET_FILE:or1> ${CMAKE_CURRENT_LIST_DIR}/${file})
  set_tests_properties(code_cli_malformed_${name} PROPERTIES
                       PASS_REGULAR_EXPRESSION "or1: .*${file}:${line}:${what}")
endforeach()

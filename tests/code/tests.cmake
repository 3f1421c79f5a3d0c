# Code sandbox: unit cases, hostile programs in every isolation mode the host permits, real rows.
add_executable(test_code_unit ${CMAKE_CURRENT_LIST_DIR}/test_code_unit.c)
target_link_libraries(test_code_unit PRIVATE or1lib)
add_test(NAME code_unit COMMAND test_code_unit)

foreach(mode root userns rlimits)
  add_test(NAME code_hostile_${mode}
           COMMAND ${OR1_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/check_verdicts.py $<TARGET_FILE:or1>
                   ${CMAKE_CURRENT_LIST_DIR}/hostile.jsonl ${mode})
  # Leftover-process checks look at the whole host: nothing else may run sandboxes meanwhile.
  set_tests_properties(code_hostile_${mode} PROPERTIES RUN_SERIAL TRUE ENVIRONMENT OR1_CODE_DEBUG=1)
endforeach()

add_test(NAME code_real_problems
         COMMAND ${OR1_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/real_problems.py $<TARGET_FILE:or1>
                 ${CMAKE_SOURCE_DIR}/../shared/data)
set_tests_properties(code_real_problems PROPERTIES RUN_SERIAL TRUE)

# YAML config: getters, overrides, schema errors, hostile input, and every configs/*.yaml.
add_executable(test_config ${CMAKE_CURRENT_LIST_DIR}/test_config.c)
target_link_libraries(test_config PRIVATE or1lib)
add_test(NAME config COMMAND test_config ${CMAKE_CURRENT_BINARY_DIR}/config_scratch ${CMAKE_SOURCE_DIR}/configs
                             ${CMAKE_SOURCE_DIR}/data)
set_tests_properties(config PROPERTIES TIMEOUT 120)

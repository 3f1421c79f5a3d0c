# reward: the code sandbox's Python harness (code_driver.py) compiled in as a C string.
set(OR1_CODE_DRIVER ${CMAKE_CURRENT_LIST_DIR}/code_driver.py)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${OR1_CODE_DRIVER})
file(READ ${OR1_CODE_DRIVER} or1_driver_hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," or1_driver_bytes "${or1_driver_hex}")
file(WRITE ${CMAKE_BINARY_DIR}/generated/code_driver.c.tmp
     "/* Generated from src/reward/code_driver.py by src/reward/deps.cmake. */\n"
     "const char or1_code_driver_py[] = {${or1_driver_bytes} 0};\n")
configure_file(${CMAKE_BINARY_DIR}/generated/code_driver.c.tmp
               ${CMAKE_BINARY_DIR}/generated/code_driver.c COPYONLY)
target_sources(or1_reward PRIVATE ${CMAKE_BINARY_DIR}/generated/code_driver.c)

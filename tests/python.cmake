# The Python tests import the shared package tests/or1test (`from or1test import ...`). Each
# area's tests.cmake includes this file and registers its Python tests with or1_python_test.
# (Not named tests.cmake: the top-level CMakeLists.txt includes every tests/*/tests.cmake.)
set(OR1_TESTS_DIR ${CMAKE_CURRENT_LIST_DIR})

# or1_python_test(NAME SCRIPT [ARG...] [TIMEOUT SECONDS] [ENV VAR=VALUE...])
# Registers test NAME running SCRIPT ARG... with ${OR1_PYTHON}: tests/ on PYTHONPATH, so that the
# package imports without path tricks; no bytecode written into the source tree; the ENV variables.
function(or1_python_test name script)
  cmake_parse_arguments(PARSE_ARGV 2 T "" "TIMEOUT" "ENV")
  add_test(NAME ${name} COMMAND ${OR1_PYTHON} ${script} ${T_UNPARSED_ARGUMENTS})
  set_property(TEST ${name} PROPERTY ENVIRONMENT PYTHONPATH=${OR1_TESTS_DIR} PYTHONDONTWRITEBYTECODE=1 ${T_ENV})
  if(T_TIMEOUT)
    set_property(TEST ${name} PROPERTY TIMEOUT ${T_TIMEOUT})
  endif()
endfunction()

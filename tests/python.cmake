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

# The PyPI reference packages (scripts/python-test-requirements.txt) live in one virtual
# environment under the optimised build folder, shared by both passes of make test and made by
# make test-deps; the fixture test_venv makes it when a plain ctest run finds it missing or its
# pins changed. Tests that import those packages register with or1_venv_test.
set(OR1_VENV ${CMAKE_SOURCE_DIR}/build/venv CACHE PATH "the tests' PyPI virtual environment")
set(OR1_VENV_PYTHON ${OR1_VENV}/bin/python)
if(NOT TEST test_venv)
  add_test(NAME test_venv COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/venv.sh ${OR1_VENV}
                                  ${CMAKE_SOURCE_DIR}/scripts/python-test-requirements.txt)
  set_tests_properties(test_venv PROPERTIES FIXTURES_SETUP venv TIMEOUT 600)
endif()

# or1_venv_test(NAME SCRIPT [ARG...] [TIMEOUT SECONDS] [ENV VAR=VALUE...]): as or1_python_test,
# run by the virtual environment's python once test_venv has made it.
function(or1_venv_test name script)
  set(OR1_PYTHON ${OR1_VENV_PYTHON})
  or1_python_test(${name} ${script} ${ARGN})
  set_property(TEST ${name} APPEND PROPERTY FIXTURES_REQUIRED venv)
endfunction()

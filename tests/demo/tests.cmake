# The built-in demo: the arithmetic task generator, the demo tokenizer and SFT traces, or1 sft,
# and the shipped base model under models/arith-base.
include(${CMAKE_CURRENT_LIST_DIR}/../python.cmake)
set(OR1_DEMO_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

# Registers demo_<name>: tests/demo/<script> OR1 REPO_ROOT SCRATCH (the script empties SCRATCH).
function(or1_demo_test name script)
  or1_python_test(demo_${name} ${OR1_DEMO_TEST_DIR}/${script} $<TARGET_FILE:or1> ${CMAKE_SOURCE_DIR}
                  ${CMAKE_CURRENT_BINARY_DIR}/demo_${name} TIMEOUT 300 ENV OMP_NUM_THREADS=1)
endfunction()

or1_demo_test(gen_arith test_gen_arith.py)
or1_demo_test(traces test_traces.py)
or1_demo_test(sft test_sft.py)
or1_demo_test(base_model test_base_model.py)
or1_demo_test(run test_demo_run.py)
set_tests_properties(demo_run PROPERTIES TIMEOUT 1800)
if(OR1_SANITIZE) # 4 steps end to end under the sanitizers; learning is checked in the optimised pass
  set_property(TEST demo_run APPEND PROPERTY ENVIRONMENT OR1_DEMO_QUICK=1)
endif()
# The README's quick start as written: in the optimised pass only (it is demo_run's code path,
# which the sanitizer pass already covers, and it would double that pass's time).
if(NOT OR1_SANITIZE)
  or1_demo_test(quickstart test_quickstart.py)
  set_tests_properties(demo_quickstart PROPERTIES TIMEOUT 1800)
  # The tool-use demo shortened (make run-tools): its path beyond train_tools, which both passes run.
  or1_demo_test(tools_demo test_tools_demo.py)
  set_tests_properties(demo_tools_demo PROPERTIES TIMEOUT 1200)
  # The real-model demo shortened (make run-smollm2): SmolLM2's GGUF file (tests/real's fixture).
  or1_demo_test(smollm2_demo test_smollm2_demo.py)
  set_tests_properties(demo_smollm2_demo PROPERTIES TIMEOUT 1500 FIXTURES_REQUIRED real_model)
  set_property(TEST demo_smollm2_demo APPEND PROPERTY ENVIRONMENT OMP_NUM_THREADS=2)
endif()

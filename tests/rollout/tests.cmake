# Rollout engine: or1 generate against the float64 reference, or1 logprobs and exact distributions.
set(OR1_ROLLOUT_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

# Registers one Python driver run as a test: rollout_<name> runs <script> OR1 <args...>.
function(or1_rollout_test name script)
  add_test(NAME rollout_${name}
           COMMAND ${OR1_PYTHON} ${OR1_ROLLOUT_TEST_DIR}/${script} $<TARGET_FILE:or1> ${ARGN})
  set_tests_properties(rollout_${name} PROPERTIES TIMEOUT 900
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=2")
endfunction()

or1_rollout_test(greedy_qwen2 test_greedy.py qwen2)
or1_rollout_test(greedy_llama test_greedy.py llama)
or1_rollout_test(invariance test_invariance.py)
or1_rollout_test(logprobs test_logprobs.py)

# Rollout engine: or1 generate against the float64 reference, or1 logprobs and exact distributions.
include(${CMAKE_CURRENT_LIST_DIR}/../python.cmake)
set(OR1_ROLLOUT_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

# Registers one Python driver run as a test: rollout_<name> runs <script> OR1 <args...>.
function(or1_rollout_test name script)
  # or1's own wait (a short spin, then sleep: src/cli/main.c)
  or1_python_test(rollout_${name} ${OR1_ROLLOUT_TEST_DIR}/${script} $<TARGET_FILE:or1> ${ARGN}
                  TIMEOUT 900 ENV OMP_NUM_THREADS=2)
endfunction()

or1_rollout_test(greedy_qwen2 test_greedy.py qwen2)
or1_rollout_test(greedy_llama test_greedy.py llama)
or1_rollout_test(invariance test_invariance.py)
or1_rollout_test(logprobs test_logprobs.py)
or1_rollout_test(logprobs_bf16 test_logprobs.py bf16)
or1_rollout_test(distribution test_distribution.py)
or1_rollout_test(stops test_stops.py)
or1_rollout_test(errors test_errors.py)
or1_rollout_test(generate_inputs test_generate_inputs.py ${CMAKE_SOURCE_DIR})
# 24 layers, 1,000 new tokens (200 under the sanitizers, where 1,000 take ten times as long; at
# 120 the small pool holds one sequence and nothing is preempted)
if(OR1_SANITIZE)
  or1_rollout_test(onpolicy test_onpolicy.py 200)
else()
  or1_rollout_test(onpolicy test_onpolicy.py 1000)
endif()

# The sampler alone: exact distributions by sweeping u, log-probs, greedy ties.
add_executable(test_rollout_sample ${CMAKE_CURRENT_LIST_DIR}/test_sample.c)
target_link_libraries(test_rollout_sample PRIVATE or1lib)
add_test(NAME rollout_sampler COMMAND test_rollout_sample)
set_tests_properties(rollout_sampler PROPERTIES TIMEOUT 600 ENVIRONMENT "OMP_NUM_THREADS=2;GOMP_SPINCOUNT=1000")

# Samples that pause on a tool call: the extend after a reply against a single-turn prefill.
add_executable(test_rollout_tool_engine ${CMAKE_CURRENT_LIST_DIR}/test_tool_engine.c)
target_link_libraries(test_rollout_tool_engine PRIVATE or1lib)
add_test(NAME rollout_tool_engine COMMAND test_rollout_tool_engine)
set_tests_properties(rollout_tool_engine PROPERTIES TIMEOUT 600 ENVIRONMENT "OMP_NUM_THREADS=2;GOMP_SPINCOUNT=1000")

# or1 generate --tools with the real sandbox: calls, hostile ones contained, the turn budget.
or1_rollout_test(tools test_tools.py ${CMAKE_SOURCE_DIR})
set_tests_properties(rollout_tools PROPERTIES RUN_SERIAL TRUE)

# A weight switch inside a rollout: continuations draw what the uninterrupted samples would, and
# each token's log-prob is the training engine's under the weights that sampled it.
add_executable(test_rollout_weight_switch ${CMAKE_CURRENT_LIST_DIR}/test_weight_switch.c)
target_link_libraries(test_rollout_weight_switch PRIVATE or1lib)
add_test(NAME rollout_weight_switch COMMAND test_rollout_weight_switch ${CMAKE_CURRENT_BINARY_DIR}/rollout_weight_switch)
set_tests_properties(rollout_weight_switch PROPERTIES TIMEOUT 600 ENVIRONMENT "OMP_NUM_THREADS=2;GOMP_SPINCOUNT=1000")

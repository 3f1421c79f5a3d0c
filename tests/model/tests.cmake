# Model core: or1 logprobs / grad against the float64 PyTorch reference in tests/or1test/ref.py.
include(${CMAKE_CURRENT_LIST_DIR}/../python.cmake)
set(OR1_MODEL_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

# Registers one Python driver run as a test: model_<name> runs <script> OR1 <args...>.
function(or1_model_test name script)
  or1_python_test(model_${name} ${OR1_MODEL_TEST_DIR}/${script} $<TARGET_FILE:or1> ${ARGN}
                  TIMEOUT 600 ENV OMP_NUM_THREADS=2)
endfunction()

or1_model_test(logprobs_qwen2 test_logprobs.py qwen2)
or1_model_test(logprobs_llama test_logprobs.py llama)
or1_model_test(logprobs_qwen3 test_logprobs.py qwen3)
or1_model_test(logprobs_rope test_logprobs.py rope)
or1_model_test(logprobs_llama_attention_bias test_logprobs.py llama-bias)
or1_model_test(grad_qwen2 test_grad.py qwen2)
or1_model_test(grad_llama test_grad.py llama)
or1_model_test(grad_qwen3 test_grad.py qwen3)
or1_model_test(grad_long test_grad.py long)
or1_model_test(grad_defaults test_grad.py defaults)
or1_model_test(grad_rollout_correction test_grad.py rollout)
or1_model_test(grad_micro_batch test_microbatch.py)
or1_model_test(grad_variants test_variants.py)
or1_model_test(grad_mask test_mask.py)
or1_model_test(adamw_chain test_adamw.py)
or1_model_test(bf16 test_bf16.py)
or1_model_test(grad_finite_diff test_finite_diff.py)
or1_model_test(malformed_safetensors test_malformed.py safetensors)
or1_model_test(malformed_config test_malformed.py config)
or1_model_test(malformed_batch test_malformed.py batch)

# Registers one C unit test: model_<name> runs test_<name>.c linked with or1lib (ARGN: extra
# test properties).
function(or1_model_c_test name)
  add_executable(test_${name} ${OR1_MODEL_TEST_DIR}/test_${name}.c)
  target_link_libraries(test_${name} PRIVATE or1lib)
  add_test(NAME model_${name} COMMAND test_${name})
  if(ARGN)
    set_tests_properties(model_${name} PROPERTIES ${ARGN})
  endif()
endfunction()

# NaN and infinities through every CPU kernel: defined behaviour (the sanitizer pass aborts on
# undefined operations), NaN where it flows, and a sampler that refuses non-distributions.
or1_model_c_test(nonfinite)

# The rollout's batch-invariant matmul: a row alone equals the row in any batch, blocked or not,
# on one thread or two, and matches a double reference.
or1_model_c_test(matmul_rows TIMEOUT 600)

# The AMX tile matmul: its weight layout and exact reference everywhere; the tiles themselves
# only where the CPU and Linux allow them (elsewhere the test reports a skip, exit 77).
or1_model_c_test(amx SKIP_RETURN_CODE 77)

# The bf16 weight copy follows the fp32 masters through optimizer steps and pushes; sharded
# masters and frozen placements compute what the whole model computes.
or1_model_c_test(bf16_backend)

# Gradient checkpointing: a training forward keeping only each layer's input, and backward
# recomputing the rest, gives the same log-probs and gradients bit for bit in less memory.
or1_model_c_test(recompute)

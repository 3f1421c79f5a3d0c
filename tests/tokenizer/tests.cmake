# Tokenizer tests: a C unit test on a tokenizer.json it writes itself, and comparisons of the
# or1 CLI with Hugging Face's tokenizers (PyPI, in the tests' virtual environment) on the real
# tokenizer files of data/tokenizers, unpacked into the build folder by tokenizer_files.
include(${CMAKE_CURRENT_LIST_DIR}/../python.cmake)
add_executable(test_tokenizer ${CMAKE_CURRENT_LIST_DIR}/test_tokenizer.c)
target_link_libraries(test_tokenizer PRIVATE or1lib)
add_test(NAME tokenizer_unit COMMAND test_tokenizer ${CMAKE_CURRENT_BINARY_DIR}/tokenizer_unit)

set(OR1_TOK_REF_DIR ${CMAKE_CURRENT_BINARY_DIR}/tokenizer_ref)
or1_python_test(tokenizer_files ${CMAKE_CURRENT_LIST_DIR}/ref_files.py ${CMAKE_SOURCE_DIR}/data
                ${OR1_TOK_REF_DIR})
set_tests_properties(tokenizer_files PROPERTIES FIXTURES_SETUP tokenizer_files)
# Under the sanitizers the data texts and the stress corpus are taken in part (--quick); the
# refusals of text neither library takes are the same for every layout and checked with one.
set(OR1_TOK_QUICK)
if(OR1_SANITIZE)
  set(OR1_TOK_QUICK --quick)
endif()
foreach(layout qwen2_5 qwen3 r1_distill llama3 deepseek_v3 gpt2)
  set(refused)
  if(layout STREQUAL "qwen2_5")
    set(refused --refused)
  endif()
  or1_venv_test(tokenizer_ref_${layout} ${CMAKE_CURRENT_LIST_DIR}/compare.py $<TARGET_FILE:or1>
                ${layout} ${OR1_TOK_REF_DIR} ${CMAKE_CURRENT_LIST_DIR}/corpus.jsonl ${CMAKE_SOURCE_DIR}/data
                ${OR1_TOK_QUICK} ${refused} TIMEOUT 600)
  set_property(TEST tokenizer_ref_${layout} APPEND PROPERTY FIXTURES_REQUIRED tokenizer_files)
endforeach()
add_test(NAME tokenizer_cli_errors
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli_errors.sh $<TARGET_FILE:or1> ${OR1_TOK_REF_DIR}/qwen2_5)
set_tests_properties(tokenizer_cli_errors PROPERTIES FIXTURES_REQUIRED tokenizer_files)
# The Jinja interpreter against jinja2 configured as transformers configures it, over the chat
# templates of tests/tokenizer/templates.
or1_venv_test(tokenizer_jinja_oracle ${CMAKE_CURRENT_LIST_DIR}/jinja_oracle.py $<TARGET_FILE:or1>
              ${CMAKE_CURRENT_LIST_DIR}/templates TIMEOUT 300)
add_executable(test_jinja ${CMAKE_CURRENT_LIST_DIR}/test_jinja.c)
target_link_libraries(test_jinja PRIVATE or1lib)
add_test(NAME tokenizer_jinja_unit COMMAND test_jinja)

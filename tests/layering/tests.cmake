# The layering the build enforces (cmake/modules.cmake), shown failing where it must:
# - layering_upward_include / layering_private_include build a file of the model module that
#   includes train's header / another module's private header; the build must fail;
# - layering_symbols checks every module's archive: each or1_ symbol it uses is defined in it
#   or in a module below it, no source includes another module's files by a path, and every
#   external symbol it defines starts with or1_ or the module's internal prefix (train_, model_, ...);
# - layering_named_init checks that no C/CUDA file builds a struct typedef'd in a header by
#   position: every element of such an initializer names its field (.old_logp = ...).
include(${CMAKE_CURRENT_LIST_DIR}/../python.cmake)
foreach(kind includes_train includes_private)
  add_library(layering_model_${kind} OBJECT EXCLUDE_FROM_ALL ${CMAKE_CURRENT_LIST_DIR}/model_${kind}.c)
  target_include_directories(layering_model_${kind} PRIVATE ${CMAKE_BINARY_DIR}/layers/model)
endforeach()
add_test(NAME layering_upward_include
         COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target layering_model_includes_train)
add_test(NAME layering_private_include
         COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target layering_model_includes_private)
set_tests_properties(layering_upward_include layering_private_include PROPERTIES WILL_FAIL TRUE)
or1_python_test(layering_symbols ${CMAKE_CURRENT_LIST_DIR}/check_layers.py ${CMAKE_BINARY_DIR}/layers/modules.txt
                ${PROJECT_SOURCE_DIR})
or1_python_test(layering_named_init ${CMAKE_CURRENT_LIST_DIR}/check_named_init.py ${PROJECT_SOURCE_DIR}
                src tests bench fuzz demo)

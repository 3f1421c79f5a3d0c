# or1_module(NAME HEADERS h... [DEPS m...] [LIBS l...] [INCLUDES d...] [DIR d] [HEADER_DIR d])
#
# One module of the library: a static target or1_NAME built from DIR/*.c (default src/NAME).
# Its public headers (HEADERS, under HEADER_DIR, default include/or1) and those of every module
# it builds on, directly or not, are linked into build/layers/NAME/or1/; that folder is the
# module's only include path. So a module cannot include the header of a module above it or
# beside it, nor another module's private header (src/ is on no include path): the build fails.
# Modules must be declared lowest first; OR1_MODULES lists them in that order.
function(or1_module name)
  cmake_parse_arguments(M "" "DIR;HEADER_DIR" "HEADERS;DEPS;LIBS;INCLUDES" ${ARGN})
  if(NOT M_DIR)
    set(M_DIR src/${name})
  endif()
  if(NOT M_HEADER_DIR)
    set(M_HEADER_DIR include/or1)
  endif()
  set(visible)
  foreach(h ${M_HEADERS})
    list(APPEND visible ${PROJECT_SOURCE_DIR}/${M_HEADER_DIR}/${h})
  endforeach()
  foreach(d ${M_DEPS})
    if(NOT TARGET or1_${d})
      message(FATAL_ERROR "module ${name} builds on ${d}, which is not declared before it")
    endif()
    get_property(dv GLOBAL PROPERTY OR1_VISIBLE_${d})
    list(APPEND visible ${dv})
  endforeach()
  list(REMOVE_DUPLICATES visible)
  set_property(GLOBAL PROPERTY OR1_VISIBLE_${name} ${visible})
  or1_layer_dir(${name} "${visible}")

  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${M_DIR}/*.c)
  add_library(or1_${name} STATIC ${sources})
  target_include_directories(or1_${name} PRIVATE ${CMAKE_BINARY_DIR}/layers/${name} ${M_INCLUDES})
  set(deps)
  foreach(d ${M_DEPS})
    list(APPEND deps or1_${d})
  endforeach()
  target_link_libraries(or1_${name} PUBLIC ${deps} ${M_LIBS})
  set(below)
  foreach(d ${M_DEPS})
    get_property(db GLOBAL PROPERTY OR1_BELOW_${d})
    list(APPEND below ${d} ${db})
  endforeach()
  list(REMOVE_DUPLICATES below)
  set_property(GLOBAL PROPERTY OR1_BELOW_${name} ${below})
  string(JOIN " " below_text ${below})
  set_property(GLOBAL APPEND PROPERTY OR1_MODULE_TABLE "${name} ${M_DIR} $<TARGET_FILE:or1_${name}> ${below_text}")
  set(OR1_MODULES ${OR1_MODULES} or1_${name} PARENT_SCOPE)
endfunction()

# Writes build/layers/modules.txt: one line per module, lowest first: its name, its source
# folder, its archive and every module it builds on (what tests/layering checks against).
function(or1_module_table)
  get_property(rows GLOBAL PROPERTY OR1_MODULE_TABLE)
  string(JOIN "\n" text ${rows})
  file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/layers/modules.txt CONTENT "${text}\n")
endfunction()

# Fills build/layers/NAME/or1/ with links to exactly the given headers (stale ones removed).
function(or1_layer_dir name headers)
  set(dir ${CMAKE_BINARY_DIR}/layers/${name}/or1)
  file(REMOVE_RECURSE ${dir})
  file(MAKE_DIRECTORY ${dir})
  foreach(h ${headers})
    get_filename_component(base ${h} NAME)
    file(CREATE_LINK ${h} ${dir}/${base} SYMBOLIC)
  endforeach()
endfunction()

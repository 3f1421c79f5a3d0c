# The emulated CUDA backend (tests only): the unchanged src/cuda sources, rewritten at build time
# (rewrite.cmake) and compiled by the host C++ compiler against the emulator's CUDA, cuBLAS and
# NCCL headers (include/), linked with the emulator runtime (or1_cuda_emu_rt). Rewritten sources
# are built with the thread sanitizer's instrumentation and no sanitizer runtime: its calls on
# every load and store are the emulator's memory checks (sched.cpp). A program whose target
# property OR1_CUDA_EMU is on links or1_cuda_emu in place of or1_cuda (top-level CMakeLists.txt).
enable_language(CXX)
set(OR1_EMU_DIR ${CMAKE_CURRENT_LIST_DIR})

# under OR1_SANITIZE the rewritten sources also get UBSan, the runtime ASan + UBSan (C files get
# them from the top level; C++ files do not)
set(OR1_EMU_KERNEL_FLAGS -fsanitize=thread --param=tsan-instrument-func-entry-exit=0)
set(OR1_EMU_RUNTIME_FLAGS)
if(OR1_SANITIZE)
  list(APPEND OR1_EMU_KERNEL_FLAGS -fsanitize=undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  set(OR1_EMU_RUNTIME_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
endif()

# or1_emu_rewrite(OUT_VAR SRC...): the emulator's host C++ of each .cu source (build/cuda_emu/).
function(or1_emu_rewrite out_var)
  set(outs)
  foreach(src ${ARGN})
    get_filename_component(name ${src} NAME_WE)
    set(out ${CMAKE_BINARY_DIR}/cuda_emu/${name}.cpp)
    add_custom_command(OUTPUT ${out}
                       COMMAND ${CMAKE_COMMAND} -DIN=${src} -DOUT=${out} -P ${OR1_EMU_DIR}/rewrite.cmake
                       DEPENDS ${src} ${OR1_EMU_DIR}/rewrite.cmake
                       COMMENT "Rewriting ${name}.cu for the CUDA emulator")
    list(APPEND outs ${out})
  endforeach()
  set_source_files_properties(${outs} PROPERTIES COMPILE_OPTIONS "${OR1_EMU_KERNEL_FLAGS}")
  set(${out_var} ${outs} PARENT_SCOPE)
endfunction()

# The runtime: devices, memory, launches and their checks, cuBLAS, NCCL over MPI.
set(rt ${OR1_EMU_DIR}/runtime.cpp ${OR1_EMU_DIR}/sched.cpp ${OR1_EMU_DIR}/cublas.cpp)
if(MPI_C_FOUND)
  list(APPEND rt ${OR1_EMU_DIR}/nccl.cpp)
endif()
add_library(or1_cuda_emu_rt STATIC ${rt})
set_source_files_properties(${rt} PROPERTIES COMPILE_OPTIONS "${OR1_EMU_RUNTIME_FLAGS}")
target_include_directories(or1_cuda_emu_rt PUBLIC ${OR1_EMU_DIR}/include PRIVATE ${OR1_EMU_DIR})
target_link_libraries(or1_cuda_emu_rt PUBLIC stdc++ Threads::Threads ${CMAKE_DL_LIBS})
if(MPI_C_FOUND)
  target_link_libraries(or1_cuda_emu_rt PUBLIC MPI::MPI_C)
endif()

# The backend: src/cuda rewritten, and device.c as in or1_cuda.
file(GLOB OR1_EMU_CU CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/cuda/*.cu)
or1_emu_rewrite(OR1_EMU_KERNELS ${OR1_EMU_CU})
add_library(or1_cuda_emu STATIC ${OR1_EMU_KERNELS} ${PROJECT_SOURCE_DIR}/src/cuda/device.c)
target_include_directories(or1_cuda_emu PRIVATE ${PROJECT_SOURCE_DIR}/src/cuda ${CMAKE_BINARY_DIR}/layers/cuda
                                                ${PROJECT_SOURCE_DIR}/src/model/impl)
target_link_libraries(or1_cuda_emu PUBLIC or1_model or1_cuda_emu_rt)
if(MPI_C_FOUND)
  target_compile_definitions(or1_cuda_emu PRIVATE OR1_NCCL)
endif()
foreach(t or1_cuda_emu_rt or1_cuda_emu)
  set_target_properties(${t} PROPERTIES CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
  target_compile_options(${t} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Werror;-Wno-unknown-pragmas;-g>")
endforeach()

# The emulator's own cases (test_selftest.py runs each and checks its outcome).
or1_emu_rewrite(OR1_EMU_SELFTEST ${OR1_EMU_DIR}/selftest.cu)
add_executable(cuda_emu_selftest ${OR1_EMU_SELFTEST})
target_link_libraries(cuda_emu_selftest PRIVATE or1_cuda_emu_rt)
target_include_directories(cuda_emu_selftest PRIVATE ${PROJECT_SOURCE_DIR}/src/cuda)
set_target_properties(cuda_emu_selftest PROPERTIES CXX_STANDARD 20)
target_compile_options(cuda_emu_selftest PRIVATE -Wall -Wextra -Werror -g)
or1_python_test(cuda_emu_selftest ${OR1_EMU_DIR}/test_selftest.py $<TARGET_FILE:cuda_emu_selftest> TIMEOUT 300)

# or1_emu_program(TARGET): links TARGET with the emulated backend instead of or1_cuda.
function(or1_emu_program target)
  set_target_properties(${target} PROPERTIES OR1_CUDA_EMU ON)
endfunction()

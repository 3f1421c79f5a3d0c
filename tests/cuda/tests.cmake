# CUDA backend: every kernel against the CPU kernel, every backend operation against the CPU
# backend's, the device model against the CPU model, the CLI with --device cuda, and the trainer
# on the device. Each runs on the emulated GPU of
# tests/cuda/emu in both scheduling orders (cuda_*_emu, cuda_*_emu_reverse) on every machine, and
# on a real GPU too (cuda_*) where nvcc built the backend and a GPU was visible at configuration.
# The sanitizer build runs the forward order only: the reverse order checks that results do not
# depend on which block runs first, a property of the kernels' logic the optimised build checks;
# the same threads touch the same memory in either order, which is what the sanitizers watch.
include(${CMAKE_CURRENT_LIST_DIR}/../python.cmake)
if(OR1_FUZZ) # the fuzz build is host-only (clang sanitizer flags)
  return()
endif()
include(${CMAKE_CURRENT_LIST_DIR}/emu/emu.cmake)
set(OR1_GPU_VISIBLE OFF)
if(CMAKE_CUDA_COMPILER)
  execute_process(COMMAND nvidia-smi -L OUTPUT_VARIABLE gpus RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0 AND gpus MATCHES "GPU ")
    set(OR1_GPU_VISIBLE ON)
  endif()
endif()

# The or1 program on the emulated GPU, for the CLI and trainer tests.
or1_program(or1-cuda-emu)
or1_emu_program(or1-cuda-emu)

foreach(variant emu emu_reverse gpu)
  if(variant STREQUAL "gpu")
    if(NOT OR1_GPU_VISIBLE)
      continue()
    endif()
    set(tag "")
    set(suffix "")
    set(or1 $<TARGET_FILE:or1>)
    set(env "")
  else()
    set(tag _${variant})
    set(suffix _emu)
    set(or1 $<TARGET_FILE:or1-cuda-emu>)
    set(env OR1_EMU_ORDER=forward)
    if(variant STREQUAL "emu_reverse")
      if(OR1_SANITIZE)
        continue()
      endif()
      set(env OR1_EMU_ORDER=reverse)
    endif()
  endif()
  foreach(name kernels model backend_ops)
    set(exe cuda_test_${name}${suffix})
    if(NOT TARGET ${exe})
      add_executable(${exe} ${CMAKE_CURRENT_LIST_DIR}/test_${name}.c)
      set_target_properties(${exe} PROPERTIES LINKER_LANGUAGE C)
      target_link_libraries(${exe} PRIVATE or1lib)
      # cuda_kernels.h and the backend operation table (backend_impl.h)
      target_include_directories(${exe} PRIVATE ${PROJECT_SOURCE_DIR}/src/cuda ${PROJECT_SOURCE_DIR}/src/model/impl)
      if(suffix)
        or1_emu_program(${exe})
      else() # the kernels themselves, from the backend's library
        target_link_libraries(${exe} PRIVATE or1_cuda_gpu)
      endif()
    endif()
    add_test(NAME cuda_${name}${tag} COMMAND ${exe})
    set_tests_properties(cuda_${name}${tag} PROPERTIES TIMEOUT 900 ENVIRONMENT "${env}")
  endforeach()
  # the CLI with --device cuda against the CPU path (checkpoints from tests/or1test/ref.py)
  or1_python_test(cuda_cli${tag} ${CMAKE_CURRENT_LIST_DIR}/test_cli.py ${or1} TIMEOUT 900 ENV OMP_NUM_THREADS=2 ${env})
  # or1 train with device: cuda on the trainer tests' fixture model (tests/train)
  or1_python_test(cuda_train${tag} ${CMAKE_CURRENT_LIST_DIR}/test_train.py ${or1} ${CMAKE_BINARY_DIR}/train_fixture
                  ${CMAKE_BINARY_DIR}/cuda_train${tag} TIMEOUT 900 ENV OMP_NUM_THREADS=2 ${env})
  set_tests_properties(cuda_train${tag} PROPERTIES FIXTURES_REQUIRED train_models)
  if(OR1_SANITIZE)
    set_property(TEST cuda_train${tag} APPEND PROPERTY ENVIRONMENT OR1_CUDA_TRAIN_QUICK=1)
  endif()
endforeach()

# The cost model's counting driver (bench/cuda_counts.c): one backend operation on the emulated
# GPU, its kernels' counters written where OR1_EMU_COUNTERS says; bench/cost_model.py runs it,
# and cuda_cost_model checks that the counts the model extrapolates follow its fitted form.
add_executable(cuda_counts ${PROJECT_SOURCE_DIR}/bench/cuda_counts.c)
set_target_properties(cuda_counts PROPERTIES LINKER_LANGUAGE C)
target_link_libraries(cuda_counts PRIVATE or1lib)
target_include_directories(cuda_counts PRIVATE ${PROJECT_SOURCE_DIR}/src/model/impl)
or1_emu_program(cuda_counts)
if(NOT OR1_SANITIZE) # the counts do not change under the sanitizers
  or1_python_test(cuda_cost_model ${PROJECT_SOURCE_DIR}/bench/cost_model.py --build ${CMAKE_BINARY_DIR} --check
                  TIMEOUT 900)
endif()

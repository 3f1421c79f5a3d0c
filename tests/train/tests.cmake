# The trainer end to end and its data parallelism over MPI, on tiny models
# made once per build directory by the train_fixture test (ctest fixture "train_models").
include(${CMAKE_CURRENT_LIST_DIR}/../python.cmake)
set(OR1_TRAIN_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
set(OR1_TRAIN_FIXTURE ${CMAKE_CURRENT_BINARY_DIR}/train_fixture)

or1_python_test(train_fixture ${OR1_TRAIN_TEST_DIR}/make_fixture.py $<TARGET_FILE:or1> ${CMAKE_SOURCE_DIR}
                ${OR1_TRAIN_FIXTURE} TIMEOUT 300 ENV OMP_NUM_THREADS=1)
set_tests_properties(train_fixture PROPERTIES FIXTURES_SETUP train_models)

# Registers train_<name>: tests/train/<script> OR1 FIXTURE SCRATCH (the script empties SCRATCH).
function(or1_train_test name script)
  or1_python_test(train_${name} ${OR1_TRAIN_TEST_DIR}/${script} $<TARGET_FILE:or1> ${OR1_TRAIN_FIXTURE}
                  ${CMAKE_CURRENT_BINARY_DIR}/train_${name} TIMEOUT 600 ENV OMP_NUM_THREADS=1)
  set_tests_properties(train_${name} PROPERTIES FIXTURES_REQUIRED train_models)
endfunction()

or1_train_test(run test_run.py)
or1_train_test(resume test_resume.py)
or1_train_test(integrity test_integrity.py)
# full and read-only disks on tmpfs mounts in a mount namespace (skipped, exit 77, without one)
or1_train_test(disk test_disk.py)
set_tests_properties(train_disk PROPERTIES SKIP_RETURN_CODE 77)
or1_train_test(online_filter test_online_filter.py)
or1_train_test(rejection test_rejection.py)
or1_train_test(entropy test_entropy.py)
or1_train_test(config_errors test_config_errors.py)
or1_train_test(eval test_eval.py)
or1_train_test(reward_errors test_reward_errors.py)
or1_train_test(divergence test_divergence.py)
or1_train_test(run_dir test_run_dir.py)
or1_train_test(context test_context.py)
or1_train_test(plot test_plot.py)
or1_train_test(selection test_selection.py)
or1_train_test(length test_length.py)
or1_train_test(reset test_reset.py)
# tool calls in training and evaluation (the demo tokenizer from the repository, the sandbox)
or1_python_test(train_tools ${OR1_TRAIN_TEST_DIR}/test_tools.py $<TARGET_FILE:or1> ${CMAKE_SOURCE_DIR}
                ${CMAKE_CURRENT_BINARY_DIR}/train_tools TIMEOUT 600 ENV OMP_NUM_THREADS=1)

# MPI: skipped with a message (exit 77) when mpirun is absent or or1 lacks MPI.
if(NOT MPIEXEC_EXECUTABLE)
  find_program(MPIEXEC_EXECUTABLE NAMES mpirun mpiexec)
endif()
or1_python_test(train_mpi ${OR1_TRAIN_TEST_DIR}/test_mpi.py $<TARGET_FILE:or1> ${OR1_TRAIN_FIXTURE}
                ${CMAKE_CURRENT_BINARY_DIR}/train_mpi "${MPIEXEC_EXECUTABLE}" TIMEOUT 900 ENV OMP_NUM_THREADS=1)
set_tests_properties(train_mpi PROPERTIES FIXTURES_REQUIRED train_models SKIP_RETURN_CODE 77)
# Asynchronous training over MPI: lockstep bytes, token provenance, kill and resume.
or1_python_test(train_async ${OR1_TRAIN_TEST_DIR}/test_async.py $<TARGET_FILE:or1> ${OR1_TRAIN_FIXTURE}
                ${CMAKE_CURRENT_BINARY_DIR}/train_async "${MPIEXEC_EXECUTABLE}" TIMEOUT 900 ENV OMP_NUM_THREADS=1)
set_tests_properties(train_async PROPERTIES FIXTURES_REQUIRED train_models SKIP_RETURN_CODE 77)
# ranks on two hosts made of network namespaces, MPI over TCP between them (skipped, exit 77,
# without mpirun or the right to make namespaces)
or1_python_test(train_hosts ${OR1_TRAIN_TEST_DIR}/test_hosts.py $<TARGET_FILE:or1> ${OR1_TRAIN_FIXTURE}
                ${CMAKE_CURRENT_BINARY_DIR}/train_hosts "${MPIEXEC_EXECUTABLE}" TIMEOUT 900 ENV OMP_NUM_THREADS=1)
set_tests_properties(train_hosts PROPERTIES FIXTURES_REQUIRED train_models SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)

# The entropy controller per mini-batch; its 2-rank comparison needs mpirun (else skipped inside).
or1_python_test(train_entropy_mb ${OR1_TRAIN_TEST_DIR}/test_entropy_mb.py $<TARGET_FILE:or1> ${OR1_TRAIN_FIXTURE}
                ${CMAKE_CURRENT_BINARY_DIR}/train_entropy_mb "${MPIEXEC_EXECUTABLE}" TIMEOUT 900 ENV OMP_NUM_THREADS=1)
set_tests_properties(train_entropy_mb PROPERTIES FIXTURES_REQUIRED train_models)

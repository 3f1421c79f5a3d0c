# Sourced by the benchmark scripts: gives every side of a comparison (or1, PyTorch, bench_sgemm)
# the OpenBLAS kernels or1 runs. OpenBLAS picks kernels by CPU model when it loads; on a CPU it does
# not recognise it falls back to SSE kernels, which or1 corrects for itself (`or1 --version` names
# the core) but PyTorch and the sgemm probe would not, so the core is exported for them too.
if [[ -z "${OPENBLAS_CORETYPE:-}" && -x "$root/build/or1" ]]; then
  core=$("$root/build/or1" --version | sed -n 's/^blas: OpenBLAS core //p')
  [[ -n "$core" ]] && export OPENBLAS_CORETYPE="$core"
fi

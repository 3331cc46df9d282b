# Sourced by the scripts: finds nvcc where the CUDA toolkit installs it, if it is not on PATH.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
JOBS=$(nproc 2>/dev/null || echo 2)

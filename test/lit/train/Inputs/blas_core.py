#!/usr/bin/python3
"""Prints the OpenBLAS core type (OPENBLAS_CORETYPE) for this CPU's widest
vector unit: SkylakeX with AVX-512, Haswell with AVX2, else nothing.

OpenBLAS 0.3.21 falls back to its generic Prescott kernels on CPUs it does
not know (some virtual machines), whose results happen not to depend on
where a GEMM is cut; its AVX2 and AVX-512 kernels' results do. Forcing the
fastest kernel the CPU runs makes a determinism test sensitive everywhere.
"""

flags = set()
with open("/proc/cpuinfo") as f:
    for line in f:
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
            break
print("SkylakeX" if "avx512f" in flags else "Haswell" if "avx2" in flags else "")

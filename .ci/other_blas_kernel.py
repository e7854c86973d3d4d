"""Print an OpenBLAS kernel name other than the one this machine's numpy picks by itself.

CI runs the optimiser's tests a second time under it (OPENBLAS_CORETYPE), so a test that
only passes with one kernel's float32 summation order fails here, not on a user's CPU.
"""

from threadpoolctl import threadpool_info

own = {(i.get("architecture") or "").lower() for i in threadpool_info() if i.get("internal_api") == "openblas"}
print(next(k for k in ("Haswell", "Prescott") if k.lower() not in own))

"""The compiled half of the analysis pass (src/tracesets/analysis/native): optional, so an
install without a C compiler still works, on the pure-Python pass (tracesets.analysis.compiled)."""

from setuptools import Extension, setup

NATIVE = "src/tracesets/analysis/native/"

setup(
    ext_modules=[
        Extension(
            "tracesets.analysis._native",
            sources=[NATIVE + name for name in ("module.c", "pairing.c", "records.c", "sweep.c")],
            depends=[NATIVE + name for name in ("pairing.h", "records.h", "sweep.h", "tables.h")],
            extra_compile_args=["-O2", "-std=gnu11"],
            optional=True,
        )
    ]
)

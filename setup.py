"""The per-event work of the analysis pass in C (src/tracesets/analysis/native): optional,
so an install without a C compiler still works, on the Python pass (tracesets.analysis.compiled)."""

from glob import glob

from setuptools import Extension, setup

NATIVE = "src/tracesets/analysis/native/"

setup(
    ext_modules=[
        Extension(
            "tracesets.analysis._native",
            sources=sorted(glob(NATIVE + "*.c")),
            depends=sorted(glob(NATIVE + "*.h")),
            extra_compile_args=["-O2", "-std=gnu11"],
            optional=True,
        )
    ]
)

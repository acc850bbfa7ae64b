# setup.py — builds wick._wick, the C extension: the repo's Makefile makes
# libwick.a (in this build's temporary folder, never in the repo's build/;
# WICK_LIBWICK_A names one already built instead),
# which is linked into the extension with its symbols kept private. GPU
# plugins already built in the repo's build/ (make cuda, make rocm) are
# copied beside the extension, where the library looks for them.
import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PLUGINS = ("libwick_cuda.so", "libwick_rocm.so")


class BuildWick(build_ext):
    def build_extensions(self):
        if not os.path.isfile(os.path.join(ROOT, "Makefile")) or not os.path.isfile(os.path.join(ROOT, "include", "wick.h")):
            raise RuntimeError("wick's Python package is built from the repository: run pip install ./python from its root")
        # WICK_LIBWICK_A: a libwick.a the repo's Makefile already built (CI
        # builds it once for every job); otherwise it is built here
        lib = os.environ.get("WICK_LIBWICK_A")
        if lib:
            lib = os.path.abspath(lib)
            if not os.path.isfile(lib):
                raise RuntimeError("WICK_LIBWICK_A=%s: no such file" % lib)
        else:
            libdir = os.path.abspath(os.path.join(self.build_temp, "libwick"))
            jobs = os.environ.get("WICK_MAKE_JOBS", "2")
            cmd = ["make", "-C", ROOT, "-j" + jobs, "BUILD=" + libdir, libdir + "/libwick.a"]
            if os.environ.get("CC"):
                cmd.append("CC=" + os.environ["CC"])
            subprocess.check_call(cmd)
            lib = os.path.join(libdir, "libwick.a")
        for ext in self.extensions:
            ext.extra_objects = [lib]
        super().build_extensions()
        out = os.path.dirname(self.get_ext_fullpath("wick._wick"))
        for p in PLUGINS:
            src = os.path.join(ROOT, "build", p)
            if os.path.isfile(src):
                shutil.copy2(src, os.path.join(out, p))


setup(
    ext_modules=[
        Extension(
            "wick._wick",
            sources=["src/_wick.c", "src/model.c", "src/engine.c", "src/comm.c", "src/graph.c"],
            include_dirs=[os.path.join(ROOT, "include"), os.path.join(HERE, "src")],
            depends=["src/dlpack.h", "src/_wick.h"],
            extra_compile_args=["-std=gnu11", "-Wall", "-Wno-missing-field-initializers"],
            extra_link_args=["-Wl,--exclude-libs,ALL"],
            libraries=["m", "dl", "pthread"],
        )
    ],
    cmdclass={"build_ext": BuildWick},
)

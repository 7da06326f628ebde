"""Copies libtypellm.so from the build tree into the package (typellm/_lib/)
so an installed package finds its library without LD_LIBRARY_PATH.
TYPELLM_BUILD_DIR names the build folder (default: ../build); without a
built library the package falls back to the system's (see _native.py)."""
import glob
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithLibrary(build_py):
    def run(self):
        build_dir = os.environ.get("TYPELLM_BUILD_DIR", os.path.join(HERE, "..", "build"))
        libs = sorted(glob.glob(os.path.join(build_dir, "libtypellm.so.*.*.*")))
        dest = os.path.join(HERE, "typellm", "_lib")
        if libs:
            os.makedirs(dest, exist_ok=True)
            for old in glob.glob(os.path.join(dest, "libtypellm.so*")):
                os.remove(old)
            # one real file, under the SONAME the loader asks for
            shutil.copy2(libs[-1], os.path.join(dest, "libtypellm.so.0"))
        super().run()


setup(cmdclass={"build_py": BuildWithLibrary})

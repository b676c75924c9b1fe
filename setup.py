# The cffi extension (native/ compiled through ffi/build_native.py) is declared
# here; everything else is in pyproject.toml.
from setuptools import setup

setup(cffi_modules=["ffi/build_native.py:ffibuilder"])

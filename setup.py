"""Build the optional C hot loops; without a C compiler ehtool installs and runs in pure Python."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("ehtool._speedups", ["ehtool/_speedups.c"], optional=True)])

"""The studies: each an optional part of a sweep, a folder that declares itself once.

A study (``serving``, ...) is turned on by a config table; its folder holds what it declares:
its table, its analyses, its records (the serving study's schedulers). The shipped example
configs are ``sweeps/examples``, not studies.
"""

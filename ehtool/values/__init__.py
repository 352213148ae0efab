"""How values are shown: JSON text of numbers, strings, floats, times, errno and addresses.

The bottom layer of the decoder: pure functions of Python values and bytes, no I/O.
"""

"""The decode pipeline: inputs -> samples -> filtered, rendered events -> output.

One process, or the parallel split of a file across processes.
"""

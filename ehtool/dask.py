"""``ehtool.dask.read_perfdata``: recordings as a Dask DataFrame (see
:mod:`ehtool.analysis.dask_reader`; needs ``pip install 'ehtool[analysis]'``)."""

from ehtool.analysis.dask_reader import read_perfdata

__all__ = ["read_perfdata"]

"""Analysis at scale: decoded events as Arrow record batches, Parquet files, SQL over
recordings (DuckDB) and Dask DataFrames. Needs the ``analysis`` extra
(``pip install 'ehtool[analysis]'``: pyarrow, duckdb, dask)."""

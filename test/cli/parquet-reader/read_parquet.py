"""Prints every row of the Parquet files given, as `partition offset key value` lines, read
with DuckDB (an independent Parquet reader), so the test compares them with the topic."""
import sys

import duckdb

files = sys.argv[1:]
rows = duckdb.execute(
    'select partition, "offset", key, value::varchar from read_parquet(?) order by 1, 2',
    [files],
).fetchall()
out = sys.stdout
for partition, offset, key, value in rows:
    out.write(f"{partition} {offset} {key} {value}\n")

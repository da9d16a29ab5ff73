"""Prints every row of a Hive-partitioned Parquet export (DIR/<topic>/year=/month=/day=/hour=),
read with DuckDB's hive_partitioning, as `partition offset timestamp_ms year month day hour`
lines, so the test checks the window columns DuckDB derives from the paths against each
record's own timestamp."""
import sys

import duckdb

rows = duckdb.execute(
    "select partition, \"offset\", epoch_ms(timestamp), year, month, day, hour "
    "from read_parquet(?, hive_partitioning = true) order by 1, 2",
    [sys.argv[1]],
).fetchall()
for row in rows:
    sys.stdout.write(" ".join(str(v) for v in row) + "\n")

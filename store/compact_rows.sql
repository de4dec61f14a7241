-- compact_rows: the rows `rl compact` writes into one new compacted file of a store table (store/compact.py): the
-- partitions of the runs folded in now, and the compacted files of the generations merged into the new one (minus
-- the runs re-ingested since, whose partitions are the rows read), sorted by run.
-- Template slots (filled by Python): {table} = a table name of rooflake.schema.TABLES; {columns} = its declared
-- columns, each cast to its declared type; {sources} = one or more `UNION ALL BY NAME` branches
-- (compact_from_parts.sql, compact_from_compacted.sql), so a column an older file lacks reads as NULL; {where} = the
-- range of runs this statement writes (`run_id > 'A' AND run_id <= 'B'`, or `true`: compaction reads in batches of
-- runs, in run order, to bound its memory).
-- Columns: those of the table (rooflake.schema.TABLES, units in the names), `run_id` first.
SELECT {columns} FROM (
    SELECT * FROM __empty_{table}
    {sources}
)
WHERE {where}
ORDER BY run_id

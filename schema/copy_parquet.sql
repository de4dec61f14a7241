-- copy_parquet: write the rows of one reader's query to one Parquet file (schema.duck.DuckTable.write_parquet).
-- Template slot (filled by Python, a query cannot be a bound parameter): {select} = a full SELECT statement whose
-- columns are exactly the table's schema (schema.duck.conform_select).
-- Every column is written OPTIONAL, as pyarrow writes the store's schemas (every field nullable): DuckDB writes a
-- column REQUIRED (not null) where its statistics show no NULL in the rows at hand, so a table's partitions would
-- differ from run to run and from pyarrow-written ones (pa.concat_tables refuses them); the CASE hides that.
-- zstd at level 1, pyarrow's default, as the store's other files are written (DuckDB's own default is 3).
-- Parameters: $path (the file written), $row_group_rows (rows per Parquet row group), $kv (Parquet key-value
-- metadata: the schema version and the Arrow schema, base64, as pyarrow writes it).
-- Columns: Count (rows written) as DuckDB's COPY reports it.
COPY (
SELECT CASE WHEN COLUMNS(*) IS NOT NULL THEN COLUMNS(*) END FROM (
{select}
)
) TO $path (FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, ROW_GROUP_SIZE $row_group_rows, KV_METADATA $kv)

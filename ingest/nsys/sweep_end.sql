-- sweep_end: drop the NVTX stack sweep's working tables once every slice is done (rooflake.ingest.nsys_sqlite purges
-- DuckDB's allocator after this file: at 700k ranges it keeps ~100 MB freed but resident).
-- Columns: none (statements only).
DROP TABLE IF EXISTS ev;
DROP TABLE IF EXISTS ev_up;
DROP TABLE open_pushes;
DROP TABLE lane_state;
DROP TABLE slices;
DROP VIEW lane_events;

"""rooflake.pipeline: ingest of files and folders into a store (worker processes, progress, results)."""

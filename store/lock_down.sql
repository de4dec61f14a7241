-- lock_down: make a store connection read its own files and nothing else (Store.connect unless unsafe=True):
-- no file outside the store read, no file written (COPY), no database attached, no extension installed or
-- loaded, no setting changed afterwards. Views created before this keep reading the store's Parquet files.
-- Parameters: $dirs (the store's root folder, with a trailing slash).
-- Columns: none (settings).
SET allowed_directories = $dirs;
SET enable_external_access = false;
SET autoinstall_known_extensions = false;
SET autoload_known_extensions = false;
SET lock_configuration = true

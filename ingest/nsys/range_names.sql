-- range_names: the grouping name of every NVTX range (rooflake.ingest.nsys_sqlite, after the stack sweep; then
-- nsys/walk_names.sql names the ranges on the operations' stacks, walk_ids).
-- Creates: text_names (text, name: one row per distinct range text), named_ranges (macro: the ranges of a source view
-- with their text and grouping name, the output's), ranges_named (view: those of nvtx_unswept).
-- Columns: none (statements only).

-- text_names: the grouping name of every distinct NVTX text, computed once per text (a PyTorch trace repeats a few
-- thousand texts over millions of ranges: at 5.7M ranges, 0.4 CPU s instead of 1.0 for the names where used)
CREATE TEMP TABLE text_names AS
SELECT text, range_name(text, pytorch_cut(text)) AS name
FROM (
    SELECT DISTINCT coalesce(n.text_inline, s.value) AS text
    FROM nvtx_raw AS n LEFT JOIN strings AS s ON s.id = n.text_id
    WHERE nvtx_is_range(n.event_type)
)
WHERE text IS NOT NULL;

-- the ranges of src (nvtx_swept or nvtx_unswept: nsys/ranges.sql) with their text and grouping name
CREATE TEMP MACRO named_ranges(src) AS TABLE
SELECT r.*, t.name
FROM (
    SELECT r0.*, coalesce(r0.text_inline, s.value) AS text, coalesce(r0.text_inline_hex, s.value_hex) AS text_hex
    FROM nvtx_ranges(src) AS r0 LEFT JOIN strings AS s ON s.id = r0.text_id
) AS r
LEFT JOIN text_names AS t ON t.text = r.text;

-- every range with its text and name, no depth (the attribution's start/end ranges)
CREATE TEMP VIEW ranges_named AS FROM named_ranges('nvtx_unswept');

-- macros: the rules the nsys reader's statements share (rooflake.ingest.nsys_sqlite runs this file first).
-- Columns: none (macros only).

-- NVTX event types, by name: the ids of Nsight Systems' ENUM_NSYS_EVENT_TYPE (an export may lack that table), in
-- NVTX_EVENTS.eventType. Each macro is inlined where it is used, so a filter on it is a filter on constants.
--   34 NvtxMark, 65 NvtxtMark                              marks (a point in time)
--   59 NvtxPushPopRange, 70 NvtxtPushPopRange              push/pop ranges (nested per thread and domain)
--   60 NvtxStartEndRange, 71 NvtxtStartEndRange            start/end ranges (may end on another thread)
--   75 NvtxDomainCreate                                    a domain's creation: its text is the domain's name
CREATE TEMP MACRO nvtx_is_mark(event_type) AS event_type IN (34, 65);
CREATE TEMP MACRO nvtx_is_push_pop(event_type) AS event_type IN (59, 70);
CREATE TEMP MACRO nvtx_is_start_end(event_type) AS event_type IN (60, 71);
CREATE TEMP MACRO nvtx_is_domain_create(event_type) AS event_type = 75;
CREATE TEMP MACRO nvtx_is_range(event_type) AS
    nvtx_is_mark(event_type) OR nvtx_is_push_pop(event_type) OR nvtx_is_start_end(event_type);
-- ranges.kind of an NVTX event type; NULL for an event that is no range
CREATE TEMP MACRO nvtx_range_kind(event_type) AS
CASE
    WHEN nvtx_is_push_pop(event_type) THEN 'push_pop'
    WHEN nvtx_is_start_end(event_type) THEN 'start_end'
    WHEN nvtx_is_mark(event_type) THEN 'mark'
END;

-- the process of an nsys global thread id (globalTid): its bits 24 and up (as globalPid)
CREATE TEMP MACRO process_of(global_tid) AS global_tid & ~16777215;

-- where a PyTorch op's text ends its name: the first ", <key> = " (string search, 2x faster than a regex)
CREATE TEMP MACRO pytorch_cut(t) AS
CASE WHEN contains(t, ' = ') THEN coalesce(least(nullif(strpos(t, ', seq = '), 0), nullif(strpos(t, ', op_id = '), 0),
               nullif(strpos(t, ', sizes = '), 0), nullif(strpos(t, ', input_op_ids = '), 0)), 0) ELSE 0 END;

-- the grouping name of an NVTX text t: the rules of rooflake/ingest/nvtx.py (PyTorch op suffixes, PyProf/DLProf
-- dict markers), the text itself otherwise. cut = pytorch_cut(t), passed in as a column so that it is computed once
-- (a macro argument is substituted, and evaluated, at each use)
CREATE TEMP MACRO range_name(t, cut) AS
CASE
    WHEN cut > 0 THEN t[1:cut - 1]
    WHEN starts_with(t, '{''') AND regexp_matches(t, '^\{''mod'': ''[^'']*'', ''op'': ''[^'']*''')
        THEN regexp_extract(t, '^\{''mod'': ''([^'']*)''', 1) || '.'
            || regexp_extract(t, '^\{''mod'': ''[^'']*'', ''op'': ''([^'']*)''', 1)
    WHEN starts_with(t, '{''') AND regexp_matches(t, '''funcStack'': ''[^'']*/[^''/]*''')
        THEN regexp_extract(t, '''funcStack'': ''[^'']*/([^''/]*)''', 1)
    ELSE t
END;

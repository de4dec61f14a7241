-- nsys_attribution: NVTX ranges, their nesting, and the attribution of every GPU operation (kernel, memcpy,
-- memset) to the NVTX ranges open on the CPU thread that launched it, at the launch call's time.
--
-- Inputs (tables created by rooflake.ingest.nsys_sqlite from the export, typed, possibly empty; idx = row number):
--   src_kernel(idx, start, "end", device_id, correlation_id, process, graph_node_id, ...)
--   src_memop(idx, kind, start, "end", device_id, correlation_id, process, ...)
--   src_api(start, "end", thread, correlation_id, api)          CUDA runtime + driver API calls
--   src_nvtx(src_row, start, "end", event_type, text, thread, end_thread, domain_id)   text resolved via StringIds
--   src_domain(domain_id, domain)                                NvtxDomainCreate events
-- Outputs (temporary tables read back by the reader): ranges_out (one row per range, no text: the reader joins
-- src_nvtx by range_id = src_row and names it with range_name()), domain_names, and ops_out (one row per GPU
-- operation: op_kind + idx point back at its source row; launch call, nvtx_path/stack, attribution reason).
-- Range text (the bulk of the data) is read from the source only where needed: names of the ranges some
-- operation sits in, start/end ranges that hold a launch, and the final output.
--
-- Method. Push/pop ranges nest per (thread, domain): a running sum of +1 (push) / -1 (pop) over the time-ordered
-- events gives each range's depth; its parent is the latest range one level up (ASOF join). The innermost open
-- range of a (thread, domain) is a step function of time (a push makes the pushed range innermost, a pop its
-- parent); an ASOF join finds its value at each launch call. Everything is sort + window + ASOF: linear in size
-- (no thread-equality + interval join, which goes quadratic when every range sits on one thread). Launch times
-- use the key t*4+3 so that a range pushed at exactly t contains the launch and a range popped at t does not.

-- the grouping name of an NVTX text: the rules of rooflake/ingest/nvtx.py (PyTorch op suffixes, PyProf/DLProf dict
-- markers), the text itself otherwise
CREATE TEMP MACRO range_name(t) AS
CASE
    WHEN contains(t, ' = ') AND regexp_matches(t, '^(.*?), (?:seq|op_id|sizes|input_op_ids) = ')
        THEN regexp_extract(t, '^(.*?), (?:seq|op_id|sizes|input_op_ids) = ', 1)
    WHEN starts_with(t, '{''') AND regexp_matches(t, '^\{''mod'': ''[^'']*'', ''op'': ''[^'']*''')
        THEN regexp_extract(t, '^\{''mod'': ''([^'']*)''', 1) || '.'
            || regexp_extract(t, '^\{''mod'': ''[^'']*'', ''op'': ''([^'']*)''', 1)
    WHEN starts_with(t, '{''') AND regexp_matches(t, '''funcStack'': ''[^'']*/[^''/]*''')
        THEN regexp_extract(t, '''funcStack'': ''[^'']*/([^''/]*)''', 1)
    ELSE t
END;

CREATE TEMP TABLE domain_names AS
SELECT ids.domain_id,
       coalesce(d.domain, CASE WHEN ids.domain_id = 0 THEN '<default domain>' ELSE 'domain ' || ids.domain_id::VARCHAR END)
           AS domain
FROM (SELECT DISTINCT coalesce(domain_id, 0) AS domain_id FROM src_nvtx) AS ids
LEFT JOIN src_domain AS d USING (domain_id);

-- ranges without their text (text stays in the source until the output): range_id = the event's rowid
CREATE TEMP TABLE r0 AS
SELECT
    n.src_row AS range_id,
    CASE
        WHEN n.event_type IN (59, 70) THEN 'push_pop'
        WHEN n.event_type IN (60, 71) THEN 'start_end'
        ELSE 'mark'
    END AS kind,
    coalesce(n.domain_id, 0) AS domain_id,
    n.start AS start_ns,
    CASE WHEN n.event_type IN (34, 65) THEN n.start ELSE n."end" END AS end_ns,
    n.thread,
    n.thread & ~16777215 AS process,
    n.end_thread
FROM src_nvtx AS n
WHERE n.event_type IN (34, 59, 60, 65, 70, 71);

-- push/pop events in stack order. At one instant: first the pops of ranges that began earlier, innermost (latest
-- start) first; then the pushes, outer (longer) first; then the pops of zero-length ranges, in reverse push order.
-- ord (0, 1, 2) is part of the step-function key below; sub orders events with the same t and ord.
CREATE TEMP TABLE pp_ev AS
SELECT
    *,
    row_number() OVER (PARTITION BY thread, domain_id ORDER BY t, ord, sub, tie) AS seq,
    sum(delta) OVER (PARTITION BY thread, domain_id ORDER BY t, ord, sub, tie ROWS UNBOUNDED PRECEDING) AS level
FROM (
    SELECT thread, domain_id, range_id, start_ns AS t, 1 AS ord, 1 AS delta,
           -(coalesce(end_ns, 9223372036854775807) - start_ns) AS sub, range_id AS tie
    FROM r0 WHERE kind = 'push_pop'
    UNION ALL
    SELECT thread, domain_id, range_id, end_ns AS t, CASE WHEN end_ns = start_ns THEN 2 ELSE 0 END AS ord,
           -1 AS delta, -start_ns AS sub, -range_id AS tie
    FROM r0 WHERE kind = 'push_pop' AND end_ns IS NOT NULL
);

CREATE TEMP TABLE pp_push AS
SELECT thread, domain_id, range_id, seq, level - 1 AS depth FROM pp_ev WHERE delta = 1;

CREATE TEMP TABLE pp_parent AS
SELECT c.range_id, c.depth, p.range_id AS parent_id
FROM pp_push AS c
ASOF LEFT JOIN pp_push AS p
    ON p.thread = c.thread AND p.domain_id = c.domain_id AND p.depth = c.depth - 1 AND c.seq >= p.seq;

CREATE TEMP TABLE ranges_out AS
SELECT
    r0.range_id, r0.kind, r0.domain_id, r0.start_ns, r0.end_ns, r0.thread, r0.process, r0.end_thread, pp.depth,
    CASE WHEN pp.depth > 0 THEN pp.parent_id END AS parent_id
FROM r0 LEFT JOIN pp_parent AS pp USING (range_id);

DROP TABLE r0;
DROP TABLE pp_push;
DROP TABLE pp_parent;

-- innermost open push/pop range of each (thread, domain) as a step function of time
CREATE TEMP TABLE inner_step AS
SELECT thread, domain_id, key, arg_max_null(state, seq) AS innermost  -- NULL (no range) is a state too
FROM (
    SELECT e.thread, e.domain_id, e.t::HUGEINT * 4 + e.ord AS key, e.seq,
           CASE WHEN e.delta = 1 THEN e.range_id ELSE r.parent_id END AS state
    FROM pp_ev AS e JOIN ranges_out AS r USING (range_id)
)
GROUP BY thread, domain_id, key;

DROP TABLE pp_ev;

-- the launching API call of each GPU operation (first by time if the export repeats a correlation id)
CREATE TEMP TABLE api1 AS
SELECT thread & ~16777215 AS process, correlation_id, arg_min(thread, start) AS thread,
       min(start) AS start, arg_min(api, start) AS api
FROM src_api
GROUP BY ALL;

-- every GPU operation: uid, its source table and row (idx), and its launch call
CREATE TEMP TABLE ops AS
SELECT
    row_number() OVER (ORDER BY o.start, o.op_kind, o.idx) - 1 AS uid,
    o.*,
    a.thread AS launch_thread,
    a.start AS launch_start_ns,
    a.api AS launch_api,
    a.start::HUGEINT * 4 + 3 AS launch_key
FROM (
    SELECT 'kernel' AS op_kind, idx, start, "end", device_id, correlation_id, process, graph_node_id
    FROM src_kernel
    UNION ALL
    SELECT kind, idx, start, "end", device_id, correlation_id, process, NULL FROM src_memop
) AS o
LEFT JOIN api1 AS a USING (process, correlation_id);

-- innermost range per domain at launch; the operation takes the latest-pushed of them
CREATE TEMP TABLE op_inner AS
SELECT x.uid, arg_max(x.innermost, r.start_ns) AS innermost
FROM (
    SELECT o.uid, s.innermost
    FROM (SELECT o.uid, o.launch_thread, o.launch_key, d.domain_id
          FROM ops AS o, (SELECT DISTINCT domain_id FROM inner_step) AS d
          WHERE o.launch_thread IS NOT NULL) AS o
    ASOF JOIN inner_step AS s
        ON s.thread = o.launch_thread AND s.domain_id = o.domain_id AND o.launch_key >= s.key
    WHERE s.innermost IS NOT NULL
) AS x
JOIN ranges_out AS r ON r.range_id = x.innermost
GROUP BY x.uid;

DROP TABLE inner_step;

-- the stack of every range that is some operation's innermost one: walk up the parent ids, then name only the
-- ranges on those chains (a small part of all ranges)
CREATE TEMP TABLE chain AS
WITH RECURSIVE up(leaf, cur, ids) AS (
    SELECT r.range_id, r.parent_id, [r.range_id]
    FROM ranges_out AS r WHERE r.range_id IN (SELECT DISTINCT innermost FROM op_inner)
    UNION ALL
    SELECT u.leaf, p.parent_id, list_prepend(p.range_id, u.ids)
    FROM up AS u JOIN ranges_out AS p ON p.range_id = u.cur
)
SELECT leaf, ids FROM up WHERE cur IS NULL;

CREATE TEMP TABLE chain_names AS
SELECT n.src_row AS range_id, range_name(n.text) AS name
FROM src_nvtx AS n
WHERE n.src_row IN (SELECT DISTINCT unnest(ids) FROM chain);

CREATE TEMP TABLE leaf_stack AS
WITH x AS (
    SELECT leaf, unnest(ids) AS id, unnest(range(1, len(ids) + 1)) AS pos FROM chain
)
SELECT x.leaf AS range_id, list(nm.name ORDER BY x.pos) AS stack, any_value(d.domain) AS domain,
       any_value(d.domain) || ':' || array_to_string(list(nm.name ORDER BY x.pos), '/') AS nvtx_path
FROM x
JOIN chain_names AS nm ON nm.range_id = x.id
JOIN ranges_out AS r ON r.range_id = x.leaf
LEFT JOIN domain_names AS d ON d.domain_id = r.domain_id
GROUP BY x.leaf;

-- start/end ranges open anywhere in the launching process at launch time
CREATE TEMP TABLE op_se AS
SELECT o.uid, list(range_name(n.text) ORDER BY r.start_ns, r.range_id) AS names
FROM ops AS o
JOIN ranges_out AS r
    ON r.kind = 'start_end' AND r.process = o.process
    AND o.launch_start_ns >= r.start_ns AND o.launch_start_ns < coalesce(r.end_ns, 9223372036854775807)
JOIN src_nvtx AS n ON n.src_row = r.range_id
GROUP BY o.uid;

-- operations with no range on their own thread: was a push/pop range open on another thread of the process?
CREATE TEMP TABLE op_other AS
SELECT DISTINCT o.uid
FROM (SELECT * FROM ops WHERE launch_thread IS NOT NULL AND uid NOT IN (SELECT uid FROM op_inner)) AS o
JOIN ranges_out AS r
    ON r.kind = 'push_pop' AND r.process = o.process
    AND o.launch_start_ns >= r.start_ns AND o.launch_start_ns < coalesce(r.end_ns, 9223372036854775807);

CREATE TEMP TABLE ops_out AS
SELECT
    o.uid, o.op_kind, o.idx, o.launch_thread, o.launch_start_ns, o.launch_api,
    r.nvtx_path, r.stack AS nvtx_stack, r.domain AS nvtx_domain,
    se.names AS nvtx_start_end,
    CASE
        WHEN r.range_id IS NOT NULL THEN 'push_pop'
        WHEN o.launch_thread IS NULL THEN 'no_launch_row'
        WHEN se.names IS NOT NULL THEN 'start_end'
        WHEN ot.uid IS NOT NULL THEN 'other_thread'
        ELSE 'no_range_open'
    END AS attribution
FROM ops AS o
LEFT JOIN op_inner AS i USING (uid)
LEFT JOIN leaf_stack AS r ON r.range_id = i.innermost
LEFT JOIN op_se AS se USING (uid)
LEFT JOIN op_other AS ot USING (uid)
ORDER BY o.uid;

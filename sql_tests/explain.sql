-- EXPLAIN (ANALYZE) of a gpuir index scan: the scan's mode, k, searches (and
-- how many the GPU answered) and the CPU engine's work.  On PostgreSQL 18
-- (explain_1.out) as lines under the Index Scan node, and JSON properties;
-- 15 and 17 (explain.out) have no hook per node: one line per gpuir scan
-- after the plan, in the text format only.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;
CREATE TABLE ex_docs (id int, body text);
INSERT INTO ex_docs SELECT i, 'w' || (i % 7) || ' common w' || (i % 11) FROM generate_series(1, 500) i;
CREATE INDEX ex_idx ON ex_docs USING gpuir (body) WITH (text_config = 'simple');
SET gpuir.device = cpu;
SET enable_seqscan = off;
-- BMW's own loop, whose work shows the k that reached the scan (lists this
-- short are otherwise scored term at a time, every document)
SET gpuir.taat_max_postings = 0;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
SELECT id FROM ex_docs ORDER BY body <@> 'w3 w5' LIMIT 3;
-- the LIMIT reaches the scan: one search with k 15
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
SELECT id FROM ex_docs ORDER BY body <@> 'w3 w5' LIMIT 15;
-- an OFFSET: k = count + offset
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
SELECT id FROM ex_docs ORDER BY body <@> 'w3 w5' LIMIT 4 OFFSET 2;
-- a LIMIT from a parameter (a PL/pgSQL variable): the same k
CREATE FUNCTION ex_limited(n int) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) '
    'SELECT id FROM ex_docs ORDER BY body <@> ''w3 w5'' LIMIT $1 OFFSET 2' USING n;
END $$;
SELECT * FROM ex_limited(4);
DROP FUNCTION ex_limited(int);
-- a filter on the scan (not every row it returns counts): a first search with
-- k 10, then one with k 100
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
SELECT id FROM ex_docs WHERE id % 2 = 0 ORDER BY body <@> 'w3 w5' LIMIT 15;
-- a tsquery of one conjunction runs as an AND search
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
SELECT id FROM ex_docs ORDER BY body <@> to_tsquery('simple', 'w3 & w5') LIMIT 3;
-- the JSON properties, and the same work as gpuir_search's with the same k and mode
CREATE FUNCTION ex_scan(q text) RETURNS json LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q INTO j;
  RETURN j->0->'Plan'->'Plans'->0;
END $$;
CREATE TEMP TABLE ex_plan AS
  SELECT ex_scan($q$SELECT id FROM ex_docs ORDER BY body <@> 'w3 w5' LIMIT 3$q$) AS p;
SELECT p->>'Node Type' AS node, p->>'gpuir Mode' AS mode, p->>'gpuir k' AS k,
       p->>'gpuir Searches' AS searches, p->>'gpuir GPU Searches' AS gpu_searches
FROM ex_plan;
SELECT count(*) FROM gpuir_search('ex_idx', 'w3 w5', 3, 'bmw');
SELECT (p->>'Blocks Decoded')::bigint = s.blocks_decoded AS same_blocks,
       (p->>'Documents Scored')::bigint = s.docs_scored AS same_docs_scored,
       s.docs_scored > 0 AS scored
FROM ex_plan, gpuir_last_query_stats() s;
RESET enable_seqscan;
RESET gpuir.device;
RESET gpuir.taat_max_postings;
DROP TABLE ex_docs;
DROP FUNCTION ex_scan(text);

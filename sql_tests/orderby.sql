--
-- orderby: SELECT ... ORDER BY col <@> 'query' LIMIT k is an index scan of the
-- gpuir index, and returns the same rows in the same order as
-- gpuir_search(..., 'bmw'), also with dead tuples and with extra filters.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;

SELECT setseed(0.25);
CREATE TABLE ob_docs (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off);
INSERT INTO ob_docs
SELECT i, (SELECT string_agg(a.v[1 + floor(24 * power(random(), 1.7))::int], ' ')
           FROM generate_series(1, 2 + i % 15) g,
                (SELECT string_to_array('amber bronze cedar delta ember fjord glade '
                   'harbor iris jasper kelp lotus maple nimbus opal pine quartz '
                   'raven sage thistle umber vale willow yarrow', ' ') AS v) a
           WHERE g > i * 0)
FROM generate_series(1, 5000) i;
INSERT INTO ob_docs VALUES (5001, NULL), (5002, ''), (5003, 'the of and');
CREATE INDEX ob_idx ON ob_docs USING gpuir (body) WITH (text_config = 'english');
ANALYZE ob_docs;

EXPLAIN (COSTS OFF) SELECT id FROM ob_docs ORDER BY body <@> 'amber yarrow' LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM ob_docs WHERE id % 2 = 0 ORDER BY body <@> 'vale' LIMIT 10;

-- a table of one page: with default planner settings the index scan is still
-- chosen (a scan and sort would raise 0A000), with LIMIT and without, before
-- and after ANALYZE, and its rows are gpuir_search's
CREATE TABLE ob_tiny (id int, body text);
INSERT INTO ob_tiny VALUES (1, 'amber vale'), (2, 'vale'), (3, 'amber amber'), (4, 'cedar'),
       (5, 'vale vale amber'), (6, 'maple'), (7, 'amber');
CREATE INDEX ob_tiny_idx ON ob_tiny USING gpuir (body) WITH (text_config = 'english');
EXPLAIN (COSTS OFF) SELECT id FROM ob_tiny ORDER BY body <@> 'amber vale' LIMIT 3;
EXPLAIN (COSTS OFF) SELECT id FROM ob_tiny ORDER BY body <@> 'amber vale';
SELECT (SELECT array_agg(id) FROM (SELECT id FROM ob_tiny ORDER BY body <@> 'amber vale' LIMIT 3) x) AS top3,
       (SELECT array_agg(id) FROM (SELECT id FROM ob_tiny ORDER BY body <@> 'amber vale') x)
       = (SELECT array_agg(d.id ORDER BY s.score DESC, s.ctid)
          FROM gpuir_search('ob_tiny_idx', 'amber vale', 10, 'bmw') s JOIN ob_tiny d ON d.ctid = s.ctid)
       AS all_as_gpuir_search;
ANALYZE ob_tiny;
SELECT array_agg(id) AS top3_analyzed
FROM (SELECT id FROM ob_tiny ORDER BY body <@> 'amber vale' LIMIT 3) x;
DROP TABLE ob_tiny;

-- the five best rows for a query, shown
SELECT id FROM ob_docs ORDER BY body <@> 'yarrow willow' LIMIT 5;
SELECT d.id FROM gpuir_search('ob_idx', 'yarrow willow', 5, 'bmw') s JOIN ob_docs d ON d.ctid = s.ctid
ORDER BY s.score DESC, s.ctid;

CREATE TABLE ob_queries (q text NOT NULL);
INSERT INTO ob_queries VALUES ('amber'), ('yarrow'), ('amber yarrow'), ('willow vale umber'),
  ('cedar delta ember fjord glade harbor'), ('quartz quartz'), ('xylophone'),
  ('xylophone sage'), ('the of and'), ('lotus, Maple! PINE');

-- ob_compare(filter): for every query and k, compares
--   SELECT ctid FROM ob_docs [WHERE filter] ORDER BY body <@> q LIMIT k
-- with the rows of gpuir_search(q, 100000, 'bmw') that pass the filter (first k)
CREATE FUNCTION ob_compare(filter text DEFAULT 'true')
RETURNS TABLE (searches bigint, result_rows bigint, mismatches bigint)
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  got tid[];
  want tid[];
  n bigint := 0;
  nrows bigint := 0;
  bad bigint := 0;
BEGIN
  FOR r IN SELECT q.q, kk.k FROM ob_queries q, unnest(ARRAY[1, 5, 20, 100]) kk(k) LOOP
    EXECUTE format('SELECT array_agg(ctid) FROM (SELECT ctid FROM ob_docs WHERE %s '
                   'ORDER BY body <@> %L LIMIT %s) x', filter, r.q, r.k) INTO got;
    EXECUTE format('SELECT array_agg(ctid ORDER BY n) FROM (SELECT s.ctid, s.n '
                   'FROM gpuir_search(''ob_idx'', %L, 100000, ''bmw'') WITH ORDINALITY s(ctid, score, n) '
                   'JOIN ob_docs ON ob_docs.ctid = s.ctid WHERE %s ORDER BY s.n LIMIT %s) x',
                   r.q, filter, r.k) INTO want;
    n := n + 1;
    nrows := nrows + coalesce(cardinality(got), 0);
    IF got IS DISTINCT FROM want THEN
      bad := bad + 1;
    END IF;
  END LOOP;
  RETURN QUERY SELECT n, nrows, bad;
END $$;

-- the k first rows of the full ranking equal gpuir_search with k
SELECT bool_and(ARRAY(SELECT ctid FROM gpuir_search('ob_idx', q.q, kk, 'bmw'))
                = ARRAY(SELECT ctid FROM gpuir_search('ob_idx', q.q, 100000, 'bmw') LIMIT kk))
       AS prefix_ok
FROM ob_queries q, unnest(ARRAY[1, 5, 20, 100]) kk;

SELECT * FROM ob_compare();
-- filters on top of the index scan need more rows than LIMIT from the index;
-- with default planner settings the query must work (a plan without the
-- index scan would raise 0A000)
SELECT * FROM ob_compare('id % 2 = 0');
-- very selective filters, index scan forced
SET enable_seqscan = off;
SELECT * FROM ob_compare('id % 50 = 3');
SELECT * FROM ob_compare('id % 1000 = 999');
RESET enable_seqscan;

-- dead tuples: delete the best rows, without and with VACUUM
CREATE TABLE ob_deleted AS
  SELECT d.id FROM gpuir_search('ob_idx', 'amber yarrow', 3, 'bmw') s
  JOIN ob_docs d ON d.ctid = s.ctid;
DELETE FROM ob_docs WHERE id IN (SELECT id FROM ob_deleted);
DELETE FROM ob_docs WHERE id % 10 = 0;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE id IN (SELECT id FROM ob_deleted) OR id % 10 = 0) AS deleted_returned
FROM (SELECT id FROM ob_docs ORDER BY body <@> 'amber yarrow' LIMIT 10) x;
SELECT * FROM ob_compare();
SELECT * FROM ob_compare('id % 2 = 0');
VACUUM ob_docs;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE id IN (SELECT id FROM ob_deleted) OR id % 10 = 0) AS deleted_returned
FROM (SELECT id FROM ob_docs ORDER BY body <@> 'amber yarrow' LIMIT 10) x;
SELECT * FROM ob_compare();

-- rows in the insert buffer
INSERT INTO ob_docs VALUES (6001, 'amber yarrow amber yarrow'), (6002, 'yarrow');
SELECT id FROM ob_docs ORDER BY body <@> 'amber yarrow' LIMIT 1;
SELECT * FROM ob_compare();

-- JIT: scripts/test runs this suite with jit = off (other files' reference
-- queries pass jit_above_cost, and compiling them costs seconds); here every
-- expression is compiled (where the server was built with LLVM, as Debian's
-- PostgreSQL 15 is), and the scan and gpuir_search give the same rows and
-- scores as without
CREATE TEMP TABLE ob_nojit AS
  SELECT row_number() OVER () AS n, id, d
  FROM (SELECT id, body <@> 'amber yarrow' AS d FROM ob_docs
        ORDER BY body <@> 'amber yarrow' LIMIT 20) x;
CREATE TEMP TABLE ob_nojit_search AS
  SELECT ctid AS rid, score FROM gpuir_search('ob_idx', 'amber yarrow', 20, 'bmw');
SET jit = on;
SET jit_above_cost = 0;
SET jit_inline_above_cost = 0;
SET jit_optimize_above_cost = 0;
SELECT (SELECT array_agg(id || ':' || float8send(d)::text ORDER BY n)
        FROM (SELECT row_number() OVER () AS n, id, d
              FROM (SELECT id, body <@> 'amber yarrow' AS d FROM ob_docs
                    ORDER BY body <@> 'amber yarrow' LIMIT 20) x) y)
     = (SELECT array_agg(id || ':' || float8send(d)::text ORDER BY n) FROM ob_nojit) AS scan_same_under_jit,
       (SELECT array_agg(ctid::text || ':' || float4send(score)::text ORDER BY score DESC, ctid)
        FROM gpuir_search('ob_idx', 'amber yarrow', 20, 'bmw'))
     = (SELECT array_agg(rid::text || ':' || float4send(score)::text ORDER BY score DESC, rid)
        FROM ob_nojit_search) AS search_same_under_jit,
       (SELECT count(*) FROM ob_nojit) AS n;
RESET jit;
RESET jit_above_cost;
RESET jit_inline_above_cost;
RESET jit_optimize_above_cost;

-- the operator has no meaning outside a gpuir index scan
\set VERBOSITY sqlstate
SELECT body <@> 'amber' FROM ob_docs WHERE id = 1;
SELECT 'amber' <@> 'amber';
\set VERBOSITY default

DROP TABLE ob_docs, ob_queries, ob_deleted;
DROP FUNCTION ob_compare(text);

-- a filter that rejects more than the 100000 best rows: the scan goes on in
-- pages of 100000 (each the best rows after the last one returned), exact at
-- any depth.  Every row scores the same for 'common' (same length), so the
-- order is by ctid and the rows with id > 99998 are ranks 99999 to 100002:
-- two before the page boundary, two after, ties across it.
CREATE TABLE ob_many (id int, body text);
INSERT INTO ob_many SELECT i, 'common w' || i % 13 FROM generate_series(1, 100002) i;
CREATE INDEX ob_many_idx ON ob_many USING gpuir (body) WITH (text_config = 'english');
ANALYZE ob_many;
SET enable_seqscan = off;
SELECT id, -(body <@> 'common') = (SELECT s.score FROM gpuir_search('ob_many_idx', 'common', 1) s)
         AS same_score
FROM ob_many WHERE id > 99998 ORDER BY body <@> 'common' LIMIT 4;
-- the same rows as gpuir_search restricted to them, scores to the bit
SELECT array_agg(id ORDER BY n) = (SELECT array_agg(m.id ORDER BY s.score DESC, s.ctid)
                                   FROM gpuir_search('ob_many_idx', 'common', 10, 'or',
                                                     ARRAY(SELECT ctid FROM ob_many WHERE id > 99998)) s
                                   JOIN ob_many m ON m.ctid = s.ctid) AS same_rows
FROM (SELECT id, row_number() OVER () AS n
      FROM (SELECT id FROM ob_many WHERE id > 99998 ORDER BY body <@> 'common' LIMIT 4) x) y;
-- no row passes: every page is read, no row, no error
SELECT count(*) FROM (SELECT id FROM ob_many WHERE id < 0 ORDER BY body <@> 'common' LIMIT 1) x;
SELECT count(*) FROM (SELECT id FROM ob_many WHERE id < 0 ORDER BY body <@> 'w5' LIMIT 1) x;
-- all 100002 rows through the scan, best first, each once
SELECT count(*), count(DISTINCT id) FROM (SELECT id FROM ob_many ORDER BY body <@> 'common') x;
RESET enable_seqscan;
DROP TABLE ob_many;

-- pages with different scores: the rows with id > 99990 are the longest, so
-- they score lowest and rank past the first page; a filter that passes them
-- and a few others gets the same rows and scores (to the bit) as gpuir_search
-- restricted to the rows that pass (a ctid filter, no pages)
CREATE TABLE ob_pages (id int, body text);
INSERT INTO ob_pages SELECT i, 'common w' || i % 13 ||
       CASE WHEN i > 99990 THEN repeat(' x' || i % 3, i - 99985) ELSE repeat(' y', i % 4) END
FROM generate_series(1, 100002) i;
CREATE INDEX ob_pages_idx ON ob_pages USING gpuir (body) WITH (text_config = 'english');
ANALYZE ob_pages;
SET enable_seqscan = off;
SELECT (SELECT array_agg(id || ':' || float4send((-(body <@> 'common'))::float4)::text ORDER BY n)
        FROM (SELECT id, body, row_number() OVER () AS n
              FROM (SELECT id, body FROM ob_pages WHERE id > 99990 OR id % 25000 = 7
                    ORDER BY body <@> 'common' LIMIT 15) x) y)
     = (SELECT array_agg(m.id || ':' || float4send(s.score)::text ORDER BY s.score DESC, s.ctid)
        FROM gpuir_search('ob_pages_idx', 'common', 15, 'or',
                          ARRAY(SELECT ctid FROM ob_pages WHERE id > 99990 OR id % 25000 = 7)) s
        JOIN ob_pages m ON m.ctid = s.ctid) AS same_rows_and_scores,
       (SELECT count(*) FROM (SELECT id FROM ob_pages WHERE id > 99990 OR id % 25000 = 7
                              ORDER BY body <@> 'common' LIMIT 15) x) AS n;
-- the same pages scored term at a time (the list's 100002 postings under the
-- limit; the pages after the first filter by the last row returned): the
-- same rows and score bits as document at a time (the default limit)
CREATE TEMP TABLE ob_daat AS SELECT (SELECT array_agg(id || ':' || float4send((-(body <@> 'common'))::float4)::text ORDER BY n)
        FROM (SELECT id, body, row_number() OVER () AS n
              FROM (SELECT id, body FROM ob_pages WHERE id > 99990 OR id % 25000 = 7
                    ORDER BY body <@> 'common' LIMIT 15) x) y) AS a;
SET gpuir.taat_max_postings = 1000000;
SELECT (SELECT array_agg(id || ':' || float4send((-(body <@> 'common'))::float4)::text ORDER BY n)
        FROM (SELECT id, body, row_number() OVER () AS n
              FROM (SELECT id, body FROM ob_pages WHERE id > 99990 OR id % 25000 = 7
                    ORDER BY body <@> 'common' LIMIT 15) x) y)
       = (SELECT a FROM ob_daat) AS same_as_document_at_a_time;
RESET gpuir.taat_max_postings;
DROP TABLE ob_daat;
RESET enable_seqscan;
DROP TABLE ob_pages;

--
-- scores: the value of col <@> q in the select list is the score that the
-- gpuir index scan which returned the row computed, whatever the plan:
-- two scans of different indexes (different N, avgdl, df) in one statement
-- (UNION ALL, a join, a CTE), a cursor, a prepared statement with a generic
-- plan.  Every <@> value is compared with gpuir_search's score of the same
-- row on the same index (a wrong score is a failure).  Rows no scan of the
-- query returned raise 0A000; a NULL query gives no rows.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;

SELECT setseed(0.5);
CREATE TABLE sc_a (id int PRIMARY KEY, body text);
CREATE TABLE sc_b (id int PRIMARY KEY, body text);
-- sc_b has other documents (other N, avgdl and df) and no text in common with sc_a
INSERT INTO sc_a
SELECT i, (SELECT string_agg(a.v[1 + floor(12 * power(random(), 1.5))::int], ' ')
           FROM generate_series(1, 3 + i % 9) g,
                (SELECT string_to_array('alder birch cherry dogwood elm fir '
                   'ginkgo hazel ilex juniper kapok larch', ' ') AS v) a
           WHERE g > i * 0)
FROM generate_series(1, 2000) i;
INSERT INTO sc_b
SELECT i, (SELECT string_agg(a.v[1 + floor(12 * power(random(), 0.8))::int], ' ')
           FROM generate_series(1, 5 + i % 4) g,
                (SELECT string_to_array('alder birch cherry dogwood elm fir '
                   'ginkgo hazel ilex juniper kapok larch', ' ') AS v) a
           WHERE g > i * 0) || ' only' || i
FROM generate_series(1, 700) i;
CREATE INDEX sc_a_idx ON sc_a USING gpuir (body) WITH (text_config = 'english');
CREATE INDEX sc_b_idx ON sc_b USING gpuir (body) WITH (text_config = 'english', k1 = 0.9, b = 0.4);
ANALYZE sc_a, sc_b;

-- the reference: gpuir_search's score of each row, per index
CREATE FUNCTION sc_ref(idx regclass, tbl regclass, q text)
RETURNS TABLE (id int, score real) LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE format(
    'SELECT t.id, s.score FROM gpuir_search(%L, %L, 100000, ''or'') s JOIN %s t ON t.ctid = s.ctid',
    idx, q, tbl);
END $$;

-- one scan: <@> in the select list equals minus the reference score
SELECT count(*) AS rows, count(*) FILTER (WHERE -x.s <> r.score) AS wrong
FROM (SELECT id, body <@> 'cherry larch' AS s FROM sc_a ORDER BY body <@> 'cherry larch' LIMIT 50) x
JOIN sc_ref('sc_a_idx', 'sc_a', 'cherry larch') r USING (id);

-- two scans of different indexes in one statement, same query: UNION ALL
SELECT src, count(*) AS rows, count(*) FILTER (WHERE -u.s <> r.score) AS wrong
FROM ((SELECT 'a' AS src, id, body <@> 'cherry larch' AS s FROM sc_a ORDER BY body <@> 'cherry larch' LIMIT 40)
      UNION ALL
      (SELECT 'b', id, body <@> 'cherry larch' FROM sc_b ORDER BY body <@> 'cherry larch' LIMIT 40)) u
JOIN LATERAL (SELECT * FROM sc_ref(CASE u.src WHEN 'a' THEN 'sc_a_idx' ELSE 'sc_b_idx' END::regclass,
                                   CASE u.src WHEN 'a' THEN 'sc_a' ELSE 'sc_b' END::regclass,
                                   'cherry larch')) r ON r.id = u.id
GROUP BY src ORDER BY src;

-- a join of two ranked subqueries (rank by rank), CTEs
WITH a AS (SELECT id, body <@> 'elm' AS s, row_number() OVER () AS n
           FROM (SELECT id, body FROM sc_a ORDER BY body <@> 'elm' LIMIT 30) x),
     b AS (SELECT id, body <@> 'elm' AS s, row_number() OVER () AS n
           FROM (SELECT id, body FROM sc_b ORDER BY body <@> 'elm' LIMIT 30) y)
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE -a.s <> ra.score) AS wrong_a,
       count(*) FILTER (WHERE -b.s <> rb.score) AS wrong_b,
       count(*) FILTER (WHERE a.s = b.s) AS same_value
FROM a JOIN b USING (n)
JOIN sc_ref('sc_a_idx', 'sc_a', 'elm') ra ON ra.id = a.id
JOIN sc_ref('sc_b_idx', 'sc_b', 'elm') rb ON rb.id = b.id;

-- a nested loop: for each query of a table, the best row of sc_b and its score
CREATE TABLE sc_q (q text);
INSERT INTO sc_q VALUES ('alder'), ('fir ginkgo'), ('kapok hazel ilex');
SELECT q.q, count(*) AS rows, count(*) FILTER (WHERE -t.s <> r.score) AS wrong
FROM sc_q q
CROSS JOIN LATERAL (SELECT id, body <@> q.q AS s FROM sc_b ORDER BY body <@> q.q LIMIT 3) t
JOIN LATERAL sc_ref('sc_b_idx', 'sc_b', q.q) r ON r.id = t.id
GROUP BY q.q ORDER BY q.q;

-- a prepared statement, generic plan
SET plan_cache_mode = force_generic_plan;
PREPARE sc_p(text) AS SELECT id, body <@> $1 AS s FROM sc_a ORDER BY body <@> $1 LIMIT 20;
CREATE TEMP TABLE sc_got AS EXECUTE sc_p('dogwood juniper');
SELECT count(*) AS rows, count(*) FILTER (WHERE -g.s <> r.score) AS wrong
FROM sc_got g JOIN sc_ref('sc_a_idx', 'sc_a', 'dogwood juniper') r USING (id);
RESET plan_cache_mode;

-- a cursor, fetched in parts, while another statement scans sc_b
BEGIN;
DECLARE sc_cur CURSOR FOR SELECT id, body <@> 'birch' AS s FROM sc_a ORDER BY body <@> 'birch' LIMIT 12;
FETCH 5 FROM sc_cur;
SELECT count(*) FROM (SELECT id FROM sc_b ORDER BY body <@> 'birch' LIMIT 4) x;
FETCH 7 FROM sc_cur;
COMMIT;

-- the cursor's values above are the reference scores of sc_a
SELECT id, -score AS s FROM sc_ref('sc_a_idx', 'sc_a', 'birch') ORDER BY score DESC, id LIMIT 12;

-- the shapes that work: no LIMIT (every matching row, best first), score
-- arithmetic, DISTINCT ON over a ranked subquery; values checked
SELECT count(*) AS rows,
       count(*) = (SELECT count(*) FROM gpuir_search('sc_a_idx', 'ilex', 100000)) AS all_matches,
       count(*) FILTER (WHERE -x.s <> r.score) AS wrong,
       bool_and(x.s2 = 2 * r.score) AS doubled
FROM (SELECT id, body <@> 'ilex' AS s, -(body <@> 'ilex') * 2 AS s2 FROM sc_a ORDER BY body <@> 'ilex') x
JOIN sc_ref('sc_a_idx', 'sc_a', 'ilex') r USING (id);
SELECT count(*) AS groups, count(*) FILTER (WHERE -y.s <> r.score) AS wrong
FROM (SELECT DISTINCT ON (id % 5) id, s
      FROM (SELECT id, body <@> 'hazel' AS s FROM sc_a ORDER BY body <@> 'hazel' LIMIT 40) x
      ORDER BY id % 5, s) y
JOIN sc_ref('sc_a_idx', 'sc_a', 'hazel') r USING (id);
-- shapes PostgreSQL sorts itself (rows no scan ranked): 0A000 (a second sort
-- key depends on the plan: an Incremental Sort over the scan works)
\set VERBOSITY terse
SELECT id, -(body <@> 'fir') AS score FROM sc_b ORDER BY score DESC LIMIT 3;
\set VERBOSITY default

-- identical documents in two indexes with other statistics score differently:
-- each scan's own rows get that scan's score (the row it returned last,
-- recognised by its place on the heap page); rows taken out of the scans
-- (a materialized CTE: copies) are known by their text only, and a text
-- that two scans returned with different scores is refused (0A000)
CREATE TABLE sc_c (id int, body text);
INSERT INTO sc_c VALUES (1, 'alder birch'), (2, 'alder'), (3, 'birch cherry');
CREATE TABLE sc_d (id int, body text);
INSERT INTO sc_d SELECT i, 'cherry dogwood ' || i FROM generate_series(1, 50) i;
INSERT INTO sc_d VALUES (100, 'alder birch');
CREATE INDEX sc_c_idx ON sc_c USING gpuir (body) WITH (text_config = 'english');
CREATE INDEX sc_d_idx ON sc_d USING gpuir (body) WITH (text_config = 'english');
SET enable_seqscan = off;
(SELECT 'c' AS src, id, body <@> 'alder' = -(SELECT g.score FROM gpuir_search('sc_c_idx', 'alder', 5) g
                                              WHERE g.ctid = sc_c.ctid) AS own_score
 FROM sc_c ORDER BY body <@> 'alder' LIMIT 5)
UNION ALL
(SELECT 'd', id, body <@> 'alder' = -(SELECT g.score FROM gpuir_search('sc_d_idx', 'alder', 5) g
                                      WHERE g.ctid = sc_d.ctid)
 FROM sc_d ORDER BY body <@> 'alder' LIMIT 5);
\set VERBOSITY terse
WITH u AS MATERIALIZED (
  (SELECT 'c' AS src, id, body FROM sc_c ORDER BY body <@> 'alder' LIMIT 5)
  UNION ALL
  (SELECT 'd', id, body FROM sc_d ORDER BY body <@> 'alder' LIMIT 5))
SELECT src, id, body <@> 'alder' AS s FROM u;
\set VERBOSITY default
-- each scan alone, or another query text, is fine
SELECT id, body <@> 'alder' = -(SELECT score FROM gpuir_search('sc_d_idx', 'alder', 5)) AS same
FROM sc_d ORDER BY body <@> 'alder' LIMIT 5;
RESET enable_seqscan;
DROP TABLE sc_c, sc_d;

-- outside a gpuir scan of the query: 0A000, not a number
\set VERBOSITY terse
SELECT id, body <@> 'cherry' FROM sc_a WHERE id = 7;
SELECT id, body <@> 'cherry larch' FROM sc_a WHERE id IN (SELECT id FROM sc_a ORDER BY body <@> 'elm' LIMIT 3);
SELECT 'alder birch' <@> 'alder';
\set VERBOSITY default

-- a NULL query: no rows, as with an index scan of no lexeme
SELECT id FROM sc_a ORDER BY body <@> NULL LIMIT 5;
SELECT id FROM sc_a ORDER BY body <@> '' LIMIT 5;
-- a NULL document has no score
SELECT NULL::text <@> 'alder' IS NULL AS null_doc;

DROP FUNCTION sc_ref(regclass, regclass, text);
DROP TABLE sc_a, sc_b, sc_q;

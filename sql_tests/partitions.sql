--
-- partitions: a gpuir index on a partitioned table scores every row with the
-- statistics of all its partitions (N, avgdl, df), so ORDER BY col <@> q
-- through the parent, and gpuir_search on a partition's index, give each row
-- the score it has in one unpartitioned table with the same rows.  Checked
-- after the build, after inserts into one partition (its insert buffer) and
-- after deletes + VACUUM; multi-level partitioning; the errors.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;

SELECT setseed(0.7);
CREATE TABLE pa_docs (id int, body text) PARTITION BY RANGE (id);
CREATE TABLE pa_1 PARTITION OF pa_docs FOR VALUES FROM (0) TO (2000);
CREATE TABLE pa_2 PARTITION OF pa_docs FOR VALUES FROM (2000) TO (3000)
	PARTITION BY HASH (id);					-- two levels
CREATE TABLE pa_2a PARTITION OF pa_2 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE pa_2b PARTITION OF pa_2 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE TABLE pa_3 PARTITION OF pa_docs FOR VALUES FROM (3000) TO (9000);
-- partitions with other vocabularies and lengths, so that local statistics would differ
INSERT INTO pa_docs
SELECT i, (SELECT string_agg('w' || (1 + floor(x.v * power(random(), 2)))::int, ' ')
           FROM generate_series(1, CASE WHEN i < 2000 THEN 3 ELSE 12 END + i % 5) g,
                (SELECT CASE WHEN i < 2000 THEN 20 ELSE 60 END AS v) x
           WHERE g > i * 0)
FROM generate_series(0, 3999) i;
CREATE TABLE pa_flat AS SELECT * FROM pa_docs;
CREATE INDEX pa_idx ON pa_docs USING gpuir (body) WITH (text_config = 'english');
CREATE INDEX pa_flat_idx ON pa_flat USING gpuir (body) WITH (text_config = 'english');
ANALYZE pa_docs, pa_flat;

-- pa_check(): per query, rows through the parent whose score differs from the
-- unpartitioned table's score of the same id, and whether the top-20 scores
-- through the parent equal the unpartitioned top-20 scores
CREATE FUNCTION pa_check() RETURNS TABLE (q text, rows_checked bigint, wrong_scores bigint, same_top20 boolean)
LANGUAGE plpgsql AS $$
BEGIN
  SET LOCAL enable_seqscan = off;
  FOR q IN SELECT unnest('{w1,w2 w30,w7 w45 w59,w19 w20,w60}'::text[]) LOOP
    RETURN QUERY
    WITH par AS (SELECT id, -(body <@> q) AS score FROM pa_docs ORDER BY body <@> q LIMIT 20),
         flat AS (SELECT f.id, s.score FROM gpuir_search('pa_flat_idx', q, 100000, 'or') s
                  JOIN pa_flat f ON f.ctid = s.ctid)
    SELECT q, count(*), count(*) FILTER (WHERE flat.score IS NULL OR par.score::real <> flat.score),
           (SELECT array_agg(par.score::real ORDER BY par.score DESC) FROM par) =
           (SELECT array_agg(x.score ORDER BY x.score DESC) FROM (SELECT score FROM flat ORDER BY score DESC LIMIT 20) x)
    FROM par LEFT JOIN flat USING (id);
  END LOOP;
END $$;

SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM pa_docs ORDER BY body <@> 'w1' LIMIT 5;
RESET enable_seqscan;
SELECT * FROM pa_check();
-- a partition's index: its rows with the whole table's scores
SELECT count(*) AS wrong_scores
FROM gpuir_search('pa_3_body_idx', 'w30 w31', 1000, 'bmw') s JOIN pa_3 p ON p.ctid = s.ctid
     JOIN (SELECT f.id, g.score FROM gpuir_search('pa_flat_idx', 'w30 w31', 100000, 'or') g
           JOIN pa_flat f ON f.ctid = g.ctid) r USING (id)
WHERE r.score <> s.score;
SELECT df FROM gpuir_query_terms('pa_3_body_idx', 'w30') UNION ALL
SELECT df FROM gpuir_query_terms('pa_flat_idx', 'w30');

-- inserts into one partition (its insert buffer), then deletes and VACUUM
INSERT INTO pa_docs SELECT i, 'w1 w60 w60 w' || (i % 7) FROM generate_series(4000, 4100) i;
INSERT INTO pa_flat SELECT i, 'w1 w60 w60 w' || (i % 7) FROM generate_series(4000, 4100) i;
SELECT q, wrong_scores, same_top20 FROM pa_check() WHERE wrong_scores > 0 OR NOT same_top20;
DELETE FROM pa_docs WHERE id % 5 = 0;
DELETE FROM pa_flat WHERE id % 5 = 0;
VACUUM pa_docs;
VACUUM pa_flat;
SELECT q, wrong_scores, same_top20 FROM pa_check() WHERE wrong_scores > 0 OR NOT same_top20;

-- the partitioned index itself is not a gpuir_search argument
SELECT * FROM gpuir_search('pa_idx', 'w1', 10);
-- partitions' indexes must agree on k1, b and text_config
ALTER INDEX pa_3_body_idx SET (k1 = 2.0);
REINDEX INDEX pa_3_body_idx;
SELECT count(*) FROM gpuir_search('pa_1_body_idx', 'w1', 10);
-- and on the column weights
ALTER INDEX pa_3_body_idx RESET (k1);
ALTER INDEX pa_3_body_idx SET (weights = '2');
REINDEX INDEX pa_3_body_idx;
SELECT count(*) FROM gpuir_search('pa_1_body_idx', 'w1', 10);
DROP TABLE pa_docs, pa_flat;

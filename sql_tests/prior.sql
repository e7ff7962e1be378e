--
-- prior: static document priors (CREATE INDEX ... INCLUDE (col) WITH
-- (prior_weight = w)): score = BM25 + w * prior, prior the INCLUDE column
-- rounded to real, w * prior rounded to real.  The reference is an index
-- over the same rows without the prior (its BM25 is checked against a
-- brute-force oracle in oracle.sql): per query, its score of every row plus
-- w * prior, ranked by score and then ctid, must equal the prior index's
-- top-k exactly (rows and scores) in every mode, for k = 1, 10, 100, after
-- the build, inserts (insert buffer), updates of the prior (not HOT: the
-- column is in the index), deletes + VACUUM and a merge.  Bad priors and
-- bad INCLUDE columns raise errors.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;

SELECT setseed(0.25);
CREATE TABLE pr (id int PRIMARY KEY, body text, pagerank float8);
-- a Zipf-like vocabulary (lists of several blocks, so WAND and BMW skip);
-- priors: mostly small, a few large, some NULL (0) and some exact ties
INSERT INTO pr
SELECT i,
       (SELECT string_agg('w' || floor(power(random(), 2.5) * 300)::int, ' ')
        FROM generate_series(1, 4 + (i * 7) % 23) g WHERE g > i * 0),
       CASE WHEN i % 17 = 0 THEN NULL
            WHEN i % 13 = 0 THEN 0.5
            ELSE round((power(random(), 8) * 6)::numeric, 3)::float8 END
FROM generate_series(1, 6000) i;
CREATE INDEX pr_plain ON pr USING gpuir (body) WITH (text_config = 'simple');
CREATE INDEX pr_prior ON pr USING gpuir (body) INCLUDE (pagerank)
  WITH (text_config = 'simple', prior_weight = 0.7);
ANALYZE pr;

CREATE TABLE pr_q (qid int, qtext text);
INSERT INTO pr_q VALUES (1, 'w0'), (2, 'w1 w2'), (3, 'w3 w40 w7'), (4, 'w120 w5'),
  (5, 'w0 w1 w2 w3'), (6, 'w250 w260'), (7, 'w11 w0 w299 w4 w17'), (8, 'w9 w8');

-- pr_check(w, ks): per (mode, k), queries whose prior-index top-k differs
-- from the reference (row set, order or any score), and result rows
CREATE FUNCTION pr_check(w real, ks int[])
RETURNS TABLE (mode text, k int, queries bigint, result_rows bigint, mismatches bigint)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY
  WITH qs AS (
    SELECT q.qid, q.qtext,
           (SELECT array_agg(t.lexeme) FROM gpuir_query_terms('pr_plain', q.qtext) t) AS lx
    FROM pr_q q),
  base AS (
    -- every row holding a query lexeme: its BM25 plus w * prior, and
    -- whether it holds every lexeme
    SELECT qs.qid, b.ctid, (b.score + w * coalesce(x.pagerank, 0)::real)::real AS score,
           (SELECT count(DISTINCT l) FROM unnest(tsvector_to_array(to_tsvector('simple', x.body))) l
            WHERE l = ANY (qs.lx)) = cardinality(qs.lx) AS all_terms
    FROM qs, gpuir_search('pr_plain', qs.qtext, 100000, 'or') b
    JOIN pr x ON x.ctid = b.ctid),
  nall AS (SELECT qid, count(*) FILTER (WHERE all_terms) AS n FROM base GROUP BY qid),
  runs AS (
    SELECT m.mode, kk.k, q.qid, q.qtext
    FROM unnest(ARRAY['and', 'or', 'wand', 'bmw', 'and_or']) m(mode),
         unnest(ks) kk(k), pr_q q),
  got AS (
    SELECT r.mode, r.k, r.qid,
           array_agg(s.ctid::text || '=' || s.score::text ORDER BY s.score DESC, s.ctid) AS res,
           count(*) AS n
    FROM runs r, gpuir_search('pr_prior', r.qtext, r.k, r.mode) s
    GROUP BY 1, 2, 3),
  ref AS (
    -- and: rows with every lexeme; and_or: those when at least k, else all
    SELECT e.mode, e.k, e.qid,
           array_agg(e.ctid::text || '=' || e.score::text ORDER BY e.score DESC, e.ctid) AS res
    FROM (SELECT r.mode, r.k, r.qid, b.ctid, b.score,
                 row_number() OVER (PARTITION BY r.mode, r.k, r.qid ORDER BY b.score DESC, b.ctid) AS rn
          FROM runs r JOIN base b USING (qid) JOIN nall USING (qid)
          WHERE r.mode IN ('or', 'wand', 'bmw') OR b.all_terms
             OR (r.mode = 'and_or' AND nall.n < r.k)) e
    WHERE e.rn <= e.k
    GROUP BY 1, 2, 3)
  SELECT r.mode, r.k, count(*), coalesce(sum(g.n), 0)::bigint,
         count(*) FILTER (WHERE g.res IS DISTINCT FROM f.res)
  FROM runs r
  LEFT JOIN got g USING (mode, k, qid)
  LEFT JOIN ref f USING (mode, k, qid)
  GROUP BY 1, 2 ORDER BY 1, 2;
END $$;

-- after the build
SELECT * FROM pr_check(0.7, ARRAY[1, 10, 100]);
-- the priors read from the index pages (doc_prior's stream), not the session's copy
SET gpuir.doclength_cache = 0;
SELECT * FROM pr_check(0.7, ARRAY[10]);
RESET gpuir.doclength_cache;

-- the prior changes the ranking: the top-10 of 'w0' differs from BM25's
SELECT (SELECT array_agg(ctid ORDER BY score DESC, ctid) FROM gpuir_search('pr_prior', 'w0', 10, 'or'))
    <> (SELECT array_agg(ctid ORDER BY score DESC, ctid) FROM gpuir_search('pr_plain', 'w0', 10, 'or'))
  AS reranked;

-- Block-Max WAND still skips with priors: fewer documents scored than OR
-- (the CPU engine's counters: the GPU service, when it runs, does not fill them)
SET gpuir.device = cpu;
SELECT count(*) FROM gpuir_search('pr_prior', 'w0 w1 w2 w3', 10, 'or');
SELECT docs_scored AS or_scored FROM gpuir_last_query_stats() \gset
SELECT count(*) FROM gpuir_search('pr_prior', 'w0 w1 w2 w3', 10, 'bmw');
SELECT docs_scored < :or_scored AS bmw_skips FROM gpuir_last_query_stats();
RESET gpuir.device;


-- inserts (the insert buffer), updates of the prior and of the text
INSERT INTO pr
SELECT i, (SELECT string_agg('w' || floor(power(random(), 2.5) * 300)::int, ' ')
           FROM generate_series(1, 6 + i % 9) g WHERE g > i * 0),
       CASE WHEN i % 5 = 0 THEN NULL ELSE (i % 97) / 10.0 END
FROM generate_series(6001, 6400) i;
UPDATE pr SET pagerank = 9.5 WHERE id % 250 = 1;
UPDATE pr SET body = body || ' w1', pagerank = 4 WHERE id % 333 = 2;
SELECT * FROM pr_check(0.7, ARRAY[10, 100]);

-- deletes, VACUUM, a merge of every segment and the buffer
DELETE FROM pr WHERE id % 7 = 3;
VACUUM pr;
-- gpuir.debug_rescore: each CPU search in or/wand/bmw also scores every
-- document again through the rescoring of a GPU search over pruned lists
-- (GpuirQueryScoreDocs), which must give the same top-k (else an error):
-- here with priors, VACUUM's deleted bitmaps and the rows inserted since the build
SET gpuir.debug_rescore = on;
SELECT * FROM pr_check(0.7, ARRAY[10]);
RESET gpuir.debug_rescore;
SELECT gpuir_merge('pr_prior');
SELECT gpuir_merge('pr_plain');
SELECT * FROM pr_check(0.7, ARRAY[10, 100]);
SELECT gpuir_verify('pr_prior');

-- REINDEX with another weight: scores follow it
ALTER INDEX pr_prior SET (prior_weight = 2.5);
-- until REINDEX, queries refuse to rank with a weight other than the option says
SELECT count(*) FROM gpuir_search('pr_prior', 'w1', 10);
REINDEX INDEX pr_prior;
SELECT * FROM pr_check(2.5, ARRAY[10]);

-- several segments (max_segment_docs), weight 0 (BM25 alone); a parallel
-- build (its workers send their documents' priors to the leader)
DROP INDEX pr_prior;
SET max_parallel_maintenance_workers = 2;
SET min_parallel_table_scan_size = 0;
SET maintenance_work_mem = '256MB';
CREATE INDEX pr_prior ON pr USING gpuir (body) INCLUDE (pagerank)
  WITH (text_config = 'simple', prior_weight = 0.3, max_segment_docs = 1500);
RESET max_parallel_maintenance_workers;
RESET min_parallel_table_scan_size;
RESET maintenance_work_mem;
SELECT segments FROM gpuir_index_info('pr_prior');
SELECT * FROM pr_check(0.3, ARRAY[10]) WHERE mode IN ('or', 'bmw');
ALTER INDEX pr_prior SET (prior_weight = 0);
REINDEX INDEX pr_prior;
SELECT * FROM pr_check(0, ARRAY[10]) WHERE mode IN ('or', 'bmw');
SELECT gpuir_verify('pr_prior');

-- bad priors: negative, NaN, infinite; bad INCLUDE columns; bad weights
\set VERBOSITY default
INSERT INTO pr VALUES (9001, 'w1 w2', -1);
INSERT INTO pr VALUES (9002, 'w1 w2', 'NaN');
INSERT INTO pr VALUES (9003, 'w1 w2', 'Infinity');
INSERT INTO pr VALUES (9004, 'w1 w2', 1e300);
CREATE TABLE pr_bad (id int, body text, tag text, a int, b int);
CREATE INDEX ON pr_bad USING gpuir (body) INCLUDE (tag);
CREATE INDEX ON pr_bad USING gpuir (body) INCLUDE (a, b);
CREATE INDEX ON pr_bad USING gpuir (body) INCLUDE (a) WITH (prior_weight = -1);
-- an integer prior; NULL reads as 0
INSERT INTO pr_bad VALUES (1, 'alpha beta', NULL, 3, 1), (2, 'alpha', NULL, NULL, 1),
  (3, 'beta', NULL, 0, 1);
CREATE INDEX pr_bad_int ON pr_bad USING gpuir (body) INCLUDE (a) WITH (text_config = 'simple');
SELECT b.id, s.score > 3 AS lifted
FROM gpuir_search('pr_bad_int', 'alpha', 10, 'or') s JOIN pr_bad b ON b.ctid = s.ctid ORDER BY b.id;
-- ORDER BY col <@> q LIMIT k: the prior index's rows and scores
SET enable_seqscan = off;
SELECT x.id, -x.s = r.score AS same_score
FROM (SELECT id, ctid, body <@> 'alpha beta' AS s FROM pr_bad ORDER BY body <@> 'alpha beta' LIMIT 3) x
JOIN gpuir_search('pr_bad_int', 'alpha beta', 3, 'bmw') r ON r.ctid = x.ctid ORDER BY x.s, x.id;
RESET enable_seqscan;
\set VERBOSITY terse

DROP TABLE pr, pr_q, pr_bad;
DROP FUNCTION pr_check(real, int[]);

--
-- oracle: compare gpuir_search (every mode) with a brute-force BM25 computed
-- in plain SQL from to_tsvector() output, on two corpora:
--   A. 400 rows over a 60-word vocabulary (NULL, empty, stopword-only rows,
--      identical BM25 inputs and exact duplicates for ties), k = 1, 10, 50,
--      two indexes with different k1 / b
--   B. 20000 rows with a Zipf-like vocabulary, so that posting lists span
--      many blocks and WAND / Block-Max WAND really skip; k up to 1000
-- each after the build, inserts (insert buffer), deletes + VACUUM and a merge.
--
-- Output is only counts: per (mode, k) the number of queries whose result
-- differs from the oracle (expected 0), plus the number of result rows (to
-- show the comparison is not vacuous).
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;
SELECT getdatabaseencoding();
-- the index must use its own text_config, never the session default
SET default_text_search_config = 'simple';

--
-- oracle_check(doc_table, idx, query_table, k1, b, ks): per (mode, k) for k
-- in ks, the number of queries whose gpuir result differs from a brute-force
-- BM25 over the visible rows of doc_table (column body, indexed by idx with
-- text_config 'english' and the given k1 and b); query_table holds the
-- queries as (qid int, qtext text).
-- A query mismatches when:
--   * the number of rows differs from min(k, number of eligible rows)
--     (eligible: 'and' rows holding every query lexeme; 'and_or' those if
--     there are >= k of them, else all; other modes rows holding any lexeme)
--   * a returned row is not eligible, is returned twice, or its score differs
--     from the oracle by more than 1e-4 (relative)
--   * an eligible row whose oracle score is above the k-th oracle score
--     (by more than 1e-4 relative) is missing, or a returned row is below it
--   * scores are not non-increasing, or equal scores are not in ctid order
--   * of two rows with identical BM25 inputs (same tf per query lexeme, same
--     dl), the one with the higher ctid is returned and the other not
-- The oracle's side (oc_lex .. oc_exp) depends only on the visible rows
-- (ctid, body), the queries, k1, b and ks: when a call's fingerprint of
-- these equals the previous call's (the same data after a merge, or read
-- another way), it is kept and only the index's answers are fetched again.
--
CREATE FUNCTION oracle_check(doc_table regclass, idx regclass, query_table regclass,
                             k1 float8, b float8, ks int[])
RETURNS TABLE (mode text, k int, queries bigint, result_rows bigint, mismatches bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  fp text;
  prev text;
BEGIN
  PERFORM set_config('client_min_messages', 'warning', true);
  EXECUTE format($q$
    SELECT md5((SELECT string_agg(d.ctid::text || ':' || coalesce(d.body, '<null>'), ','
                                  ORDER BY d.ctid) FROM %s d)
               || '|' || (SELECT string_agg(q.qid || ':' || q.qtext, ',' ORDER BY q.qid)
                          FROM %s q))$q$, doc_table, query_table) INTO fp;
  fp := concat_ws('|', fp, doc_table, query_table, k1, b, ks);
  DROP TABLE IF EXISTS oc_res;
  IF to_regclass('pg_temp.oc_fp') IS NOT NULL THEN
    EXECUTE 'SELECT f FROM oc_fp' INTO prev;
  END IF;
  -- else the oracle's side as the previous call left it
  IF prev IS DISTINCT FROM fp THEN
    DROP TABLE IF EXISTS oc_fp, oc_lex, oc_doc, oc_q, oc_score, oc_rank, oc_grid, oc_sel,
                         oc_exp;
    CREATE TEMP TABLE oc_fp AS SELECT fp AS f;
    -- one row per (row, lexeme) with tf; dl; the distinct query lexemes
    EXECUTE format($q$
      CREATE TEMP TABLE oc_lex AS
        SELECT d.ctid AS rid, l.lexeme, array_length(l.positions, 1)::float8 AS tf
        FROM %s d, unnest(to_tsvector('english', d.body)) l$q$, doc_table);
    CREATE TEMP TABLE oc_doc AS SELECT rid, sum(tf) AS dl FROM oc_lex GROUP BY rid;
    EXECUTE format($q$
      CREATE TEMP TABLE oc_q AS
        SELECT q.qid, l.lexeme FROM %s q, unnest(to_tsvector('english', q.qtext)) l$q$,
      query_table);
    ANALYZE oc_lex, oc_doc, oc_q;
    -- BM25 of every row holding a query lexeme (summed in lexeme order, so
    -- rows with identical inputs get identical scores)
    CREATE TEMP TABLE oc_score AS
      WITH st AS (SELECT count(*)::float8 AS n, avg(dl) AS avgdl FROM oc_doc),
           df AS (SELECT lexeme, count(*)::float8 AS df FROM oc_lex
                  WHERE lexeme IN (SELECT lexeme FROM oc_q) GROUP BY lexeme),
           nq AS (SELECT qid, count(*) AS nq FROM oc_q GROUP BY qid)
      SELECT q.qid, x.rid,
             sum(ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5))
                 * x.tf * (k1 + 1) / (x.tf + k1 * (1 - b + b * d.dl / st.avgdl))
                 ORDER BY x.lexeme) AS score,
             count(*) = nq.nq AS has_all,
             string_agg(x.lexeme || ':' || x.tf, ' ' ORDER BY x.lexeme) || '|' || d.dl AS tiekey
      FROM oc_q q JOIN oc_lex x USING (lexeme) JOIN df USING (lexeme)
           JOIN oc_doc d USING (rid) JOIN nq USING (qid) CROSS JOIN st
      GROUP BY q.qid, x.rid, d.dl, nq.nq;
    -- rank among all matching rows, and among rows holding every lexeme
    CREATE TEMP TABLE oc_rank AS
      SELECT s.*,
             row_number() OVER (PARTITION BY s.qid ORDER BY s.score DESC, s.rid) AS rn_all,
             row_number() OVER (PARTITION BY s.qid
                                ORDER BY s.has_all DESC, s.score DESC, s.rid) AS rn_and
      FROM oc_score s;
    CREATE INDEX ON oc_rank (qid, rn_all);
    CREATE INDEX ON oc_rank (qid, rn_and);
    ANALYZE oc_rank;
    EXECUTE format($q$
      CREATE TEMP TABLE oc_grid AS
        SELECT m.mode, kk.k, q.qid, q.qtext
        FROM %s q,
             unnest(ARRAY['and', 'or', 'wand', 'bmw', 'and_or']) m(mode),
             unnest($1) kk(k)$q$, query_table) USING ks;
    -- per search: which ranking applies, expected row count, k-th oracle score
    CREATE TEMP TABLE oc_sel AS
      WITH n AS (SELECT s.qid, count(*) AS n_all, count(*) FILTER (WHERE s.has_all) AS n_and
                 FROM oc_score s GROUP BY s.qid),
      c AS (SELECT g.mode, g.k, g.qid,
                   coalesce(n.n_all, 0) AS n_all, coalesce(n.n_and, 0) AS n_and
            FROM oc_grid g LEFT JOIN n USING (qid)),
      u AS (SELECT c.*, c.mode = 'and' OR (c.mode = 'and_or' AND c.n_and >= c.k) AS use_and
            FROM c)
      SELECT u.mode, u.k, u.qid, u.use_and,
             least(u.k, CASE WHEN u.use_and THEN u.n_and ELSE u.n_all END) AS nexp,
             CASE WHEN u.use_and
                  THEN (SELECT r.score FROM oc_rank r
                        WHERE r.qid = u.qid AND r.rn_and = least(u.k, u.n_and))
                  ELSE (SELECT r.score FROM oc_rank r
                        WHERE r.qid = u.qid AND r.rn_all = least(u.k, u.n_all)) END AS kscore
      FROM u;
    -- the eligible rows that can matter: the k best, and any row close to the k-th
    CREATE TEMP TABLE oc_exp AS
      SELECT sl.mode, sl.k, r.qid, r.rid, r.score, r.tiekey
      FROM oc_sel sl JOIN oc_rank r USING (qid)
      WHERE (r.has_all OR NOT sl.use_and)
        AND ((CASE WHEN sl.use_and THEN r.rn_and ELSE r.rn_all END) <= sl.k
             OR r.score >= sl.kscore * (1 - 1e-3));
    CREATE INDEX ON oc_exp (mode, k, qid, rid);
    ANALYZE oc_exp;
  END IF;
  -- what the index returns
  CREATE TEMP TABLE oc_res AS
    SELECT g.mode, g.k, g.qid, r.rn, r.rid, r.score
    FROM oc_grid g,
         LATERAL gpuir_search(idx, g.qtext, g.k, g.mode) WITH ORDINALITY AS r(rid, score, rn);
  CREATE INDEX ON oc_res (mode, k, qid, rid);
  ANALYZE oc_res;
  RETURN QUERY
  WITH nr AS (SELECT r.mode, r.k, r.qid, count(*) AS n, count(DISTINCT r.rid) AS nd
              FROM oc_res r GROUP BY 1, 2, 3),
  bad AS (
    -- row count; duplicates
    SELECT sl.mode, sl.k, sl.qid FROM oc_sel sl LEFT JOIN nr USING (mode, k, qid)
    WHERE coalesce(nr.n, 0) <> sl.nexp OR nr.n <> nr.nd
    UNION
    -- not eligible, or wrong score
    SELECT r.mode, r.k, r.qid FROM oc_res r LEFT JOIN oc_exp e USING (mode, k, qid, rid)
    WHERE e.rid IS NULL OR r.score IS NULL
       OR abs(r.score - e.score) > 1e-4 * abs(e.score)
    UNION
    -- a row clearly above the k-th is missing
    SELECT e.mode, e.k, e.qid FROM oc_exp e JOIN oc_sel sl USING (mode, k, qid)
    WHERE e.score > sl.kscore * (1 + 1e-4)
      AND NOT EXISTS (SELECT 1 FROM oc_res r
                      WHERE (r.mode, r.k, r.qid, r.rid) = (e.mode, e.k, e.qid, e.rid))
    UNION
    -- a returned row clearly below the k-th
    SELECT r.mode, r.k, r.qid
    FROM oc_res r JOIN oc_exp e USING (mode, k, qid, rid) JOIN oc_sel sl USING (mode, k, qid)
    WHERE e.score < sl.kscore * (1 - 1e-4)
    UNION
    -- order: best first, ties by ctid
    SELECT x.mode, x.k, x.qid
    FROM (SELECT r.*, lag(r.score) OVER w AS pscore, lag(r.rid) OVER w AS prid
          FROM oc_res r WINDOW w AS (PARTITION BY r.mode, r.k, r.qid ORDER BY r.rn)) x
    WHERE x.score > x.pscore OR (x.score = x.pscore AND x.rid <= x.prid)
    UNION
    -- a returned row has a twin with identical BM25 inputs and lower ctid left out
    SELECT e.mode, e.k, e.qid
    FROM oc_res r JOIN oc_exp e USING (mode, k, qid, rid)
    WHERE EXISTS (SELECT 1 FROM oc_exp e2
                  WHERE (e2.mode, e2.k, e2.qid) = (e.mode, e.k, e.qid)
                    AND e2.tiekey = e.tiekey AND e2.rid < e.rid
                    AND NOT EXISTS (SELECT 1 FROM oc_res r2
                                    WHERE (r2.mode, r2.k, r2.qid, r2.rid)
                                        = (e2.mode, e2.k, e2.qid, e2.rid)))
  )
  SELECT g.mode, g.k, count(DISTINCT g.qid),
         (SELECT count(*) FROM oc_res r WHERE (r.mode, r.k) = (g.mode, g.k)),
         count(DISTINCT b.qid)
  FROM oc_grid g LEFT JOIN bad b USING (mode, k, qid)
  GROUP BY g.mode, g.k
  ORDER BY array_position(ARRAY['and', 'or', 'wand', 'bmw', 'and_or'], g.mode), g.k;
END $$;

-- or, wand and bmw must return identical rows and identical scores
-- (uses the results of the last oracle_check call)
CREATE FUNCTION oracle_cross()
RETURNS TABLE (modes text, mismatches bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH l AS (SELECT r.mode, r.k, r.qid,
                    array_agg(r.rid ORDER BY r.rn) AS rids,
                    array_agg(r.score ORDER BY r.rn) AS scores
             FROM oc_res r GROUP BY 1, 2, 3),
  g AS (SELECT DISTINCT k, qid FROM oc_grid)
  SELECT p.a || '=' || p.b,
         count(*) FILTER (WHERE x.rids IS DISTINCT FROM y.rids
                             OR x.scores IS DISTINCT FROM y.scores)
  FROM (VALUES ('or', 'wand'), ('or', 'bmw')) p(a, b) CROSS JOIN g
       LEFT JOIN l x ON (x.mode, x.k, x.qid) = (p.a, g.k, g.qid)
       LEFT JOIN l y ON (y.mode, y.k, y.qid) = (p.b, g.k, g.qid)
  GROUP BY 1 ORDER BY 1;
END $$;

--
-- A. 400 rows, 60-word vocabulary
--
-- vocabulary: 60 words, 4 of them stopwords, 'running'/'runs' share a lexeme
CREATE TABLE o_vocab (wi int PRIMARY KEY, w text NOT NULL);
INSERT INTO o_vocab
SELECT ord, w FROM unnest(string_to_array(
  'river the stone light of garden winter silver and forest engine ocean '
  'castle running dragon mountain runs copper planet wizard harbor meadow '
  'lantern is falcon glacier orchard compass thunder velvet marble canyon '
  'beacon saddle tundra violin quartz ember harvest pilgrim cobalt lagoon '
  'timber nectar prism sonnet walrus banjo citadel geyser mosaic obelisk '
  'parsnip quiver rhubarb sextant tapestry umbrella vortex yodel', ' '))
  WITH ORDINALITY AS v(w, ord);
SELECT count(*) AS words FROM o_vocab;

-- deterministic pseudo-random documents, skewed word frequencies
SELECT setseed(0.31);
CREATE TEMP TABLE o_lens AS
  SELECT i AS id, (1 + floor(random() * random() * 40))::int AS len
  FROM generate_series(1, 400) i;
CREATE TEMP TABLE o_toks AS
  SELECT l.id, p, 1 + floor(60 * power(random(), 2.5))::int AS wi
  FROM o_lens l, generate_series(1, l.len) p;

CREATE TABLE o_docs (id int NOT NULL, body text) WITH (autovacuum_enabled = off);
INSERT INTO o_docs
SELECT t.id,
       CASE WHEN t.id IN (50, 150, 250) THEN NULL
            WHEN t.id IN (75, 175) THEN ''
            WHEN t.id IN (100, 300) THEN 'The of and a an is'
            WHEN t.id = 350 THEN '!!! ... ???'
            ELSE string_agg(v.w, ' ' ORDER BY t.p) END
FROM o_toks t JOIN o_vocab v USING (wi)
GROUP BY t.id ORDER BY t.id;
-- rows with identical BM25 inputs (score ties)
INSERT INTO o_docs VALUES
  (401, 'zephyr quokka'), (402, 'river zephyr'), (403, 'zephyr quokka'),
  (404, 'quokka zephyr'), (405, 'zephyr'), (406, NULL), (407, 'Zephyr, QUOKKA!');
-- exact duplicate documents
INSERT INTO o_docs SELECT 1000 + id, body FROM o_docs WHERE id % 19 = 0 ORDER BY id;
INSERT INTO o_docs VALUES (2001, 'zephyr quokka'), (2002, 'zephyr');
SELECT count(*) AS rows, count(body) AS non_null,
       count(*) FILTER (WHERE to_tsvector('english', body) <> '') AS indexable
FROM o_docs;

CREATE INDEX o_idx ON o_docs USING gpuir (body) WITH (text_config = 'english');
CREATE INDEX o_idx2 ON o_docs USING gpuir (body)
  WITH (text_config = 'english', k1 = 2.0, b = 1.0);

CREATE TABLE o_queries (qid int PRIMARY KEY, qtext text NOT NULL);
INSERT INTO o_queries VALUES
  (1, 'river'), (2, 'stone'), (3, 'yodel'), (4, 'vortex umbrella'),
  (5, 'river stone light'), (6, 'dragon wizard castle mountain'),
  (7, 'zephyr'), (8, 'zephyr quokka'), (9, 'xylophone'),
  (10, 'xylophone river'), (11, 'garden garden garden'), (12, 'run'),
  (13, 'Running RUNS ran'), (14, 'the of and'), (15, ''),
  (16, 'the winter of silver'), (17, 'forest, engine! ocean?'),
  (18, 'castle dragon falcon glacier orchard compass thunder velvet'),
  (19, 'marble canyon'), (20, 'beacon saddle tundra violin quartz'),
  (21, 'ember harvest'), (22, 'pilgrim cobalt lagoon timber'),
  (23, 'nectar prism sonnet walrus banjo citadel geyser mosaic obelisk parsnip'),
  (24, 'river light garden winter'), (27, 'quiver rhubarb sextant tapestry'),
  (28, 'light light stone river river'),
  (29, 'copper planet harbor meadow lantern'), (30, 'zephyr river'),
  (31, 'mountain'), (32, 'xylophone quokkaish');
-- whole documents as queries (these documents have exact duplicates)
INSERT INTO o_queries SELECT 25, body FROM o_docs WHERE id = 19;
INSERT INTO o_queries SELECT 26, body FROM o_docs WHERE id = 57;
INSERT INTO o_queries SELECT 33, body FROM o_docs WHERE id = 133;
-- the whole vocabulary as one query: a record's lexemes skip far ahead in
-- the query's terms (the insert buffer's galloping match, A3)
INSERT INTO o_queries SELECT 34, string_agg(w, ' ' ORDER BY wi) FROM o_vocab;
SELECT count(*) AS queries FROM o_queries;

-- A1. freshly built index, default BM25 parameters
SELECT * FROM oracle_check('o_docs', 'o_idx', 'o_queries', 1.2, 0.75, '{1,10,50}');
SELECT * FROM oracle_cross();
-- A1b. or, wand and bmw by their document-at-a-time loops only (above,
-- lists this short are scored term at a time)
SET gpuir.taat_max_postings = 0;
SELECT * FROM oracle_check('o_docs', 'o_idx', 'o_queries', 1.2, 0.75, '{1,10,50}');
SELECT * FROM oracle_cross();
RESET gpuir.taat_max_postings;
-- A2. the same with k1 = 2.0, b = 1.0 given as index options
SELECT * FROM oracle_check('o_docs', 'o_idx2', 'o_queries', 2.0, 1.0, '{1,10,50}');
SELECT * FROM oracle_cross();

-- A3. rows inserted after the build (insert buffer)
SELECT setseed(0.77);
CREATE TEMP TABLE o_toks2 AS
  SELECT i AS id, p, 1 + floor(60 * power(random(), 2.0))::int AS wi
  FROM generate_series(3001, 3060) i, generate_series(1, 1 + i % 17) p;
INSERT INTO o_docs
SELECT t.id, CASE WHEN t.id % 10 = 0 THEN 'zephyr quokka'
                  WHEN t.id % 13 = 0 THEN NULL
                  ELSE string_agg(v.w, ' ' ORDER BY t.p) END
FROM o_toks2 t JOIN o_vocab v USING (wi)
GROUP BY t.id ORDER BY t.id;
INSERT INTO o_docs SELECT 4000 + id, body FROM o_docs WHERE id BETWEEN 1 AND 30;
SELECT * FROM oracle_check('o_docs', 'o_idx', 'o_queries', 1.2, 0.75, '{1,10,50}');
SELECT * FROM oracle_cross();

-- A4. deletes, then VACUUM: statistics must exclude the deleted rows
DELETE FROM o_docs WHERE id % 7 = 3 OR id IN (401, 2001);
VACUUM o_docs;
SELECT * FROM oracle_check('o_docs', 'o_idx', 'o_queries', 1.2, 0.75, '{1,10,50}');
SELECT * FROM oracle_cross();

-- A5. after gpuir_merge (buffer and segments folded into one segment)
SELECT gpuir_merge('o_idx');
SELECT * FROM oracle_check('o_docs', 'o_idx', 'o_queries', 1.2, 0.75, '{1,10,50}');
SELECT * FROM oracle_cross();
SELECT * FROM oracle_check('o_docs', 'o_idx2', 'o_queries', 2.0, 1.0, '{1,10,50}');
SELECT * FROM oracle_cross();

DROP TABLE o_docs, o_queries, o_vocab;

--
-- B. 20000 rows, Zipf-like vocabulary of 5000 words
--
SELECT setseed(0.625);
CREATE TABLE ol_docs (id int NOT NULL, body text) WITH (autovacuum_enabled = off);
INSERT INTO ol_docs
SELECT i, CASE WHEN i % 997 = 0 THEN NULL
               ELSE (SELECT string_agg(
                       CASE WHEN r < 0.02 THEN 'the'
                            ELSE 'w' || floor(exp(r * ln(5000)))::int END, ' ')
                     FROM (SELECT random() AS r FROM generate_series(1, 1 + (i * 37) % 60)) x)
          END
FROM generate_series(1, 20000) i;
-- exact duplicates far apart (ties broken by ctid)
INSERT INTO ol_docs SELECT 100000 + id, body FROM ol_docs WHERE id % 1000 = 17 ORDER BY id;
-- a few long documents with high tf
INSERT INTO ol_docs SELECT 200000 + i, repeat('w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 ', 20 * i)
FROM generate_series(1, 5) i;
CREATE INDEX ol_idx ON ol_docs USING gpuir (body) WITH (text_config = 'english');

CREATE TABLE ol_queries (qid int PRIMARY KEY, qtext text NOT NULL);
INSERT INTO ol_queries VALUES
  (1, 'w1'), (2, 'w1 w2'), (3, 'w1 w4999'), (4, 'w2 w3 w5 w7 w11 w13'),
  (5, 'w4000'), (6, 'w1000 w1001 w1002'), (7, 'w1 w2 w3 w4 w5 w6 w7 w8 w9 w10'),
  (8, 'w30 w300 w3000'), (9, 'w17 w1'), (10, 'xylophone w25'),
  (11, 'w2 w2500'), (12, 'the w9');
INSERT INTO ol_queries SELECT 13, body FROM ol_docs WHERE id = 3017;
INSERT INTO ol_queries SELECT 14, body FROM ol_docs WHERE id = 5;

-- B1. freshly built index
SELECT * FROM oracle_check('ol_docs', 'ol_idx', 'ol_queries', 1.2, 0.75, '{1,10,100,1000}');
SELECT * FROM oracle_cross();
-- the k = 1000 checks above cover term at a time's selection (TaatTopk):
-- its array of 2k candidates is cut to k once 2000 are offered, which a
-- query whose lexemes more than 2000 rows hold does ('w1 w2', qid 2)
SELECT count(*) > 2000 AS k1000_cut FROM ol_docs
WHERE to_tsvector('english', body) @@ to_tsquery('english', 'w1 | w2');
-- B1b. document at a time only
SET gpuir.taat_max_postings = 0;
SELECT * FROM oracle_check('ol_docs', 'ol_idx', 'ol_queries', 1.2, 0.75, '{1,10,100,1000}');
SELECT * FROM oracle_cross();
RESET gpuir.taat_max_postings;
-- B1c. term at a time's MaxScore split: in an index of 5 segments the
-- top-k has a threshold from the first segment on, so the others' lists of
-- smallest bound add only to documents the other lists hold.  Every row and
-- score bit must equal document at a time's, and the split must have pruned
-- (fewer documents scored than hold a query lexeme).
CREATE INDEX ol_idx5 ON ol_docs USING gpuir (body)
  WITH (text_config = 'english', max_segment_docs = 4100);
SELECT segments FROM gpuir_index_info('ol_idx5');
-- document at a time over 5 segments against the reference: WAND/BMW's
-- lazy cursors and the segments AND/WAND/BMW skip by their bound
SET gpuir.taat_max_postings = 0;
SELECT count(*) AS checks, sum(result_rows) AS result_rows, sum(mismatches) AS mismatches
FROM oracle_check('ol_docs', 'ol_idx5', 'ol_queries', 1.2, 0.75, '{1,10,100,1000}');
RESET gpuir.taat_max_postings;
CREATE TEMP TABLE ms_taat AS
  SELECT g.mode, g.k, g.qid, r.rn, r.rid, r.score
  FROM oc_grid g, LATERAL gpuir_search('ol_idx5', g.qtext, g.k, g.mode) WITH ORDINALITY r(rid, score, rn);
SET gpuir.taat_max_postings = 0;
CREATE TEMP TABLE ms_daat AS
  SELECT g.mode, g.k, g.qid, r.rn, r.rid, r.score
  FROM oc_grid g, LATERAL gpuir_search('ol_idx5', g.qtext, g.k, g.mode) WITH ORDINALITY r(rid, score, rn);
RESET gpuir.taat_max_postings;
SELECT (SELECT count(*) FROM ms_taat) AS result_rows,
       (SELECT count(*) FROM (SELECT * FROM ms_taat EXCEPT ALL SELECT * FROM ms_daat) x)
     + (SELECT count(*) FROM (SELECT * FROM ms_daat EXCEPT ALL SELECT * FROM ms_taat) x) AS differing;
SELECT count(*) FROM gpuir_search('ol_idx5', 'w2 w3 w5 w7 w11 w13', 10, 'or');
SELECT s.docs_scored < (SELECT count(*) FROM ol_docs
                        WHERE to_tsvector('english', body)
                              @@ to_tsquery('english', 'w2 | w3 | w5 | w7 | w11 | w13')) AS pruned
FROM gpuir_last_query_stats() s;
DROP INDEX ol_idx5;
DROP TABLE ms_taat, ms_daat;

-- B2. after inserts (insert buffer), deletes + VACUUM and a merge
INSERT INTO ol_docs SELECT 300000 + id, body FROM ol_docs WHERE id % 50 = 1 ORDER BY id;
DELETE FROM ol_docs WHERE id % 9 = 4;
VACUUM ol_docs;
-- each segment's choice: term at a time where the query's lists there hold at
-- most 2000 postings, document at a time elsewhere
SET gpuir.taat_max_postings = 2000;
SELECT * FROM oracle_check('ol_docs', 'ol_idx', 'ol_queries', 1.2, 0.75, '{1,10,100,1000}');
SELECT * FROM oracle_cross();
RESET gpuir.taat_max_postings;
SELECT gpuir_merge('ol_idx');
SELECT * FROM oracle_check('ol_docs', 'ol_idx', 'ol_queries', 1.2, 0.75, '{1,10,100,1000}');
SELECT * FROM oracle_cross();
-- B3. document lengths read from the index pages, not the session's copy
SET gpuir.doclength_cache = 0;
SELECT * FROM oracle_check('ol_docs', 'ol_idx', 'ol_queries', 1.2, 0.75, '{1,10,100,1000}');
RESET gpuir.doclength_cache;

DROP TABLE ol_docs, ol_queries;
DROP FUNCTION oracle_check(regclass, regclass, regclass, float8, float8, int[]);
DROP FUNCTION oracle_cross();

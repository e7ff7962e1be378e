--
-- oracle_large: brute-force BM25 check (as in the oracle test) on 20000
-- documents with a Zipf-like vocabulary, so that posting lists span many
-- blocks and WAND / Block-Max WAND really skip; k up to 1000.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;

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

--
-- ol_check(idx, k1, b): per (mode, k), the number of queries whose gpuir result
-- differs from a brute-force BM25 over the visible rows of ol_docs.
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
--
CREATE FUNCTION ol_check(idx regclass, k1 float8, b float8)
RETURNS TABLE (mode text, k int, queries bigint, result_rows bigint, mismatches bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  PERFORM set_config('client_min_messages', 'warning', true);
  DROP TABLE IF EXISTS olc_lex, olc_doc, olc_q, olc_score, olc_rank, olc_grid, olc_sel,
                       olc_res, olc_exp;
  -- one row per (row, lexeme) with tf; dl; the distinct query lexemes
  CREATE TEMP TABLE olc_lex AS
    SELECT d.ctid AS rid, l.lexeme, array_length(l.positions, 1)::float8 AS tf
    FROM ol_docs d, unnest(to_tsvector('english', d.body)) l;
  CREATE TEMP TABLE olc_doc AS SELECT rid, sum(tf) AS dl FROM olc_lex GROUP BY rid;
  CREATE TEMP TABLE olc_q AS
    SELECT q.qid, l.lexeme FROM ol_queries q, unnest(to_tsvector('english', q.qtext)) l;
  -- BM25 of every row holding a query lexeme (summed in lexeme order, so
  -- rows with identical inputs get identical scores)
  CREATE TEMP TABLE olc_score AS
    WITH st AS (SELECT count(*)::float8 AS n, avg(dl) AS avgdl FROM olc_doc),
         df AS (SELECT lexeme, count(*)::float8 AS df FROM olc_lex GROUP BY lexeme),
         nq AS (SELECT qid, count(*) AS nq FROM olc_q GROUP BY qid)
    SELECT q.qid, x.rid,
           sum(ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5))
               * x.tf * (k1 + 1) / (x.tf + k1 * (1 - b + b * d.dl / st.avgdl))
               ORDER BY x.lexeme) AS score,
           count(*) = nq.nq AS has_all,
           string_agg(x.lexeme || ':' || x.tf, ' ' ORDER BY x.lexeme) || '|' || d.dl AS tiekey
    FROM olc_q q JOIN olc_lex x USING (lexeme) JOIN df USING (lexeme)
         JOIN olc_doc d USING (rid) JOIN nq USING (qid) CROSS JOIN st
    GROUP BY q.qid, x.rid, d.dl, nq.nq;
  -- rank among all matching rows, and among rows holding every lexeme
  CREATE TEMP TABLE olc_rank AS
    SELECT s.*,
           row_number() OVER (PARTITION BY s.qid ORDER BY s.score DESC, s.rid) AS rn_all,
           row_number() OVER (PARTITION BY s.qid
                              ORDER BY s.has_all DESC, s.score DESC, s.rid) AS rn_and
    FROM olc_score s;
  CREATE INDEX ON olc_rank (qid, rn_all);
  CREATE INDEX ON olc_rank (qid, rn_and);
  ANALYZE olc_rank;
  CREATE TEMP TABLE olc_grid AS
    SELECT m.mode, kk.k, q.qid, q.qtext
    FROM ol_queries q,
         unnest(ARRAY['and', 'or', 'wand', 'bmw', 'and_or']) m(mode),
         unnest(ARRAY[1, 10, 100, 1000]) kk(k);
  -- per search: which ranking applies, expected row count, k-th oracle score
  CREATE TEMP TABLE olc_sel AS
    WITH n AS (SELECT s.qid, count(*) AS n_all, count(*) FILTER (WHERE s.has_all) AS n_and
               FROM olc_score s GROUP BY s.qid),
    c AS (SELECT g.mode, g.k, g.qid,
                 coalesce(n.n_all, 0) AS n_all, coalesce(n.n_and, 0) AS n_and
          FROM olc_grid g LEFT JOIN n USING (qid)),
    u AS (SELECT c.*, c.mode = 'and' OR (c.mode = 'and_or' AND c.n_and >= c.k) AS use_and
          FROM c)
    SELECT u.mode, u.k, u.qid, u.use_and,
           least(u.k, CASE WHEN u.use_and THEN u.n_and ELSE u.n_all END) AS nexp,
           CASE WHEN u.use_and
                THEN (SELECT r.score FROM olc_rank r
                      WHERE r.qid = u.qid AND r.rn_and = least(u.k, u.n_and))
                ELSE (SELECT r.score FROM olc_rank r
                      WHERE r.qid = u.qid AND r.rn_all = least(u.k, u.n_all)) END AS kscore
    FROM u;
  -- the eligible rows that can matter: the k best, and any row close to the k-th
  CREATE TEMP TABLE olc_exp AS
    SELECT sl.mode, sl.k, r.qid, r.rid, r.score, r.tiekey
    FROM olc_sel sl JOIN olc_rank r USING (qid)
    WHERE (r.has_all OR NOT sl.use_and)
      AND ((CASE WHEN sl.use_and THEN r.rn_and ELSE r.rn_all END) <= sl.k
           OR r.score >= sl.kscore * (1 - 1e-3));
  -- what the index returns
  CREATE TEMP TABLE olc_res AS
    SELECT g.mode, g.k, g.qid, r.rn, r.rid, r.score
    FROM olc_grid g,
         LATERAL gpuir_search(idx, g.qtext, g.k, g.mode) WITH ORDINALITY AS r(rid, score, rn);
  CREATE INDEX ON olc_res (mode, k, qid, rid);
  CREATE INDEX ON olc_exp (mode, k, qid, rid);
  ANALYZE olc_res;
  ANALYZE olc_exp;
  RETURN QUERY
  WITH nr AS (SELECT r.mode, r.k, r.qid, count(*) AS n, count(DISTINCT r.rid) AS nd
              FROM olc_res r GROUP BY 1, 2, 3),
  bad AS (
    -- row count; duplicates
    SELECT sl.mode, sl.k, sl.qid FROM olc_sel sl LEFT JOIN nr USING (mode, k, qid)
    WHERE coalesce(nr.n, 0) <> sl.nexp OR nr.n <> nr.nd
    UNION
    -- not eligible, or wrong score
    SELECT r.mode, r.k, r.qid FROM olc_res r LEFT JOIN olc_exp e USING (mode, k, qid, rid)
    WHERE e.rid IS NULL OR r.score IS NULL
       OR abs(r.score - e.score) > 1e-4 * abs(e.score)
    UNION
    -- a row clearly above the k-th is missing
    SELECT e.mode, e.k, e.qid FROM olc_exp e JOIN olc_sel sl USING (mode, k, qid)
    WHERE e.score > sl.kscore * (1 + 1e-4)
      AND NOT EXISTS (SELECT 1 FROM olc_res r
                      WHERE (r.mode, r.k, r.qid, r.rid) = (e.mode, e.k, e.qid, e.rid))
    UNION
    -- a returned row clearly below the k-th
    SELECT r.mode, r.k, r.qid
    FROM olc_res r JOIN olc_exp e USING (mode, k, qid, rid) JOIN olc_sel sl USING (mode, k, qid)
    WHERE e.score < sl.kscore * (1 - 1e-4)
    UNION
    -- order: best first, ties by ctid
    SELECT x.mode, x.k, x.qid
    FROM (SELECT r.*, lag(r.score) OVER w AS pscore, lag(r.rid) OVER w AS prid
          FROM olc_res r WINDOW w AS (PARTITION BY r.mode, r.k, r.qid ORDER BY r.rn)) x
    WHERE x.score > x.pscore OR (x.score = x.pscore AND x.rid <= x.prid)
    UNION
    -- a returned row has a twin with identical BM25 inputs and lower ctid left out
    SELECT e.mode, e.k, e.qid
    FROM olc_res r JOIN olc_exp e USING (mode, k, qid, rid)
    WHERE EXISTS (SELECT 1 FROM olc_exp e2
                  WHERE (e2.mode, e2.k, e2.qid) = (e.mode, e.k, e.qid)
                    AND e2.tiekey = e.tiekey AND e2.rid < e.rid
                    AND NOT EXISTS (SELECT 1 FROM olc_res r2
                                    WHERE (r2.mode, r2.k, r2.qid, r2.rid)
                                        = (e2.mode, e2.k, e2.qid, e2.rid)))
  )
  SELECT g.mode, g.k, count(DISTINCT g.qid),
         (SELECT count(*) FROM olc_res r WHERE (r.mode, r.k) = (g.mode, g.k)),
         count(DISTINCT b.qid)
  FROM olc_grid g LEFT JOIN bad b USING (mode, k, qid)
  GROUP BY g.mode, g.k
  ORDER BY array_position(ARRAY['and', 'or', 'wand', 'bmw', 'and_or'], g.mode), g.k;
END $$;

-- or, wand and bmw must return identical rows and identical scores
-- (uses the results of the last ol_check call)
CREATE FUNCTION ol_cross()
RETURNS TABLE (modes text, mismatches bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH l AS (SELECT r.mode, r.k, r.qid,
                    array_agg(r.rid ORDER BY r.rn) AS rids,
                    array_agg(r.score ORDER BY r.rn) AS scores
             FROM olc_res r GROUP BY 1, 2, 3),
  g AS (SELECT DISTINCT k, qid FROM olc_grid)
  SELECT p.a || '=' || p.b,
         count(*) FILTER (WHERE x.rids IS DISTINCT FROM y.rids
                             OR x.scores IS DISTINCT FROM y.scores)
  FROM (VALUES ('or', 'wand'), ('or', 'bmw')) p(a, b) CROSS JOIN g
       LEFT JOIN l x ON (x.mode, x.k, x.qid) = (p.a, g.k, g.qid)
       LEFT JOIN l y ON (y.mode, y.k, y.qid) = (p.b, g.k, g.qid)
  GROUP BY 1 ORDER BY 1;
END $$;

SELECT * FROM ol_check('ol_idx', 1.2, 0.75);
SELECT * FROM ol_cross();

-- after inserts (insert buffer), deletes + VACUUM and a merge
INSERT INTO ol_docs SELECT 300000 + id, body FROM ol_docs WHERE id % 50 = 1 ORDER BY id;
DELETE FROM ol_docs WHERE id % 9 = 4;
VACUUM ol_docs;
SELECT * FROM ol_check('ol_idx', 1.2, 0.75);
SELECT * FROM ol_cross();
SELECT gpuir_merge('ol_idx');
SELECT * FROM ol_check('ol_idx', 1.2, 0.75);
SELECT * FROM ol_cross();

DROP TABLE ol_docs, ol_queries;
DROP FUNCTION ol_check(regclass, float8, float8);
DROP FUNCTION ol_cross();

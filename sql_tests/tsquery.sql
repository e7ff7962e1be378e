--
-- tsquery: gpuir_search(index, tsquery, ...), gpuir_search_batch with
-- tsquery[] and ORDER BY col <@> tsquery return exactly the rows that
-- to_tsvector('english', body) @@ q returns (what a GIN index answers), with
-- BM25 over the query's positive lexemes as the score: compared, for queries
-- covering every operator (&, |, !, <->, <N>, :*, weights, nesting,
-- stopwords, websearch syntax), with a brute-force reference in plain SQL,
-- after the build, after inserts (the insert buffer, where prefixes expand
-- too) and after deletes + VACUUM + a merge.  Then the errors.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;
SET default_text_search_config = 'simple';	-- the index's own configuration counts

SELECT setseed(0.125);
-- words w1 .. w60, Zipf-like; some stopwords (they take positions in phrases)
CREATE TABLE tq_docs (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off);
INSERT INTO tq_docs
SELECT i, (SELECT string_agg(CASE WHEN random() < 0.1 THEN 'the'
                                  ELSE 'w' || (1 + floor(60 * power(random(), 2.5)))::int END, ' ')
           FROM generate_series(1, 3 + i % 14) g WHERE g > i * 0)
FROM generate_series(1, 3000) i;
CREATE INDEX tq_idx ON tq_docs USING gpuir (body) WITH (text_config = 'english');

-- the queries and their positive lexemes (a trailing * is a prefix)
CREATE TABLE tq_queries (qid int PRIMARY KEY, q tsquery, pos text[]);
INSERT INTO tq_queries VALUES
 (1, to_tsquery('english', 'w1 & w2'), '{w1,w2}'),
 (2, to_tsquery('english', 'w1 | w5'), '{w1,w5}'),
 (3, to_tsquery('english', 'w1 & !w2'), '{w1}'),
 (4, to_tsquery('english', 'w3 <-> w4'), '{w3,w4}'),
 (5, to_tsquery('english', 'w1 <2> w2'), '{w1,w2}'),
 (6, to_tsquery('english', 'w2:*'), '{w2*}'),
 (7, to_tsquery('english', '(w1 | w7) & !(w2 <-> w3)'), '{w1,w7}'),
 (8, to_tsquery('english', 'w5 & (w6 | w40:*)'), '{w5,w6,w40*}'),
 (9, to_tsquery('english', '!w1 & w3'), '{w3}'),
 (10, to_tsquery('english', 'w1:A'), '{w1}'),
 (11, to_tsquery('english', 'w9 & w9 & w10'), '{w9,w10}'),
 (12, to_tsquery('english', 'the & w4'), '{w4}'),
 (13, websearch_to_tsquery('english', '"w1 w2" -w3 or w4'), '{w1,w2,w4}'),
 (14, to_tsquery('english', '!!w8'), '{w8}'),
 (15, to_tsquery('english', 'w11 | w12 | w13 & w14'), '{w11,w12,w13,w14}'),
 (16, to_tsquery('english', 'w1 <-> !w2'), '{w1}'),
 (17, to_tsquery('english', 'w1 <-> the <-> w2'), '{w1,w2}'),
 (18, to_tsquery('english', 'w3:* & !w3'), '{w3*}'),
 (19, to_tsquery('english', '(w2 <-> w1) | (w4 & w5 & !w6)'), '{w1,w2,w4,w5}'),
 (20, to_tsquery('english', 'w59 | nosuchword'), '{w59,nosuchword}'),
 -- w61 .. w70 come with the inserts below, into the insert buffer
 (21, to_tsquery('english', 'w6:* & !w6'), '{w6*}');

--
-- tq_check(k): per query, the rows of the reference (to_tsvector @@ q,
-- scored by BM25 over the positive lexemes they hold, in float8) and the
-- number of mismatches of gpuir_search(tq_idx, q, k, mode) for every mode:
-- rows missing or extra with respect to the reference's top k (ranks past
-- a tie at the k-th score tolerated), scores off by more than 1e-5
-- relative, or an order other than score descending, ctid ascending.
--
CREATE FUNCTION tq_check(k int)
RETURNS TABLE (qid int, ref_rows bigint, mismatches bigint) LANGUAGE sql AS $$
  WITH tv AS (SELECT d.ctid AS rid, to_tsvector('english', d.body) AS v FROM tq_docs d),
  lex AS (
    SELECT tv.rid, l.lexeme, array_length(l.positions, 1)::float8 AS tf
    FROM tv, unnest(tv.v) l),
  doc AS (SELECT rid, sum(tf) AS dl FROM lex GROUP BY rid),
  st AS (SELECT count(*)::float8 AS n, avg(dl) AS avgdl FROM doc),
  df AS (SELECT lexeme, count(*)::float8 AS df FROM lex GROUP BY lexeme),
  qlex AS (  -- the index's lexemes each query's positive lexemes stand for
    SELECT DISTINCT q.qid, df.lexeme FROM tq_queries q, unnest(q.pos) p, df
    WHERE df.lexeme = p OR (p LIKE '%*' AND df.lexeme LIKE rtrim(p, '*') || '%')),
  qscore AS (  -- BM25 of each row over the positive lexemes it holds
    SELECT ql.qid, x.rid,
           sum(ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5))
               * x.tf * 2.2 / (x.tf + 1.2 * (0.25 + 0.75 * dc.dl / st.avgdl))) AS score
    FROM qlex ql JOIN lex x USING (lexeme) JOIN df USING (lexeme)
         JOIN doc dc USING (rid) CROSS JOIN st
    GROUP BY ql.qid, x.rid),
  ref AS (  -- the rows @@ matches, with their scores
    SELECT m.qid, m.rid, coalesce(s.score, 0) AS score
    FROM (SELECT q.qid, tv.rid FROM tq_queries q JOIN tv ON tv.v @@ q.q) m
         LEFT JOIN qscore s USING (qid, rid)),
  nref AS (SELECT q.qid, count(f.rid) AS n FROM tq_queries q LEFT JOIN ref f USING (qid) GROUP BY q.qid),
  kth AS (  -- the k-th best reference score (rows scoring within 1e-4 of it may tie)
    SELECT x.qid, x.score AS kscore
    FROM (SELECT r.qid, r.score, row_number() OVER (PARTITION BY r.qid ORDER BY r.score DESC) AS rn
          FROM ref r) x WHERE x.rn = k),
  modes AS (SELECT unnest('{or,wand,bmw}'::text[]) AS mode),
  res AS (
    SELECT q.qid, m.mode, s.ctid, s.score, s.ord
    FROM tq_queries q, modes m,
         LATERAL (SELECT g.ctid, g.score, row_number() OVER () AS ord
                  FROM gpuir_search('tq_idx', q.q, k, m.mode) g) s),
  nres AS (SELECT q.qid, m.mode, count(r.ctid) AS n FROM tq_queries q CROSS JOIN modes m
           LEFT JOIN res r ON r.qid = q.qid AND r.mode = m.mode GROUP BY q.qid, m.mode),
  bad AS (
    -- a returned row that does not match, or scores differently
    SELECT r.qid FROM res r LEFT JOIN ref f ON f.qid = r.qid AND f.rid = r.ctid
    WHERE f.rid IS NULL OR abs(f.score - r.score) > 1e-5 * greatest(abs(f.score), 1)
    UNION ALL
    -- a matching row clearly above the k-th score that is missing
    SELECT f.qid FROM ref f LEFT JOIN kth USING (qid) CROSS JOIN modes m
         LEFT JOIN res r ON r.qid = f.qid AND r.mode = m.mode AND r.ctid = f.rid
    WHERE (kth.kscore IS NULL OR f.score > kth.kscore + 1e-4) AND r.ctid IS NULL
    UNION ALL
    -- too many or too few rows
    SELECT nres.qid FROM nres JOIN nref USING (qid) WHERE nres.n <> least(k, nref.n)
    UNION ALL
    -- out of order
    SELECT a.qid FROM res a JOIN res b ON a.qid = b.qid AND a.mode = b.mode AND b.ord = a.ord + 1
    WHERE a.score < b.score OR (a.score = b.score AND a.ctid > b.ctid)),
  nbad AS (SELECT bad.qid, count(*) AS n FROM bad GROUP BY bad.qid)
  SELECT q.qid, nref.n, coalesce(nbad.n, 0)
  FROM tq_queries q JOIN nref USING (qid) LEFT JOIN nbad USING (qid) ORDER BY q.qid
$$;

SELECT * FROM tq_check(10);
SELECT qid, mismatches FROM tq_check(5000) WHERE mismatches > 0;

-- the batch form gives each query's gpuir_search answer (NULL elements none)
SELECT count(*) AS differing FROM (
  (SELECT b.query_no, b.ctid, b.score
   FROM gpuir_search_batch('tq_idx', (SELECT array_agg(q ORDER BY qid) FROM tq_queries) || NULL::tsquery, 10) b
   EXCEPT
   SELECT q.qid, s.ctid, s.score FROM tq_queries q, gpuir_search('tq_idx', q.q, 10) s)
  UNION ALL
  (SELECT q.qid, s.ctid, s.score FROM tq_queries q, gpuir_search('tq_idx', q.q, 10) s
   EXCEPT
   SELECT b.query_no, b.ctid, b.score
   FROM gpuir_search_batch('tq_idx', (SELECT array_agg(q ORDER BY qid) FROM tq_queries), 10) b)) x;

-- ORDER BY col <@> tsquery: an index scan, the same rows and scores
EXPLAIN (COSTS OFF)
SELECT id FROM tq_docs ORDER BY body <@> to_tsquery('english', 'w1 & !w2') LIMIT 10;
SELECT count(*) AS differing FROM tq_queries q,
  LATERAL (SELECT array_agg(ctid ORDER BY s) AS ids, array_agg(s ORDER BY s) AS ss
           FROM (SELECT ctid, -(body <@> q.q) AS s FROM tq_docs
                 ORDER BY body <@> q.q LIMIT 10) x) o,
  LATERAL (SELECT array_agg(ctid ORDER BY score) AS ids, array_agg(score::float8 ORDER BY score) AS ss
           FROM gpuir_search('tq_idx', q.q, 10)) g
WHERE o.ids IS DISTINCT FROM g.ids OR o.ss IS DISTINCT FROM g.ss;
-- text and tsquery scans of one statement keep their own scores
SELECT count(*) FROM (SELECT body <@> 'w1' AS a FROM tq_docs ORDER BY body <@> 'w1' LIMIT 5) t,
  (SELECT body <@> to_tsquery('english', 'w1 & !w2') AS b FROM tq_docs
   ORDER BY body <@> to_tsquery('english', 'w1 & !w2') LIMIT 5) u;

-- inserts (the insert buffer: prefixes expand there too)
INSERT INTO tq_docs
SELECT i, (SELECT string_agg(CASE WHEN random() < 0.1 THEN 'the'
                                  ELSE 'w' || (1 + floor(70 * power(random(), 2)))::int END, ' ')
           FROM generate_series(1, 3 + i % 11) g WHERE g > i * 0)
FROM generate_series(3001, 3400) i;
SELECT qid, mismatches FROM tq_check(10) WHERE mismatches > 0;
SELECT qid, mismatches FROM tq_check(5000) WHERE mismatches > 0;
-- query 21 now finds rows that only the insert buffer holds
SELECT count(*) AS buffer_rows FROM gpuir_search('tq_idx', to_tsquery('english', 'w6:* & !w6'), 5000) s
  JOIN tq_docs d ON d.ctid = s.ctid WHERE d.id > 3000;

-- deletes, VACUUM and a merge
DELETE FROM tq_docs WHERE id % 7 = 0;
VACUUM tq_docs;
SELECT qid, mismatches FROM tq_check(10) WHERE mismatches > 0;
SELECT gpuir_merge('tq_idx');
SELECT qid, mismatches FROM tq_check(5000) WHERE mismatches > 0;

-- an empty query (only stopwords) matches nothing
SELECT count(*) FROM gpuir_search('tq_idx', to_tsquery('english', 'the'), 10);
-- queries true of rows that hold none of their lexemes cannot be ranked
SELECT * FROM gpuir_search('tq_idx', to_tsquery('english', '!w1'), 10);
SELECT * FROM gpuir_search('tq_idx', to_tsquery('english', '!w1 | w2'), 10);
-- the mode is the algorithm of the | parts
SELECT * FROM gpuir_search('tq_idx', to_tsquery('english', 'w1'), 10, 'and');
-- a prefix expands to at most 1024 lexemes
CREATE TABLE tq_many (body text);
INSERT INTO tq_many SELECT 'zq' || i FROM generate_series(1, 1100) i;
CREATE INDEX tq_many_idx ON tq_many USING gpuir (body) WITH (text_config = 'english');
SELECT count(*) FROM gpuir_search('tq_many_idx', to_tsquery('english', 'zq1:*'), 10);
SELECT count(*) FROM gpuir_search('tq_many_idx', to_tsquery('english', 'zq:*'), 10);
-- NULL query: no rows
SELECT count(*) FROM gpuir_search('tq_idx', NULL::tsquery, 10);
SELECT count(*) FROM (SELECT id FROM tq_docs ORDER BY body <@> NULL::tsquery LIMIT 3) x;
DROP TABLE tq_many;

-- snippets: ts_headline with the index's configuration (the session's is 'simple')
CREATE TABLE tq_hl (body text);
INSERT INTO tq_hl VALUES ('The Greek gods lived on Mount Olympus; Zeus ruled the gods.');
CREATE INDEX tq_hl_idx ON tq_hl USING gpuir (body) WITH (text_config = 'english');
SELECT gpuir_headline('tq_hl_idx', body, websearch_to_tsquery('english', 'god -mars')) FROM tq_hl;
SELECT gpuir_headline('tq_hl_idx', body, 'ruling gods', 'StartSel=[, StopSel=]') FROM tq_hl;
SELECT gpuir_headline('tq_hl_idx', body, 'the of', 'MaxWords=4, MinWords=2') FROM tq_hl;
SELECT gpuir_headline('tq_docs', 'a', 'b');
-- in the same SELECT as the ranked rows
SELECT id, gpuir_headline('tq_idx', body, q, 'StartSel=<, StopSel=>'), -(body <@> q) > 0 AS scored
FROM tq_docs, to_tsquery('english', 'w3 <-> w4') q ORDER BY body <@> q LIMIT 2;
DROP TABLE tq_hl;

--
-- multicol: an index over several text columns with weights (BM25F as
-- Robertson, Zaragoza and Taylor 2004 define it: a column of weight w
-- counts as if its text stood w times in one document).  The reference is
-- that definition itself: a one-column index over the expression that
-- repeats each column w times.  Both must give the same rows and the same
-- score bits for every mode and k, after the build (serial and parallel),
-- after inserts into the insert buffer, after updates, deletes, VACUUM and a
-- merge; ORDER BY on either column ranks by the whole row; a tsquery
-- matches what to_tsvector(cfg, title) || to_tsvector(cfg, body) @@ q
-- matches.  Then the options' errors, ALTER INDEX, and column privileges.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;

SELECT setseed(0.25);
CREATE TABLE mc_docs (id int PRIMARY KEY, title text, body text) WITH (autovacuum_enabled = off);
INSERT INTO mc_docs
SELECT i,
       CASE WHEN i % 17 = 0 THEN NULL ELSE
       (SELECT string_agg('w' || (1 + floor(40 * power(random(), 2)))::int, ' ')
        FROM generate_series(1, 1 + i % 4) g WHERE g > i * 0) END,
       CASE WHEN i % 11 = 0 THEN NULL ELSE
       (SELECT string_agg('w' || (1 + floor(60 * power(random(), 2.5)))::int, ' ')
        FROM generate_series(1, 3 + i % 23) g WHERE g > i * 0) END
FROM generate_series(1, 2000) i;
UPDATE mc_docs SET title = 'the and' WHERE id % 89 = 0;	-- a stopword-only column

CREATE INDEX mc_idx ON mc_docs USING gpuir (title, body)
  WITH (text_config = 'simple', weights = '{title:3, body:1}');
-- the reference: the title three times, then the body; NULL when both are
CREATE INDEX mc_ref ON mc_docs USING gpuir
  ((CASE WHEN title IS NULL AND body IS NULL THEN NULL
         ELSE repeat(coalesce(title, '') || ' ', 3) || coalesce(body, '') END))
  WITH (text_config = 'simple');

SELECT a.docs = r.docs AS docs, a.terms = r.terms AS terms, a.postings = r.postings AS postings,
       a.docs AS docs_indexed
FROM gpuir_index_info('mc_idx') a, gpuir_index_info('mc_ref') r;

CREATE TABLE mc_queries AS
SELECT q, 'w' || (1 + q % 40) || ' w' || (1 + q * 7 % 60) || ' w' || (1 + q * 13 % 30) AS qtext
FROM generate_series(1, 40) q;

-- mc_check(idx): per mode and k, queries whose rows or score bits differ from mc_ref's
CREATE FUNCTION mc_check(idx regclass) RETURNS TABLE (mode text, k int, mismatched bigint)
LANGUAGE sql AS $$
  SELECT m, k, count(*) FILTER (WHERE a IS DISTINCT FROM r)
  FROM unnest(ARRAY['or', 'and', 'wand', 'bmw']) m, unnest(ARRAY[10, 1000]) k, mc_queries,
       LATERAL (SELECT array_agg(s.ctid::text || '=' || float4send(s.score)::text ORDER BY s.score DESC, s.ctid) a
                FROM gpuir_search(idx, qtext, k, m) s) x,
       LATERAL (SELECT array_agg(s.ctid::text || '=' || float4send(s.score)::text ORDER BY s.score DESC, s.ctid) r
                FROM gpuir_search('mc_ref', qtext, k, m) s) y
  GROUP BY m, k ORDER BY m, k
$$;
SELECT * FROM mc_check('mc_idx');
-- queries that found rows at all (the comparison is not of empty results)
SELECT count(*) AS queries_with_rows FROM mc_queries
WHERE EXISTS (SELECT 1 FROM gpuir_search('mc_idx', qtext, 10, 'or'));
SELECT gpuir_verify('mc_idx');

-- ORDER BY either column <@> query: the rows and scores of gpuir_search;
-- a row whose ORDER BY column is NULL is ranked by its other columns, and
-- its <@> value is NULL (the operator is strict)
SET enable_seqscan = off;
SELECT count(*) FILTER (WHERE t IS DISTINCT FROM st) AS title_mismatches,
       count(*) FILTER (WHERE b IS DISTINCT FROM sb) AS body_mismatches,
       count(*) FILTER (WHERE st::text LIKE '%null%') AS with_null_title,
       count(*) FILTER (WHERE sb::text LIKE '%null%') AS with_null_body
FROM mc_queries,
     LATERAL (SELECT array_agg(id || '=' || coalesce(float4send((-(title <@> qtext))::float4)::text, 'null')) t
              FROM (SELECT id, title FROM mc_docs ORDER BY title <@> qtext LIMIT 10) o) x,
     LATERAL (SELECT array_agg(id || '=' || coalesce(float4send((-(body <@> qtext))::float4)::text, 'null')) b
              FROM (SELECT id, body FROM mc_docs ORDER BY body <@> qtext LIMIT 10) o) y,
     LATERAL (SELECT array_agg(d.id || '=' || CASE WHEN d.title IS NULL THEN 'null' ELSE float4send(s.score)::text END
                               ORDER BY s.score DESC, s.ctid) st,
                     array_agg(d.id || '=' || CASE WHEN d.body IS NULL THEN 'null' ELSE float4send(s.score)::text END
                               ORDER BY s.score DESC, s.ctid) sb
              FROM gpuir_search('mc_idx', qtext, 10, 'bmw') s JOIN mc_docs d ON d.ctid = s.ctid) z;
RESET enable_seqscan;

-- a tsquery: exactly the rows to_tsvector(title) || to_tsvector(body) @@ q
-- matches, scored by BM25F over its positive lexemes (mc_ref's or-scores)
CREATE TABLE mc_tsq (qid int, q tsquery, pos text);
INSERT INTO mc_tsq VALUES
 (1, to_tsquery('simple', 'w1 & !w2'), 'w1'),
 (2, to_tsquery('simple', 'w1 <-> w2'), 'w1 w2'),
 (3, to_tsquery('simple', 'w3 | w4 & !w5'), 'w3 w4'),
 (4, to_tsquery('simple', 'w1 & w2'), 'w1 w2'),
 (5, to_tsquery('simple', 'w2 | w7'), 'w2 w7');
SELECT qid, count(*) AS rows,
       count(*) FILTER (WHERE g.ctid IS NULL OR s.ctid IS NULL) AS row_mismatches,
       count(*) FILTER (WHERE s.score IS DISTINCT FROM r.score) AS score_mismatches
FROM mc_tsq,
     LATERAL (SELECT ctid FROM mc_docs
              WHERE (to_tsvector('simple', coalesce(title, '')) ||
                     to_tsvector('simple', coalesce(body, ''))) @@ q) g
     FULL JOIN LATERAL gpuir_search('mc_idx', q, 100000, 'bmw') s ON s.ctid = g.ctid
     LEFT JOIN LATERAL gpuir_search('mc_ref', pos, 100000, 'or') r ON r.ctid = s.ctid
GROUP BY qid ORDER BY qid;

-- inserts (the insert buffer), updates, then deletes + VACUUM + a merge
INSERT INTO mc_docs
SELECT i, CASE WHEN i % 5 = 0 THEN NULL ELSE 'w' || (i % 9 + 1) || ' w' || (i % 31 + 1) END,
       CASE WHEN i % 7 = 0 THEN NULL ELSE 'w' || (i % 13 + 1) || ' w3 w' || (i % 50 + 1) END
FROM generate_series(2001, 2300) i;
INSERT INTO mc_docs VALUES (2301, NULL, NULL);
UPDATE mc_docs SET title = title || ' w5' WHERE id % 23 = 0;
SELECT * FROM mc_check('mc_idx');
DELETE FROM mc_docs WHERE id % 6 = 0;
VACUUM mc_docs;
SELECT gpuir_merge('mc_idx'), gpuir_merge('mc_ref');
SELECT * FROM mc_check('mc_idx');
SELECT gpuir_verify('mc_idx');

-- a parallel build gives the same index
SET max_parallel_maintenance_workers = 2;
SET min_parallel_table_scan_size = 0;
CREATE INDEX mc_par ON mc_docs USING gpuir (title, body)
  WITH (text_config = 'simple', weights = '3, 1');
RESET max_parallel_maintenance_workers;
RESET min_parallel_table_scan_size;
SELECT * FROM mc_check('mc_par');
DROP INDEX mc_par;

-- weights of 1: the columns' texts as one document
CREATE INDEX mc_one ON mc_docs USING gpuir (title, body) WITH (text_config = 'simple');
CREATE INDEX mc_one_ref ON mc_docs USING gpuir
  ((CASE WHEN title IS NULL AND body IS NULL THEN NULL
         ELSE coalesce(title, '') || ' ' || coalesce(body, '') END))
  WITH (text_config = 'simple');
SELECT count(*) FILTER (WHERE a IS DISTINCT FROM r) AS mismatched
FROM mc_queries,
     LATERAL (SELECT array_agg(s.ctid::text || '=' || float4send(s.score)::text ORDER BY s.score DESC, s.ctid) a
              FROM gpuir_search('mc_one', qtext, 100, 'bmw') s) x,
     LATERAL (SELECT array_agg(s.ctid::text || '=' || float4send(s.score)::text ORDER BY s.score DESC, s.ctid) r
              FROM gpuir_search('mc_one_ref', qtext, 100, 'bmw') s) y;
DROP INDEX mc_one, mc_one_ref;

-- an expression column goes by the name PostgreSQL gives it (\d mc_expr)
CREATE INDEX mc_expr ON mc_docs USING gpuir ((lower(title)), body)
  WITH (text_config = 'simple', weights = '{lower:2}');
SELECT attname FROM pg_attribute WHERE attrelid = 'mc_expr'::regclass ORDER BY attnum;
SELECT count(*) > 0 AS found FROM gpuir_search('mc_expr', 'w1 w2', 10, 'or');
DROP INDEX mc_expr;

-- errors
\set VERBOSITY terse
CREATE INDEX mc_bad ON mc_docs USING gpuir (title, body) WITH (weights = '{nosuch:2}');
CREATE INDEX mc_bad ON mc_docs USING gpuir (title, body) WITH (weights = '2, 1, 1');
CREATE INDEX mc_bad ON mc_docs USING gpuir (title, body) WITH (weights = '2.5, 1');
CREATE INDEX mc_bad ON mc_docs USING gpuir (title, body) WITH (weights = '{title:0}');
CREATE INDEX mc_bad ON mc_docs USING gpuir (title, body) WITH (weights = '{title:101}');
CREATE INDEX mc_bad ON mc_docs USING gpuir (title, body) WITH (weights = '{title:2, 1}');
CREATE INDEX mc_bad ON mc_docs USING gpuir (title, body) WITH (weights = '{title:2, title:3}');
CREATE INDEX mc_bad ON mc_docs USING gpuir (title, body) WITH (weights = '{title:2');
-- changed options take effect at REINDEX, and say so until then
ALTER INDEX mc_idx SET (weights = '{title:2}');
SELECT count(*) FROM gpuir_search('mc_idx', 'w1', 10, 'or');
REINDEX INDEX mc_idx;
SELECT count(*) > 0 AS found FROM gpuir_search('mc_idx', 'w1', 10, 'or');
\set VERBOSITY default

-- privileges: SELECT on every indexed column, or on the table
CREATE ROLE mc_reader;
GRANT SELECT (id, title) ON mc_docs TO mc_reader;
SET ROLE mc_reader;
SELECT count(*) FROM gpuir_search('mc_idx', 'w1', 10, 'or');
RESET ROLE;
GRANT SELECT (body) ON mc_docs TO mc_reader;
SET ROLE mc_reader;
SELECT count(*) > 0 AS found FROM gpuir_search('mc_idx', 'w1', 10, 'or');
RESET ROLE;
DROP OWNED BY mc_reader;
DROP ROLE mc_reader;

DROP TABLE mc_docs, mc_queries, mc_tsq;
DROP FUNCTION mc_check(regclass);

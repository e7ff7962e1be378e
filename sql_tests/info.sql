--
-- info: gpuir_index_info agrees with the table's content after build,
-- inserts, deletes + VACUUM and merge; gpuir_last_query_stats shows that
-- 'bmw' decodes fewer blocks than the exhaustive 'or' on a 20000-row table
-- (one rare and one very common term), with identical results.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;

SELECT setseed(0.125);
CREATE TABLE in_docs (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off);
-- every row holds 'common'; 20 rows hold 'rareword'; the rest is Zipf-like
INSERT INTO in_docs
SELECT i, 'common ' ||
          (SELECT string_agg('w' || floor(exp(random() * ln(3000)))::int, ' ')
           FROM generate_series(1, 4 + i % 23)) ||
          CASE WHEN i % 1000 = 1 THEN ' rareword' ELSE '' END
FROM generate_series(1, 20000) i;
INSERT INTO in_docs VALUES (20001, NULL), (20002, ''), (20003, 'the and of');
CREATE INDEX in_idx ON in_docs USING gpuir (body) WITH (text_config = 'english');

-- in_expect(): the same figures computed from to_tsvector
CREATE FUNCTION in_expect(OUT docs bigint, OUT terms bigint, OUT postings bigint)
LANGUAGE sql AS $$
  SELECT count(DISTINCT d.id), count(DISTINCT l.lexeme), count(*)
  FROM in_docs d, unnest(to_tsvector('english', d.body)) l
$$;

-- after the build: one segment, empty buffer
SELECT i.docs = e.docs AS docs_ok, i.terms = e.terms AS terms_ok,
       i.postings = e.postings AS postings_ok, i.deleted_docs, i.segments, i.buffer_docs,
       i.pages = pg_relation_size('in_idx') / current_setting('block_size')::int AS pages_ok,
       i.bytes_per_posting > 0 AND i.bytes_per_posting < 8 AS bytes_per_posting_ok
FROM gpuir_index_info('in_idx') i, in_expect() e;
SELECT docs FROM gpuir_index_info('in_idx');

-- bmw skips blocks of the common term; or decodes them all; same results (CPU engine counters:
-- the GPU service, when it runs, does not fill them); the modes' own loops (lists this short
-- are otherwise scored term at a time)
SET gpuir.device = cpu;
SET gpuir.taat_max_postings = 0;
SELECT count(*) FROM gpuir_search('in_idx', 'rareword common', 10, 'or');
CREATE TEMP TABLE in_or AS SELECT * FROM gpuir_last_query_stats();
SELECT count(*) FROM gpuir_search('in_idx', 'rareword common', 10, 'bmw');
CREATE TEMP TABLE in_bmw AS SELECT * FROM gpuir_last_query_stats();
SELECT count(*) FROM gpuir_search('in_idx', 'rareword common', 10, 'wand');
CREATE TEMP TABLE in_wand AS SELECT * FROM gpuir_last_query_stats();
SELECT o.blocks_decoded > 0 AS or_decodes,
       o.docs_scored >= 20000 AS or_scores_all,
       b.blocks_decoded < o.blocks_decoded AS bmw_decodes_fewer,
       b.blocks_skipped > 0 AS bmw_skips,
       b.docs_scored < o.docs_scored AS bmw_scores_fewer,
       w.docs_scored < o.docs_scored AS wand_scores_fewer
FROM in_or o, in_bmw b, in_wand w;
RESET gpuir.taat_max_postings;

-- or, wand and bmw agree exactly at this scale (many blocks per list)
CREATE TABLE in_queries (q text);
INSERT INTO in_queries VALUES ('rareword common'), ('rareword'), ('common'),
  ('w1 w2'), ('w1 w2 w3 w5 w8'), ('w100 common'), ('w7 w1500 rareword'),
  ('w2999 w1'), ('w13 w17 w19 w23 w29 w31 w37 w41'), ('w300 w301 w302');
-- in_agree(): searches (every query, k = 1, 10, 100, 1000) and how many of
-- them differ (rows or scores) between or, here term at a time, and wand and
-- bmw by their own loops
CREATE FUNCTION in_agree(OUT searches bigint, OUT mismatches bigint)
LANGUAGE plpgsql AS $$
BEGIN
  CREATE TEMP TABLE in_or_taat AS
    SELECT q, k, ARRAY(SELECT row(ctid, score)::text FROM gpuir_search('in_idx', q, k, 'or')) a
    FROM in_queries, unnest(ARRAY[1, 10, 100, 1000]) k;
  PERFORM set_config('gpuir.taat_max_postings', '0', true);
  SELECT count(*),
         count(*) FILTER (WHERE a <> ARRAY(SELECT row(ctid, score)::text
                                           FROM gpuir_search('in_idx', q, k, 'wand'))
                             OR a <> ARRAY(SELECT row(ctid, score)::text
                                           FROM gpuir_search('in_idx', q, k, 'bmw')))
    INTO searches, mismatches FROM in_or_taat;
  DROP TABLE in_or_taat;
END $$;
SELECT * FROM in_agree();

-- inserts go to the buffer
INSERT INTO in_docs SELECT 30000 + i, 'common inserted w' || i FROM generate_series(1, 100) i;
INSERT INTO in_docs VALUES (30101, NULL), (30102, 'of the');
SELECT i.docs = e.docs AS docs_ok, i.buffer_docs, i.segments, i.deleted_docs
FROM gpuir_index_info('in_idx') i, in_expect() e;

-- deletes in segment and buffer: counted once VACUUM removed them; VACUUM
-- also folds the buffer into a segment, dropping its deleted rows
DELETE FROM in_docs WHERE id % 400 = 0 OR id BETWEEN 30001 AND 30010;
SELECT i.docs - e.docs AS not_yet_vacuumed FROM gpuir_index_info('in_idx') i, in_expect() e;
VACUUM in_docs;
SELECT i.docs = e.docs AS docs_ok, i.deleted_docs, i.buffer_docs
FROM gpuir_index_info('in_idx') i, in_expect() e;

-- merge: one segment again, deleted rows dropped
SELECT gpuir_merge('in_idx');
SELECT i.docs = e.docs AS docs_ok, i.terms = e.terms AS terms_ok,
       i.postings = e.postings AS postings_ok, i.deleted_docs, i.segments, i.buffer_docs,
       i.pages = pg_relation_size('in_idx') / current_setting('block_size')::int AS pages_ok
FROM gpuir_index_info('in_idx') i, in_expect() e;
SELECT * FROM in_agree();

-- an empty table
CREATE TABLE in_empty (body text);
CREATE INDEX in_empty_idx ON in_empty USING gpuir (body);
SELECT docs, deleted_docs, terms, postings, buffer_docs, bytes_per_posting
FROM gpuir_index_info('in_empty_idx');
SELECT count(*) FROM gpuir_search('in_empty_idx', 'anything');

DROP TABLE in_docs, in_queries, in_empty;
DROP FUNCTION in_expect();
DROP FUNCTION in_agree();

-- the GPU service's stage times and auto's cost model: one row per stage;
-- the model's cells (none, or CPU times where the service runs without a GPU)
SELECT stage, events >= 0 AS counted, (events = 0) = (mean_us IS NULL) AS mean_iff_events
FROM gpuir_gpu_stages();
SELECT count(*) FILTER (WHERE gpu_samples > 0 OR routed_gpu > 0) AS gpu_cells_without_gpu
FROM gpuir_route() WHERE NOT EXISTS (SELECT 1 FROM gpuir_status() WHERE memory IS NOT NULL);

-- gpuir scans count in pg_stat_user_indexes: an ORDER BY scan, gpuir_search,
-- gpuir_search_batch (one scan per query)
CREATE TABLE st_docs (id int, body text);
INSERT INTO st_docs SELECT i, 'w' || i % 7 || ' w' || i % 11 FROM generate_series(1, 300) i;
CREATE INDEX st_idx ON st_docs USING gpuir (body) WITH (text_config = 'english');
SELECT pg_stat_force_next_flush();
SELECT count(*) FROM (SELECT id FROM st_docs ORDER BY body <@> 'w1 w2' LIMIT 5) x;
SELECT count(*) FROM gpuir_search('st_idx', 'w3', 4);
SELECT count(*) FROM gpuir_search_batch('st_idx', ARRAY['w4', 'w5 w6'], 3);
SELECT pg_stat_force_next_flush();
SELECT idx_scan, idx_tup_read FROM pg_stat_user_indexes WHERE indexrelname = 'st_idx';

-- ALTER INDEX ... SET (k1 / b) takes effect only with REINDEX: queries are
-- refused until then (55000), not answered with the old constants
ALTER INDEX st_idx SET (k1 = 2.0);
\set VERBOSITY terse
SELECT count(*) FROM gpuir_search('st_idx', 'w3', 4);
SELECT id FROM st_docs ORDER BY body <@> 'w3' LIMIT 1;
\set VERBOSITY default
REINDEX INDEX st_idx;
SELECT count(*) FROM gpuir_search('st_idx', 'w3', 4);
ALTER INDEX st_idx RESET (k1);
\set VERBOSITY terse
SELECT count(*) FROM gpuir_search('st_idx', 'w3', 4);
\set VERBOSITY default
DROP TABLE st_docs;

--
-- batch: gpuir_search_batch answers every query of an array exactly like
-- gpuir_search does (on the GPU service when it runs, else on the CPU), and
-- gpuir_status() reports the service's state in every setting.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;

SELECT setseed(0.125);
CREATE TABLE ba_docs (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off);
INSERT INTO ba_docs
SELECT i, (SELECT string_agg('t' || floor(exp(random() * ln(400)))::int, ' ')
           FROM generate_series(1, 3 + (i * 13) % 40) WHERE i > 0)
FROM generate_series(1, 8000) i;
CREATE INDEX ba_idx ON ba_docs USING gpuir (body) WITH (text_config = 'simple');
-- a second segment, rows in the insert buffer and dead rows
INSERT INTO ba_docs SELECT 10000 + i, body FROM ba_docs WHERE i % 9 = 0;
SELECT gpuir_merge('ba_idx');
INSERT INTO ba_docs SELECT 20000 + i, body FROM ba_docs WHERE i % 11 = 0 AND i < 10000;
DELETE FROM ba_docs WHERE id % 17 = 0;

CREATE TABLE ba_queries (qno int, q text);
INSERT INTO ba_queries VALUES (1, 't1'), (2, 't2 t3'), (3, 't1 t50 t399'), (4, NULL),
  (5, 'nosuchword'), (6, 't7 t7 t8'), (7, ''), (8, 't300 t301 t302 t303 t304 t305'),
  (9, 't1 t2 t3 t4 t5 t6 t7 t8 t9 t10');

-- per (mode, k): queries whose batch answer differs from gpuir_search's
SELECT m.mode, kk.k,
       (SELECT count(*) FROM gpuir_search_batch('ba_idx',
                (SELECT array_agg(q ORDER BY qno) FROM ba_queries), kk.k, m.mode)) AS batch_rows,
       (SELECT count(*) FROM ba_queries bq
        WHERE (SELECT array_agg(b.ctid::text || '/' || b.score ORDER BY b.n)
               FROM gpuir_search_batch('ba_idx', (SELECT array_agg(q ORDER BY qno) FROM ba_queries),
                                       kk.k, m.mode) WITH ORDINALITY b(query_no, ctid, score, n)
               WHERE b.query_no = bq.qno)
              IS DISTINCT FROM
              (SELECT array_agg(s.ctid::text || '/' || s.score ORDER BY s.n)
               FROM gpuir_search('ba_idx', bq.q, kk.k, m.mode) WITH ORDINALITY s(ctid, score, n)
               WHERE bq.q IS NOT NULL)) AS mismatches
FROM unnest(ARRAY['and', 'or', 'wand', 'bmw', 'and_or']) m(mode), unnest(ARRAY[1, 10, 500]) kk(k)
ORDER BY 1, 2;

-- a batch of more queries than are prepared at once (4096: the batch runs in
-- chunks), each answered as by gpuir_search, in its own query_no
CREATE TEMP TABLE ba_big AS
  SELECT g AS qno, 't' || (1 + g % 397) || ' t' || (1 + (g * 7) % 389) AS q
  FROM generate_series(1, 9000) g;
WITH b AS (SELECT x.query_no, array_agg(x.ctid::text || '/' || x.score ORDER BY x.n) AS r
           FROM gpuir_search_batch('ba_idx', (SELECT array_agg(q ORDER BY qno) FROM ba_big), 3, 'bmw')
                WITH ORDINALITY x(query_no, ctid, score, n)
           GROUP BY x.query_no),
     s AS (SELECT bb.qno,
                  (SELECT array_agg(y.ctid::text || '/' || y.score ORDER BY y.n)
                   FROM gpuir_search('ba_idx', bb.q, 3, 'bmw') WITH ORDINALITY y(ctid, score, n)) AS r
           FROM ba_big bb)
SELECT count(*) AS queries, count(s.r) AS answered,
       count(*) FILTER (WHERE b.r IS DISTINCT FROM s.r) AS mismatches
FROM s LEFT JOIN b ON b.query_no = s.qno;

-- a chunk whose lexemes overflow the session's dictionary-position cache
-- (65,536 lexeme x segment slots): 16 segments and two new lexemes a query,
-- so the cache starts afresh about 2,000 queries into the first chunk of
-- 4,096, freeing the kept list headers of the queries prepared before it;
-- those run from the pages instead (GpuirQuery.dirs_epoch), each answered
-- as by gpuir_search
CREATE TABLE ba_many (id int, body text) WITH (autovacuum_enabled = off);
INSERT INTO ba_many
SELECT i, 'wa' || (i % 5000) || 'z wb' || ((i * 7) % 5000) || 'z common'
FROM generate_series(1, 8000) i;
CREATE INDEX ba_many_idx ON ba_many USING gpuir (body)
  WITH (text_config = 'simple', max_segment_docs = 500);
SELECT (gpuir_index_info('ba_many_idx')).segments;
CREATE TEMP TABLE ba_many_q AS
  SELECT g AS qno, 'wa' || g || 'z wb' || ((g * 7) % 5000) || 'z' AS q FROM generate_series(0, 4999) g;
SELECT m.mode,
       (WITH b AS (SELECT x.query_no, array_agg(x.ctid::text || '/' || x.score ORDER BY x.n) AS r
                   FROM gpuir_search_batch('ba_many_idx', (SELECT array_agg(q ORDER BY qno) FROM ba_many_q),
                                           3, m.mode) WITH ORDINALITY x(query_no, ctid, score, n)
                   GROUP BY x.query_no),
             s AS (SELECT bq.qno,
                          (SELECT array_agg(y.ctid::text || '/' || y.score ORDER BY y.n)
                           FROM gpuir_search('ba_many_idx', bq.q, 3, m.mode) WITH ORDINALITY y(ctid, score, n)) AS r
                   FROM ba_many_q bq)
        SELECT format('%s queries, %s answered, %s mismatches', count(*), count(s.r),
                      count(*) FILTER (WHERE b.r IS DISTINCT FROM s.r))
        FROM s LEFT JOIN b ON b.query_no = s.qno + 1) AS result
FROM unnest(ARRAY['or', 'bmw', 'and']) m(mode);
DROP TABLE ba_many;

-- empty array, all-NULL array, errors
SELECT count(*) FROM gpuir_search_batch('ba_idx', ARRAY[]::text[]);
SELECT count(*) FROM gpuir_search_batch('ba_idx', ARRAY[NULL, NULL]::text[]);
\set VERBOSITY sqlstate
SELECT * FROM gpuir_search_batch('ba_idx', ARRAY['t1'], 0);
SELECT * FROM gpuir_search_batch('ba_idx', ARRAY['t1'], 10, 'nope');
SELECT * FROM gpuir_search_batch('ba_idx', ARRAY[['t1'], ['t2']]);
SELECT * FROM gpuir_search_batch('ba_docs', ARRAY['t1']);
\set VERBOSITY default

-- gpuir_status(): one row per device of gpuir.devices (one without a GPU),
-- sane in every setting (no preload, no GPU, one GPU or several)
SELECT count(*) >= 1 AS has_rows, bool_and(device IS NOT NULL) AS has_device,
       bool_and(budget >= 0) AS budget_ok,
       bool_and(bytes_cached <= greatest(budget, 0)) AS cache_within_budget,
       bool_and(gpu_queries >= 0 AND cpu_queries >= 0 AND fallbacks >= 0 AND errors >= 0
                AND searched_again >= 0 AND decoded_found >= 0 AND decoded_lists >= 0) AS counters_ok,
       bool_and((batches = 0) = (mean_batch_size = 0)) AS mean_batch_ok,
       count(DISTINCT device_id) = count(device_id) AS device_ids_distinct,
       bool_and((memory IS NULL) = (compute_capability IS NULL)) AS facts_together
FROM gpuir_status();
-- the service-wide columns: the queue, auto's routing and its predictions
-- (none without a ready GPU), the same on every row
SELECT bool_and(queue_depth >= 0 AND backends_searching >= 0) AS queue_ok,
       bool_and(auto_to_cpu >= 0 AND auto_to_gpu >= 0) AS routed_ok,
       bool_and((auto_predicted_us IS NULL) = (auto_observed_us IS NULL)) AS compared_together,
       bool_and(auto_predicted_us IS NULL OR auto_to_cpu + auto_to_gpu > 0) AS compared_routed,
       count(DISTINCT (queue_depth, auto_to_cpu, auto_to_gpu)) <= 1 AS service_wide,
       bool_and(pruned_decided >= 0 AND pruned_refused >= 0) AS pruned_ok
FROM gpuir_status();
SELECT coalesce(current_setting('gpuir.devices', true), 'all') AS devices;

-- gpuir_query_terms: distinct lexemes in term order (idf descending: t7 is
-- rarer than t1), global df of live rows
-- (VACUUM takes the deleted rows out of df)
VACUUM ba_docs;
SELECT lexeme, df = (SELECT count(*) FROM ba_docs WHERE to_tsvector('simple', body) @@ to_tsquery('simple', lexeme)) AS df_ok,
       idf > 0 AS idf_ok
FROM gpuir_query_terms('ba_idx', 't7 T1 t7 nosuchword');
DROP TABLE ba_docs, ba_queries;

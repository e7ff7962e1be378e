--
-- parallel_build: CREATE INDEX with parallel workers (a parallel table scan;
-- every participant tokenizes its share and encodes one range of the
-- dictionary, the leader appends the ranges) gives the same index as a
-- serial build: same counts, gpuir_verify clean, the same rows and score
-- bits for every query and mode; rows deleted but not vacuumed, NULL and
-- stopword-only rows included.  The DEBUG1 line shows that workers ran (how
-- many is in its DETAIL, not shown).  Last, a serial build past
-- maintenance_work_mem, from sorted runs in temporary files.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;

CREATE TABLE pb_docs (id int, body text) WITH (autovacuum_enabled = off);
INSERT INTO pb_docs
SELECT i, (SELECT string_agg('w' || ((i * 7919 + j * 104729) % (50 + i % 3000)), ' ')
           FROM generate_series(1, 1 + i % 40) j)
FROM generate_series(1, 30000) i;
INSERT INTO pb_docs VALUES (30001, NULL), (30002, 'the and of'), (30003, '');
DELETE FROM pb_docs WHERE id % 13 = 0;

SET max_parallel_maintenance_workers = 0;
CREATE INDEX pb_serial ON pb_docs USING gpuir (body) WITH (text_config = 'simple');
RESET max_parallel_maintenance_workers;

SET max_parallel_maintenance_workers = 2;
SET min_parallel_table_scan_size = 0;
SET maintenance_work_mem = '256MB';
\set VERBOSITY terse
SET client_min_messages = debug1;
CREATE INDEX pb_parallel ON pb_docs USING gpuir (body) WITH (text_config = 'simple');
RESET client_min_messages;

SELECT s.docs = p.docs AS docs, s.terms = p.terms AS terms, s.postings = p.postings AS postings,
       s.pages = p.pages AS pages, s.docs AS serial_docs, s.postings AS serial_postings
FROM gpuir_index_info('pb_serial') s, gpuir_index_info('pb_parallel') p;
SELECT gpuir_verify('pb_parallel');

-- every query, mode and k: the same rows and score bits
CREATE TABLE pb_queries AS
SELECT q, 'w' || q || ' w' || (q * 7 % 3000) || ' w' || (q * 13 % 200) AS qtext
FROM generate_series(1, 60) q;
SELECT m.mode, k, count(*) AS queries,
       sum((SELECT count(*) FROM gpuir_search('pb_serial', qtext, k, m.mode))) AS result_rows,
       count(*) FILTER (WHERE
         (SELECT array_agg(row(ctid, float4send(score)) ORDER BY score DESC, ctid)
          FROM gpuir_search('pb_serial', qtext, k, m.mode))
         IS DISTINCT FROM
         (SELECT array_agg(row(ctid, float4send(score)) ORDER BY score DESC, ctid)
          FROM gpuir_search('pb_parallel', qtext, k, m.mode))) AS mismatches
FROM pb_queries, (VALUES ('and'), ('or'), ('bmw')) m(mode), (VALUES (10), (1000)) kk(k)
GROUP BY m.mode, k ORDER BY m.mode, k;

-- REINDEX takes the same path
SET client_min_messages = debug1;
REINDEX INDEX pb_parallel;
RESET client_min_messages;
SELECT gpuir_verify('pb_parallel');
SELECT s.postings = p.postings AS postings, s.pages = p.pages AS pages
FROM gpuir_index_info('pb_serial') s, gpuir_index_info('pb_parallel') p;

-- CREATE INDEX CONCURRENTLY: the workers scan with the build's MVCC snapshot
SET client_min_messages = debug1;
CREATE INDEX CONCURRENTLY pb_concurrent ON pb_docs USING gpuir (body) WITH (text_config = 'simple');
RESET client_min_messages;
\set VERBOSITY default
SELECT gpuir_verify('pb_concurrent');
SELECT s.postings = c.postings AS postings, s.docs = c.docs AS docs
FROM gpuir_index_info('pb_serial') s, gpuir_index_info('pb_concurrent') c;
SELECT count(*) FILTER (WHERE
         (SELECT array_agg(row(ctid, float4send(score)) ORDER BY score DESC, ctid)
          FROM gpuir_search('pb_serial', qtext, 100, 'bmw'))
         IS DISTINCT FROM
         (SELECT array_agg(row(ctid, float4send(score)) ORDER BY score DESC, ctid)
          FROM gpuir_search('pb_concurrent', qtext, 100, 'bmw'))) AS mismatches
FROM pb_queries;

-- pb_mismatches: the queries whose top-1000 in mode differ between two
-- indexes (ctids and score bits)
CREATE FUNCTION pg_temp.pb_mismatches(a regclass, b regclass, mode text) RETURNS bigint
LANGUAGE sql AS $$
  SELECT count(*) FILTER (WHERE
           (SELECT array_agg(row(ctid, float4send(score)) ORDER BY score DESC, ctid)
            FROM gpuir_search(a, qtext, 1000, mode))
           IS DISTINCT FROM
           (SELECT array_agg(row(ctid, float4send(score)) ORDER BY score DESC, ctid)
            FROM gpuir_search(b, qtext, 1000, mode)))
  FROM pb_queries
$$;

-- maintenance_work_mem bounds the postings a build holds (20 bytes each):
-- past it they go to sorted runs in temporary files, read back term by term,
-- and the index is the same (the DEBUG1 line gives the number of runs)
SET max_parallel_maintenance_workers = 0;
SET maintenance_work_mem = '1MB';
SET client_min_messages = debug1;
\set VERBOSITY terse
CREATE INDEX pb_spilled ON pb_docs USING gpuir (body) WITH (text_config = 'simple');
RESET client_min_messages;
\set VERBOSITY default
RESET maintenance_work_mem;
SELECT gpuir_verify('pb_spilled');
SELECT s.docs = p.docs AS docs, s.terms = p.terms AS terms, s.postings = p.postings AS postings,
       s.pages = p.pages AS pages
FROM gpuir_index_info('pb_serial') s, gpuir_index_info('pb_spilled') p;
SELECT m.mode, pg_temp.pb_mismatches('pb_serial', 'pb_spilled', m.mode) AS mismatches
FROM (VALUES ('and'), ('or'), ('bmw')) m(mode) ORDER BY m.mode;

-- a parallel build whose long lists are merged by docID from every
-- participant's share: 'common' is in every row, w0..w96 in every 97th.
-- The index is the same as a serial build's.  (Workers that spill
-- sorted runs are not run here: plan_create_index_workers gives a build
-- workers only with 32MB of maintenance_work_mem per participant.)
CREATE TABLE pb_common (id int, body text) WITH (autovacuum_enabled = off);
INSERT INTO pb_common
SELECT i, 'common w' || (i % 97) || ' w' || (i % 1013) || ' w' || (i * 7 % 3000)
FROM generate_series(1, 40000) i;
SET max_parallel_maintenance_workers = 0;
CREATE INDEX pbc_serial ON pb_common USING gpuir (body) WITH (text_config = 'simple');
SET max_parallel_maintenance_workers = 2;
SET maintenance_work_mem = '256MB';
SET client_min_messages = debug1;
\set VERBOSITY terse
CREATE INDEX pbc_parallel ON pb_common USING gpuir (body) WITH (text_config = 'simple');
RESET client_min_messages;
\set VERBOSITY default
RESET maintenance_work_mem;
RESET max_parallel_maintenance_workers;
SELECT gpuir_verify('pbc_parallel');
SELECT s.docs = p.docs AS docs, s.terms = p.terms AS terms, s.postings = p.postings AS postings,
       s.pages = p.pages AS pages, s.docs AS serial_docs
FROM gpuir_index_info('pbc_serial') s, gpuir_index_info('pbc_parallel') p;
SELECT m.mode, pg_temp.pb_mismatches('pbc_serial', 'pbc_parallel', m.mode) AS mismatches
FROM (VALUES ('and'), ('or'), ('bmw')) m(mode) ORDER BY m.mode;
SELECT (SELECT array_agg(row(ctid, float4send(score)) ORDER BY score DESC, ctid)
        FROM gpuir_search('pbc_serial', 'common w5', 1000, 'or')) =
       (SELECT array_agg(row(ctid, float4send(score)) ORDER BY score DESC, ctid)
        FROM gpuir_search('pbc_parallel', 'common w5', 1000, 'or')) AS common_same;
DROP TABLE pb_common;

-- document priors (an INCLUDE column) travel with the documents to the
-- leader: the parallel build writes the serial build's segments, PRIORS
-- streams included (the last segments' priors are all 0: they have none),
-- and both rank alike, score bits included
CREATE TABLE pb_prior (id int, body text, pr real) WITH (autovacuum_enabled = off);
INSERT INTO pb_prior
SELECT i, 'common w' || (i % 97) || ' w' || (i % 1013) || ' w' || (i * 7 % 3000),
       CASE WHEN i <= 12000 THEN (i % 17) * 0.25 ELSE 0 END
FROM generate_series(1, 40000) i;
SET max_parallel_maintenance_workers = 0;
CREATE INDEX pbp_serial ON pb_prior USING gpuir (body) INCLUDE (pr)
  WITH (text_config = 'simple', prior_weight = 0.5, max_segment_docs = 10000);
SET max_parallel_maintenance_workers = 2;
SET maintenance_work_mem = '256MB';
SET client_min_messages = debug1;
\set VERBOSITY terse
CREATE INDEX pbp_parallel ON pb_prior USING gpuir (body) INCLUDE (pr)
  WITH (text_config = 'simple', prior_weight = 0.5, max_segment_docs = 10000);
RESET client_min_messages;
\set VERBOSITY default
RESET maintenance_work_mem;
RESET max_parallel_maintenance_workers;
SELECT gpuir_verify('pbp_parallel');
SELECT s.segments, s.docs = p.docs AS docs, s.postings = p.postings AS postings,
       s.pages = p.pages AS pages
FROM gpuir_index_info('pbp_serial') s, gpuir_index_info('pbp_parallel') p;
SELECT m.mode, pg_temp.pb_mismatches('pbp_serial', 'pbp_parallel', m.mode) AS mismatches
FROM (VALUES ('and'), ('or'), ('bmw')) m(mode) ORDER BY m.mode;
-- the priors count: the top row of 'common' is among the lifted ones
SELECT p.pr > 0 AS top_has_prior
FROM gpuir_search('pbp_parallel', 'common', 1, 'or') s JOIN pb_prior p ON p.ctid = s.ctid;
DROP TABLE pb_prior;

-- merges too: new rows, then a merge of pb_serial's segment and buffer past
-- maintenance_work_mem, against pb_spilled, which holds the same rows (the
-- new ones in its insert buffer).  The new rows fill space a VACUUM freed
-- among the old ones, so their TIDs interleave with the segment's: the runs'
-- lists come back out of docID order and are sorted before they are encoded
-- (autovacuum is off for pb_docs, so the merge's compaction below is alone).
DELETE FROM pb_docs WHERE id % 11 = 0;
-- VACUUM must remove the deleted rows: wait (at most 30 s) until no other
-- session holds a snapshot (autovacuum analyzing an earlier test's tables)
DO $$
BEGIN
  FOR i IN 1..300 LOOP
    EXIT WHEN NOT EXISTS (SELECT 1 FROM pg_stat_activity
                          WHERE pid <> pg_backend_pid() AND backend_xmin IS NOT NULL);
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
VACUUM pb_docs;
INSERT INTO pb_docs
SELECT i, 'w' || (i % 77) || ' w' || (i % 5) || ' w' || (i % 1234) FROM generate_series(40001, 40300) i;
SELECT (SELECT min(ctid) FROM pb_docs WHERE id > 40000) <
       (SELECT max(ctid) FROM pb_docs WHERE id <= 30003) AS new_rows_among_old;
-- (how many runs depends on the server's memory context overhead, which the
-- builder counts: the same on PostgreSQL 15, 17 and 18 so far)
SET maintenance_work_mem = '1MB';
SET client_min_messages = debug1;
\set VERBOSITY terse
SELECT gpuir_merge('pb_serial');
RESET client_min_messages;
\set VERBOSITY default
RESET maintenance_work_mem;
SELECT gpuir_verify('pb_serial');
SELECT s.segments, s.buffer_docs, p.buffer_docs AS spilled_buffer_docs, s.docs = p.docs AS docs
FROM gpuir_index_info('pb_serial') s, gpuir_index_info('pb_spilled') p;
SELECT m.mode, pg_temp.pb_mismatches('pb_serial', 'pb_spilled', m.mode) AS mismatches
FROM (VALUES ('and'), ('or'), ('bmw')) m(mode) ORDER BY m.mode;

-- a parallel build that finds no document (every row stopwords, empty or
-- NULL) gives an empty index and leaves no temporary file open (a leak
-- would show as a WARNING here)
CREATE TABLE pb_empty (id int, body text);
INSERT INTO pb_empty SELECT i, CASE WHEN i % 3 = 0 THEN NULL WHEN i % 3 = 1 THEN '' ELSE 'the of and' END
FROM generate_series(1, 3000) i;
ALTER TABLE pb_empty SET (parallel_workers = 2);
SET max_parallel_maintenance_workers = 2;
SET min_parallel_table_scan_size = 0;
SET client_min_messages = debug1;
\set VERBOSITY terse
CREATE INDEX pb_empty_idx ON pb_empty USING gpuir (body) WITH (text_config = 'english');
RESET client_min_messages;
\set VERBOSITY default
RESET max_parallel_maintenance_workers;
RESET min_parallel_table_scan_size;
SELECT docs, segments FROM gpuir_index_info('pb_empty_idx');
SELECT gpuir_verify('pb_empty_idx');
DROP TABLE pb_empty;

DROP TABLE pb_docs, pb_queries;

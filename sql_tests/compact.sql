--
-- compact: VACUUM and gpuir_merge() move segments toward the start of a
-- gpuir index and truncate the free pages that end it; the index answers
-- exactly like a freshly built one, and gpuir_verify passes.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;
CREATE TABLE cp_docs (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off);
INSERT INTO cp_docs
SELECT i, 'w' || (i % 101) || ' w' || (i % 37) || ' x' || (i % 1009) || ' y' || i || ' common'
FROM generate_series(1, 30000) i;
CREATE INDEX cp_idx ON cp_docs USING gpuir (body);
-- cp_differ(): (query, rank) pairs whose ctid or score differ between
-- cp_idx and a gpuir index freshly built on the same rows
CREATE FUNCTION cp_differ() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  CREATE INDEX cp_fresh ON cp_docs USING gpuir (body);
  WITH q(q) AS (VALUES ('w7 x5'), ('common'), ('w3 w7 y20000'), ('x1000 w100')),
  a AS (SELECT q.q, s.n, s.ctid, s.score FROM q,
          LATERAL gpuir_search('cp_idx', q.q, 50, 'bmw') WITH ORDINALITY s(ctid, score, n)),
  b AS (SELECT q.q, s.n, s.ctid, s.score FROM q,
          LATERAL gpuir_search('cp_fresh', q.q, 50, 'bmw') WITH ORDINALITY s(ctid, score, n))
  SELECT count(*) INTO n FROM a FULL JOIN b ON (a.q, a.n) = (b.q, b.n)
  WHERE a.ctid IS DISTINCT FROM b.ctid OR NOT abs(a.score - b.score) <= 1e-5 * abs(b.score);
  DROP INDEX cp_fresh;
  RETURN n;
END $$;
SELECT pg_relation_size('cp_idx') AS built \gset
-- a third of the rows deleted: VACUUM rewrites the segment (>= 15% deleted);
-- its new copy is appended after the old one, then moved down into the old
-- one's pages, and the end of the index truncated
DELETE FROM cp_docs WHERE id % 3 = 0;
VACUUM cp_docs;
SELECT pg_relation_size('cp_idx') < :built * 0.8 AS shrank,
       i.segments, i.deleted_docs, i.docs = (SELECT count(*) FROM cp_docs) AS docs_ok
FROM gpuir_index_info('cp_idx') i;
SELECT gpuir_verify('cp_idx');
SELECT cp_differ() AS differ_after_vacuum;
-- inserts and a full merge (its new segment is larger than the old one, so
-- it stays after it), then deletions: VACUUM's rewrite reuses the pages
-- the merge freed, and the end of the index is truncated again
INSERT INTO cp_docs
SELECT i, 'w' || (i % 101) || ' fresh x' || (i % 1009) FROM generate_series(30001, 33000) i;
SELECT gpuir_merge('cp_idx');
-- the old segment's pages are on the free space map (free_pages), within the file
SELECT i.segments, i.buffer_docs, i.free_pages > 0 AS old_copy_free,
       i.free_pages < i.pages AS within_file
FROM gpuir_index_info('cp_idx') i;
SELECT gpuir_verify('cp_idx');
SELECT cp_differ() AS differ_after_merge;
SELECT pg_relation_size('cp_idx') AS merged \gset
DELETE FROM cp_docs WHERE id % 3 = 1;
VACUUM cp_docs;
SELECT pg_relation_size('cp_idx') < :merged * 0.8 AS shrank_again, i.segments
FROM gpuir_index_info('cp_idx') i;
SELECT gpuir_verify('cp_idx');
SELECT cp_differ() AS differ_after_second_vacuum;
-- a cursor of this session still has the index open: gpuir_merge() leaves
-- the file's length alone (the merge's new pages stay), the cursor goes on,
-- and the next VACUUM truncates
BEGIN;
DECLARE cp_cur CURSOR FOR SELECT id FROM cp_docs ORDER BY body <@> 'w5 common' LIMIT 5;
FETCH 2 FROM cp_cur;
SELECT pg_relation_size('cp_idx') AS before_cursor_merge \gset
DELETE FROM cp_docs WHERE id % 3 = 2 AND id % 4 = 0;
SELECT gpuir_merge('cp_idx');
SELECT pg_relation_size('cp_idx') > :before_cursor_merge AS grew_not_truncated;
FETCH 3 FROM cp_cur;
COMMIT;
SELECT gpuir_verify('cp_idx');
VACUUM cp_docs;
SELECT pg_relation_size('cp_idx') <= :before_cursor_merge AS truncated_later;
SELECT gpuir_verify('cp_idx');
SELECT cp_differ() AS differ_after_cursor;
DROP FUNCTION cp_differ();
DROP TABLE cp_docs;
-- insert buffer pages that end the index: the lane's chain (the pages a
-- merge emptied, kept for later appends) is moved down into free pages,
-- and the index truncated to the lane's header page, which follows the
-- build's segment; later appends use the moved pages and are found
CREATE TABLE cl_docs (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off);
INSERT INTO cl_docs
SELECT i, 'w' || (i % 101) || ' x' || (i % 1009) || ' y' || i || ' common'
FROM generate_series(1, 30000) i;
CREATE INDEX cl_idx ON cl_docs USING gpuir (body);
SELECT pg_relation_size('cl_idx') / 8192 AS cl_built \gset
SET gpuir.insert_buffer_limit = '64MB';
INSERT INTO cl_docs
SELECT i, 'w' || (i % 101) || ' z' || (i % 997) || ' y' || i || ' common'
FROM generate_series(30001, 45000) i;
-- the lane's header page and its chain follow the segment
SELECT pg_relation_size('cl_idx') / 8192 - :cl_built AS cl_lane_pages \gset
SELECT :cl_lane_pages > 50 AS lane_chain_is_long;
-- the full merge's segment goes after the lane; the build's pages are freed
SELECT gpuir_merge('cl_idx');
-- VACUUM's merge puts the small new segment into the build's free pages
-- and frees the large one: the lane's chain then ends the pages in use
DELETE FROM cl_docs WHERE id % 10 <> 0;
VACUUM cl_docs;
SELECT pg_relation_size('cl_idx') / 8192 < :cl_built + :cl_lane_pages / 2 AS lane_moved_and_truncated,
       i.segments, i.buffer_docs, i.docs
FROM gpuir_index_info('cl_idx') i;
SELECT pg_relation_size('cl_idx') AS cl_moved \gset
SELECT gpuir_verify('cl_idx');
-- appends reuse the moved pages: the file does not grow
INSERT INTO cl_docs
SELECT i, 'w' || (i % 101) || ' appended' || (i % 7) || ' common'
FROM generate_series(45001, 46000) i;
SELECT pg_relation_size('cl_idx') = :cl_moved AS appends_reused_the_pages,
       i.buffer_docs
FROM gpuir_index_info('cl_idx') i;
SELECT gpuir_verify('cl_idx');
SET enable_seqscan = off;
SELECT count(*) AS found, min(id), max(id)
FROM (SELECT id, body FROM cl_docs ORDER BY body <@> 'appended3' LIMIT 1000) s
WHERE body LIKE '%appended3 %';
SELECT (SELECT array_agg(id ORDER BY id) FROM gpuir_search('cl_idx', 'appended3 w5', 20, 'and') s
          JOIN cl_docs d ON d.ctid = s.ctid) =
       (SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM cl_docs
          WHERE to_tsvector('english', body) @@ to_tsquery('english', 'appended3 & w5')) x)
       AS and_matches_found;
RESET enable_seqscan;
RESET gpuir.insert_buffer_limit;
DROP TABLE cl_docs;
-- an insert's merge that folds segments (here the tier merge of the small
-- segments that 64 kB buffers make) compacts before it lets the merge lock
-- go: its new segment, appended after them, moves down into their pages
-- and the end is truncated (in one session the pages are reusable at once)
CREATE TABLE im_docs (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off);
INSERT INTO im_docs SELECT i, 'w' || (i % 101) || ' x' || (i % 1009) || ' y' || i
FROM generate_series(1, 5000) i;
CREATE INDEX im_idx ON im_docs USING gpuir (body);
SET gpuir.insert_buffer_limit = '64kB';
SET client_min_messages = debug1;
\set VERBOSITY terse
INSERT INTO im_docs SELECT i, 'w' || (i % 101) || ' z' || (i % 997) || ' y' || i
FROM generate_series(5001, 20000) i;
RESET client_min_messages;
\set VERBOSITY default
SELECT pg_relation_size('im_idx') / 8192 AS pages, i.segments, i.docs
FROM gpuir_index_info('im_idx') i;
SELECT gpuir_verify('im_idx');
SELECT (SELECT count(*) FROM gpuir_search('im_idx', 'z5', 1000, 'or')) AS found,
       (SELECT count(*) FROM im_docs WHERE body LIKE '% z5 %') AS expected;
RESET gpuir.insert_buffer_limit;
DROP TABLE im_docs;

--
-- segment_maps: a merge or VACUUM whose new segment's streams fit in no
-- single free hole writes them in pieces over the holes and gives the
-- segment a map page (src/README, "Segment maps") instead of extending the
-- index.  Every query over segments in pieces gives the same rows and
-- score bits as a freshly built index, through VACUUM's in-place updates
-- of a mapped segment (its deleted bitmap and df), compaction and further
-- merges; gpuir_verify checks the map pages and every extent.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;
CREATE TABLE sm_docs (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off);
INSERT INTO sm_docs
SELECT i, 'w' || (i % 101) || ' w' || (i % 37) || ' x' || (i % 1009) || ' y' || i || ' common'
FROM generate_series(1, 24000) i;
CREATE INDEX sm_idx ON sm_docs USING gpuir (body) WITH (max_segment_docs = 2000);
-- sm_differ(): (query, mode, k, rank) whose ctid or score bits differ
-- between sm_idx and a gpuir index freshly built on the same rows
CREATE FUNCTION sm_differ() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  CREATE INDEX sm_fresh ON sm_docs USING gpuir (body);
  WITH q(q) AS (VALUES ('w7 x5'), ('common'), ('w3 w7 y20000'), ('x1000 w100'), ('fresh w5 z30500')),
  m(mode) AS (VALUES ('or'), ('and'), ('wand'), ('bmw')),
  k(k) AS (VALUES (10), (1000)),
  a AS (SELECT q.q, m.mode, k.k, s.n, s.ctid, s.score FROM q, m, k,
          LATERAL gpuir_search('sm_idx', q.q, k.k, m.mode) WITH ORDINALITY s(ctid, score, n)),
  b AS (SELECT q.q, m.mode, k.k, s.n, s.ctid, s.score FROM q, m, k,
          LATERAL gpuir_search('sm_fresh', q.q, k.k, m.mode) WITH ORDINALITY s(ctid, score, n))
  SELECT count(*) INTO n FROM a FULL JOIN b ON (a.q, a.mode, a.k, a.n) = (b.q, b.mode, b.k, b.n)
  WHERE a.ctid IS DISTINCT FROM b.ctid OR a.score::text IS DISTINCT FROM b.score::text;
  DROP INDEX sm_fresh;
  RETURN n;
END $$;
SELECT segments, segment_maps, free_pages FROM gpuir_index_info('sm_idx');
SELECT pg_relation_size('sm_idx') AS built \gset

-- a quarter of the rows of every other segment deleted: VACUUM rewrites
-- those six (>= 15% deleted) in rounds, each round's copy at first after
-- the end of the index, then moved down into the pages the round freed
-- (compaction); the holes those moves leave are too small for the later
-- rounds' streams, which fill them in pieces and go on at the end.  Of
-- such a segment compaction moves only the pages at the end (under the
-- same generation, with a new map page that retires the pages left), and
-- truncates the file back to its build size after each round
DELETE FROM sm_docs WHERE id % 4 = 0 AND (id / 2000) % 2 = 0;
SET client_min_messages = debug1;
\set VERBOSITY terse
VACUUM sm_docs;
RESET client_min_messages;
\set VERBOSITY default
SELECT segments, segment_maps > 0 AS in_pieces, deleted_docs,
       docs = (SELECT count(*) FROM sm_docs) AS docs_ok
FROM gpuir_index_info('sm_idx');
SELECT pg_relation_size('sm_idx') <= :built * 1.1 AS within_a_tenth_of_the_build;
SELECT gpuir_verify('sm_idx');
SELECT sm_differ() AS differ_in_pieces;
-- the ORDER BY form reads the same pieces
SELECT count(*) AS orderby_rows, count(DISTINCT id) AS distinct_rows
FROM (SELECT id FROM sm_docs ORDER BY body <@> 'w7 common' LIMIT 300) s;

-- rows of the mapped segments deleted: VACUUM updates their deleted bitmaps
-- and dictionaries in place, through their maps
DELETE FROM sm_docs WHERE id % 7 = 0 AND (id / 2000) % 2 = 0;
VACUUM sm_docs;
SELECT gpuir_verify('sm_idx');
SELECT sm_differ() AS differ_after_vacuum;

-- inserts and a full merge fold every segment, the mapped ones too, and
-- free their pieces and map pages
INSERT INTO sm_docs
SELECT i, 'w' || (i % 101) || ' fresh x' || (i % 1009) || ' z' || i FROM generate_series(30001, 36000) i;
SELECT gpuir_merge('sm_idx');
SELECT segments, segment_maps, docs = (SELECT count(*) FROM sm_docs) AS docs_ok
FROM gpuir_index_info('sm_idx');
SELECT gpuir_verify('sm_idx');
SELECT sm_differ() AS differ_after_merge;
DROP FUNCTION sm_differ();
DROP TABLE sm_docs;

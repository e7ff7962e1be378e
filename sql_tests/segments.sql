--
-- segments: the max_segment_docs storage parameter.  CREATE INDEX (serial
-- and parallel) writes ceil(N / cap) segments, each a range of heap TIDs;
-- merges write pieces of at most the cap and leave full segments out of
-- tier merges.  Every query gives the same rows and score bits as an
-- uncapped index on the same rows (BM25's N, avgdl and df are the index's,
-- whatever its segments), through inserts, deletes, VACUUM, gpuir_merge()
-- and a change of the parameter.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;

CREATE TABLE sg_docs (id int, body text) WITH (autovacuum_enabled = off);
INSERT INTO sg_docs
SELECT i, (SELECT string_agg('w' || ((i * 7919 + j * 104729) % (50 + i % 2000)), ' ')
           FROM generate_series(1, 1 + i % 30) j)
FROM generate_series(1, 20000) i;
DELETE FROM sg_docs WHERE id % 13 = 0;

SET max_parallel_maintenance_workers = 0;
CREATE INDEX sg_one ON sg_docs USING gpuir (body) WITH (text_config = 'simple');
CREATE INDEX sg_cap ON sg_docs USING gpuir (body)
	WITH (text_config = 'simple', max_segment_docs = 3000);
SET max_parallel_maintenance_workers = 2;
SET min_parallel_table_scan_size = 0;
\set VERBOSITY terse
SET client_min_messages = debug1;
CREATE INDEX sg_par ON sg_docs USING gpuir (body)
	WITH (text_config = 'simple', max_segment_docs = 3000);
RESET client_min_messages;
RESET max_parallel_maintenance_workers;
RESET min_parallel_table_scan_size;

-- 18462 documents: ceil(18462 / 3000) = 7 segments, the same postings
SELECT i.name, docs, postings, segments, buffer_docs
FROM (VALUES ('sg_one'), ('sg_cap'), ('sg_par')) i(name), gpuir_index_info(i.name::regclass)
ORDER BY 1;
SELECT gpuir_verify('sg_cap'), gpuir_verify('sg_par');

CREATE TABLE sg_queries AS
SELECT q, 'w' || q || ' w' || (q * 7 % 2000) || ' w' || (q * 13 % 200) AS qtext
FROM generate_series(1, 40) q;

-- sg_compare(index): per mode and k, the queries whose rows or score bits
-- differ from sg_one's
CREATE FUNCTION sg_compare(ix regclass)
RETURNS TABLE (mode text, k int, queries bigint, result_rows numeric, mismatches bigint)
LANGUAGE sql AS $$
SELECT m.mode, kk.k, count(*),
       sum((SELECT count(*) FROM gpuir_search('sg_one', qtext, kk.k, m.mode))),
       count(*) FILTER (WHERE
         (SELECT array_agg(row(ctid, float4send(score)) ORDER BY score DESC, ctid)
          FROM gpuir_search('sg_one', qtext, kk.k, m.mode))
         IS DISTINCT FROM
         (SELECT array_agg(row(ctid, float4send(score)) ORDER BY score DESC, ctid)
          FROM gpuir_search(ix, qtext, kk.k, m.mode)))
FROM sg_queries, (VALUES ('and'), ('or'), ('bmw')) m(mode), (VALUES (10), (1000)) kk(k)
GROUP BY m.mode, kk.k ORDER BY m.mode, kk.k
$$;
SELECT * FROM sg_compare('sg_cap');
SELECT * FROM sg_compare('sg_par');
DROP INDEX sg_par;

-- writes: inserts past the buffer's limit merge, deletes and VACUUM rewrite
SET gpuir.insert_buffer_limit = '256kB';
INSERT INTO sg_docs
SELECT i, (SELECT string_agg('w' || ((i * 31 + j * 977) % (40 + i % 1500)), ' ')
           FROM generate_series(1, 1 + i % 25) j)
FROM generate_series(20001, 26000) i;
RESET gpuir.insert_buffer_limit;
DELETE FROM sg_docs WHERE id % 5 = 1 AND id < 9000;
VACUUM sg_docs;
SELECT gpuir_verify('sg_cap');
SELECT s.docs = o.docs AS docs, s.segments BETWEEN 7 AND 12 AS segments
FROM gpuir_index_info('sg_cap') s, gpuir_index_info('sg_one') o;
-- with each or/bmw search checked against every document rescored
-- (gpuir.debug_rescore: the rescoring of a GPU search over pruned lists)
SET gpuir.debug_rescore = on;
SELECT * FROM sg_compare('sg_cap');
RESET gpuir.debug_rescore;

-- a full merge cuts every document into ceil(N / cap) pieces
SELECT gpuir_merge('sg_cap');
SELECT docs, segments, segments = ceil(docs / 3000.0) AS pieces
FROM gpuir_index_info('sg_cap');
SELECT gpuir_verify('sg_cap');
SELECT * FROM sg_compare('sg_cap') WHERE mismatches > 0;

-- the parameter applies from the next merge on; 0 lifts the cap
ALTER INDEX sg_cap SET (max_segment_docs = 0);
SELECT gpuir_merge('sg_cap');
SELECT segments FROM gpuir_index_info('sg_cap');
SELECT * FROM sg_compare('sg_cap') WHERE mismatches > 0;
ALTER INDEX sg_cap SET (max_segment_docs = 10000);
SELECT gpuir_merge('sg_cap');
SELECT segments FROM gpuir_index_info('sg_cap');
SELECT gpuir_verify('sg_cap');
SELECT * FROM sg_compare('sg_cap') WHERE mismatches > 0;

-- the session remembers dictionary entries (and where absent lexemes would
-- be) per segment: a REINDEX, and a new index of the same name with other
-- segments, must not meet them
REINDEX INDEX sg_cap;
SELECT * FROM sg_compare('sg_cap') WHERE mismatches > 0;
DROP INDEX sg_cap;
CREATE INDEX sg_cap ON sg_docs USING gpuir (body)
	WITH (text_config = 'simple', max_segment_docs = 2000);
SELECT segments FROM gpuir_index_info('sg_cap');
SELECT * FROM sg_compare('sg_cap') WHERE mismatches > 0;

-- WAND and BMW skip a segment whose lists cannot reach the k-th score
-- found in the others, unread; OR, document at a time, reads every block.
-- The first segment holds the 100 short documents with tf 4, the other
-- three only long ones with tf 1 (8 blocks a segment).  The counts are the
-- CPU engine's (gpuir.device = cpu: also when the suite runs on the GPU).
SET gpuir.taat_max_postings = 0;
SET gpuir.device = cpu;
CREATE TABLE sg_skip (id int, body text) WITH (autovacuum_enabled = off);
INSERT INTO sg_skip
SELECT i, CASE WHEN i <= 100 THEN 'zz zz zz zz' ELSE 'zz ' || repeat('filler ', 50) END
FROM generate_series(1, 4000) i;
CREATE INDEX sg_skip_idx ON sg_skip USING gpuir (body)
	WITH (text_config = 'simple', max_segment_docs = 1000);
SELECT segments FROM gpuir_index_info('sg_skip_idx');
CREATE FUNCTION sg_skip_run(m text, OUT top text, OUT decoded bigint, OUT skipped bigint)
LANGUAGE plpgsql AS $$
BEGIN
	top := (SELECT string_agg(ctid::text || ' ' || float4send(score)::text, ', '
							  ORDER BY score DESC, ctid)
			FROM gpuir_search('sg_skip_idx', 'zz', 10, m));
	SELECT s.blocks_decoded, s.blocks_skipped INTO decoded, skipped
	FROM gpuir_last_query_stats() s;
END $$;
CREATE TEMP TABLE sg_skip_stats AS
SELECT m AS mode, r.* FROM unnest(ARRAY['or', 'wand', 'bmw']) m, LATERAL sg_skip_run(m) r;
SELECT mode, top = (SELECT top FROM sg_skip_stats WHERE mode = 'or') AS same_top10,
       decoded, skipped
FROM sg_skip_stats ORDER BY mode;
RESET gpuir.taat_max_postings;
RESET gpuir.device;
DROP TABLE sg_skip, sg_skip_stats;
DROP FUNCTION sg_skip_run(text);

-- VACUUM rewrites in rounds: under a cap of 500, one merge rewrites one
-- segment of 400 live documents (the cap's worth), so a VACUUM after 20% of
-- the rows of every segment were deleted merges again while a segment keeps
-- 15% or more of its documents deleted: none is left
CREATE TABLE sg_rounds (id int, body text) WITH (autovacuum_enabled = off);
INSERT INTO sg_rounds
SELECT i, 'w' || (i % 37) || ' w' || (i % 101) || ' common' FROM generate_series(1, 4000) i;
CREATE INDEX sg_rounds_idx ON sg_rounds USING gpuir (body)
	WITH (text_config = 'simple', max_segment_docs = 500);
DELETE FROM sg_rounds WHERE id % 5 = 0;
VACUUM sg_rounds;
SELECT docs, deleted_docs, segments FROM gpuir_index_info('sg_rounds_idx');
SELECT gpuir_verify('sg_rounds_idx');
CREATE TEMP TABLE sg_rounds_before AS
SELECT q, s.ctid AS tid, s.score FROM unnest(ARRAY['w3 common', 'w7 w8', 'w36 w100 common']) q,
	LATERAL gpuir_search('sg_rounds_idx', q, 20, 'bmw') s;
REINDEX INDEX sg_rounds_idx;
SELECT count(*) AS differ FROM (
	(SELECT * FROM sg_rounds_before
	 EXCEPT SELECT q, s.ctid, s.score FROM unnest(ARRAY['w3 common', 'w7 w8', 'w36 w100 common']) q,
		LATERAL gpuir_search('sg_rounds_idx', q, 20, 'bmw') s)) d;
SELECT count(*) AS results FROM sg_rounds_before;
DROP TABLE sg_rounds, sg_rounds_before;

-- with gpuir in shared_preload_libraries, a session that has not looked a
-- lexeme up itself takes the dictionary position another session found
-- (gpuirdicthints.h), checked on the pages.  Read one entry off
-- (gpuir.debug_dict_hint_skew), every such position must be refused and
-- searched again: the answers are the ones this session found with its
-- own lookups.  Without the preload there are no shared positions.
CREATE TABLE sg_hint_ref AS
SELECT q, m.mode,
       (SELECT string_agg(ctid::text || ' ' || float4send(score)::text, ', '
                          ORDER BY score DESC, ctid)
        FROM gpuir_search('sg_cap', qtext, 10, m.mode)) AS top
FROM sg_queries, (VALUES ('and'), ('or'), ('bmw')) m(mode);
CREATE VIEW sg_hint_differ AS
SELECT count(*) FILTER (WHERE r.top IS DISTINCT FROM
		(SELECT string_agg(ctid::text || ' ' || float4send(score)::text, ', '
							ORDER BY score DESC, ctid)
		 FROM gpuir_search('sg_cap', s.qtext, 10, r.mode))) AS differ,
	   count(*) FILTER (WHERE r.top IS NOT NULL) AS answered
FROM sg_hint_ref r JOIN sg_queries s USING (q);
\c
SET gpuir.debug_dict_hint_skew = 1;
SELECT * FROM sg_hint_differ;
\c
SELECT * FROM sg_hint_differ;
DROP VIEW sg_hint_differ;
DROP TABLE sg_hint_ref;

-- bad values
ALTER INDEX sg_cap SET (max_segment_docs = -1);
CREATE INDEX sg_bad ON sg_docs USING gpuir (body) WITH (max_segment_docs = 'many');

DROP TABLE sg_docs, sg_queries;
DROP FUNCTION sg_compare(regclass);

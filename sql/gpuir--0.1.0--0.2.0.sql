-- gpuir--0.1.0--0.2.0.sql: upgrade script of the gpuir extension, 0.1.0 to 0.2.0
-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION gpuir UPDATE TO '0.2.0'" to load this file. \quit

-- Checking ------------------------------------------------------------------

CREATE FUNCTION gpuir_verify(index regclass) RETURNS void
	AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuir_verify(regclass) IS
	'check the on-disk structure of a gpuir index (amcheck-style); raises XX002 index_corrupted at the first problem';
-- like contrib/amcheck: reading every page of an index is for superusers
-- unless granted
REVOKE ALL ON FUNCTION gpuir_verify(regclass) FROM PUBLIC;

-- Size ---------------------------------------------------------------------

-- 0.2.0 adds free_pages (the free space map's pages) and segment_maps
-- (segments whose streams are in pieces).
DROP FUNCTION gpuir_index_info(regclass);
CREATE FUNCTION gpuir_index_info(index regclass,
	OUT docs bigint, OUT deleted_docs bigint, OUT terms bigint, OUT postings bigint,
	OUT segments integer, OUT buffer_docs bigint, OUT pages bigint,
	OUT bytes_per_posting float8, OUT free_pages bigint, OUT segment_maps integer)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION gpuir_index_info(regclass) IS
	'size and content statistics of a gpuir index, free space map pages and segments in pieces included';

-- GPU service observability ------------------------------------------------

-- One row per GPU of gpuir.devices (0.1.0: one row, device 0 only).
DROP FUNCTION gpuir_status();
CREATE FUNCTION gpuir_status(
	OUT device_id integer, OUT device text, OUT memory bigint, OUT compute_capability text,
	OUT worker_pid integer, OUT budget bigint, OUT bytes_cached bigint, OUT cache_hits bigint,
	OUT cache_misses bigint, OUT list_hits bigint, OUT bytes_shipped bigint, OUT batches bigint, OUT mean_batch_size float8,
	OUT gpu_queries bigint, OUT cpu_queries bigint, OUT fallbacks bigint, OUT errors bigint,
	OUT last_error text, OUT queue_depth bigint, OUT backends_searching integer,
	OUT auto_to_cpu bigint, OUT auto_to_gpu bigint,
	OUT auto_predicted_us float8, OUT auto_observed_us float8,
	OUT pruned_decided bigint, OUT pruned_refused bigint, OUT searched_again bigint,
	OUT decoded_found bigint, OUT decoded_lists bigint)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION gpuir_status() IS
	'state of the GPU service, one row per GPU of gpuir.devices: device, list cache (segments, and lists of segments larger than the budget), batches, queries answered, errors; service-wide: cpu_queries, fallbacks, the queue, gpuir.device = auto''s routing and its predicted against observed times, and the queries answered over pruned lists; per GPU again, the queries answered with a second search because their candidates outgrew the room the first reserved, and the lists of or and bmw queries found decoded by an earlier search and those decoded';

CREATE FUNCTION gpuir_gpu_stages(
	OUT stage text, OUT events bigint, OUT total_ms float8, OUT mean_us float8)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION gpuir_gpu_stages() IS
	'time the GPU service spent per stage of a request (queue, window, prepare, cache, search, answer, round_trip; transit_read and transit_send for segments larger than gpuir.device_memory) since the server started, worker_cpu: the worker''s CPU time per query answered, and wake: the part of round_trip from the worker''s answer until the backend saw it, for one request in 8';

-- The ordering operator's function ------------------------------------------

-- Its value is the score that the gpuir index scan which returned the row
-- computed (session state for the statement: STABLE, not IMMUTABLE), and a
-- NULL query must reach the index scan (which returns no rows) rather than
-- fold to a NULL sort key that orders nothing.  COST 100 (a hash lookup per
-- row, with a heap fetch per returned row): the index scan's own costs are
-- tiny, so a scan and sort, which evaluates it for every row, still loses;
-- 0.1.0's COST 100000 priced ORDER BY ... LIMIT 1000 at 250,000 and made
-- PostgreSQL JIT-compile a 1000-row index scan.
ALTER FUNCTION gpuir_bm25_order(text, text) STABLE CALLED ON NULL INPUT COST 100;

CREATE FUNCTION gpuir_route(
	OUT load text, OUT mode text, OUT k text, OUT postings_from bigint,
	OUT cpu_mean_us float8, OUT cpu_samples bigint,
	OUT gpu_mean_us float8, OUT gpu_samples bigint, OUT gpu_cpu_mean_us float8,
	OUT routed_cpu bigint, OUT routed_gpu bigint)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION gpuir_route() IS
	'the cost model of gpuir.device = auto: per load and query class, the mean time on each device and the queries sent to each';

-- tsquery in ------------------------------------------------------------------

-- The rows of to_tsvector(cfg, column) @@ query (cfg: the index's
-- configuration), ranked by BM25 over the query's positive lexemes; mode is
-- the algorithm of its | parts (or, wand, bmw).
CREATE FUNCTION gpuir_search(index regclass, query tsquery, k integer DEFAULT 10,
							 mode text DEFAULT 'bmw')
	RETURNS TABLE (ctid tid, score real)
	AS 'MODULE_PATHNAME', 'gpuir_search_tsquery' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuir_search(regclass, tsquery, integer, text) IS
	'top-k visible rows matching a tsquery (as to_tsvector(cfg, column) @@ query) by BM25 over its positive lexemes, best first, ties by ctid; modes or, wand, bmw';

CREATE FUNCTION gpuir_search_batch(index regclass, queries tsquery[], k integer DEFAULT 10,
								   mode text DEFAULT 'bmw')
	RETURNS TABLE (query_no integer, ctid tid, score real)
	AS 'MODULE_PATHNAME', 'gpuir_search_batch_tsquery' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuir_search_batch(regclass, tsquery[], integer, text) IS
	'gpuir_search for every element of an array of tsqueries, sent to the GPU service as one batch per engine mode';

CREATE FUNCTION gpuir_bm25_order(text, tsquery) RETURNS float8
	AS 'MODULE_PATHNAME', 'gpuir_bm25_order_tsquery'
	LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL SAFE COST 100;

CREATE OPERATOR <@> (
	LEFTARG = text,
	RIGHTARG = tsquery,
	FUNCTION = gpuir_bm25_order
);
COMMENT ON OPERATOR <@> (text, tsquery) IS
	'minus the BM25 score of a document for a tsquery (its positive lexemes); usable only as ORDER BY col <@> tsquery on a gpuir index, which returns only the rows the tsquery matches';

ALTER OPERATOR FAMILY gpuir_text_ops USING gpuir
	ADD OPERATOR 2 <@> (text, tsquery) FOR ORDER BY float_ops;

-- Snippets ------------------------------------------------------------------

CREATE FUNCTION gpuir_headline(index regclass, doc text, query tsquery, options text DEFAULT '')
	RETURNS text
	AS 'MODULE_PATHNAME', 'gpuir_headline_tsquery' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION gpuir_headline(regclass, text, tsquery, text) IS
	'ts_headline of a document for a tsquery with the gpuir index''s text search configuration';

CREATE FUNCTION gpuir_headline(index regclass, doc text, query text, options text DEFAULT '')
	RETURNS text
	AS 'MODULE_PATHNAME', 'gpuir_headline' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION gpuir_headline(regclass, text, text, text) IS
	'ts_headline of a document for a text query (its lexemes ORed) with the gpuir index''s text search configuration';

-- Filtered top-k: the k best among the rows whose ctids filter holds ---------

CREATE FUNCTION gpuir_search(index regclass, query text, k integer, mode text, filter tid[])
	RETURNS TABLE (ctid tid, score real)
	AS 'MODULE_PATHNAME', 'gpuir_search' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuir_search(regclass, text, integer, text, tid[]) IS
	'top-k by BM25 among the visible rows whose ctid is in filter (e.g. ARRAY(SELECT ctid FROM t WHERE ...)), exact at any selectivity';

CREATE FUNCTION gpuir_search(index regclass, query tsquery, k integer, mode text, filter tid[])
	RETURNS TABLE (ctid tid, score real)
	AS 'MODULE_PATHNAME', 'gpuir_search_tsquery' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuir_search(regclass, tsquery, integer, text, tid[]) IS
	'top-k matching a tsquery by BM25 among the visible rows whose ctid is in filter, exact at any selectivity';

COMMENT ON FUNCTION gpuir_merge(regclass) IS
	'fold the insert buffer and all segments of a gpuir index into one segment (or segments of at most max_segment_docs rows), dropping vacuumed rows';

COMMENT ON FUNCTION gpuir_query_terms(regclass, text) IS
	'the distinct lexemes of a query as the index sees them, in the order scores are summed (idf descending, ties in lexeme order), with their global df and idf';

-- gpuir--0.2.0.sql: install script of the gpuir extension, version 0.2.0
-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION gpuir" to load this file. \quit

-- The index access method ---------------------------------------------------

CREATE FUNCTION gpuir_handler(internal) RETURNS index_am_handler
	AS 'MODULE_PATHNAME' LANGUAGE C;

CREATE ACCESS METHOD gpuir TYPE INDEX HANDLER gpuir_handler;
COMMENT ON ACCESS METHOD gpuir IS
	'BM25 ranked full-text index: block-compressed posting lists, exact top-k (AND, OR, WAND, Block-Max WAND)';

-- The ordering operator: col <@> 'query' is minus the BM25 score of the row
-- for the query, so ORDER BY col <@> 'query' LIMIT k gives the k best rows.
-- Its value needs the index's collection statistics (N, avgdl, df), so it is
-- computed by a gpuir index scan only; evaluated anywhere else it raises
-- 0A000 (feature_not_supported).
CREATE FUNCTION gpuir_bm25_order(text, text) RETURNS float8
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	COST 100000;	-- never worth evaluating per row: steers the planner to the index

CREATE OPERATOR <@> (
	LEFTARG = text,
	RIGHTARG = text,
	FUNCTION = gpuir_bm25_order
);
COMMENT ON OPERATOR <@> (text, text) IS
	'minus the BM25 score of a document for a query; usable only as ORDER BY col <@> query on a gpuir index';

CREATE OPERATOR CLASS gpuir_text_ops
	DEFAULT FOR TYPE text USING gpuir AS
	OPERATOR 1 <@> (text, text) FOR ORDER BY float_ops;

-- Query functions -----------------------------------------------------------

CREATE FUNCTION gpuir_search(index regclass, query text, k integer DEFAULT 10,
							 mode text DEFAULT 'bmw')
	RETURNS TABLE (ctid tid, score real)
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuir_search(regclass, text, integer, text) IS
	'top-k visible rows of the indexed table by BM25 for a query, best first, ties by ctid; modes and, or, wand, bmw, and_or';

CREATE FUNCTION gpuir_search_batch(index regclass, queries text[], k integer DEFAULT 10,
								   mode text DEFAULT 'bmw')
	RETURNS TABLE (query_no integer, ctid tid, score real)
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuir_search_batch(regclass, text[], integer, text) IS
	'gpuir_search for every element of an array of queries, sent to the GPU service as one batch';

CREATE FUNCTION gpuir_query_terms(index regclass, query text)
	RETURNS TABLE (lexeme text, df bigint, idf real)
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuir_query_terms(regclass, text) IS
	'the distinct lexemes of a query as the index sees them, with their global df and idf';

CREATE FUNCTION gpuir_merge(index regclass) RETURNS void
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION gpuir_merge(regclass) IS
	'fold the insert buffer and all segments of a gpuir index into one segment, dropping vacuumed rows';

CREATE FUNCTION gpuir_index_info(index regclass,
	OUT docs bigint, OUT deleted_docs bigint, OUT terms bigint, OUT postings bigint,
	OUT segments integer, OUT buffer_docs bigint, OUT pages bigint,
	OUT bytes_per_posting float8)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION gpuir_index_info(regclass) IS
	'size and content statistics of a gpuir index';

CREATE FUNCTION gpuir_last_query_stats(
	OUT blocks_decoded bigint, OUT blocks_skipped bigint, OUT docs_scored bigint)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION gpuir_last_query_stats() IS
	'work counters of the last gpuir query run by this session';

CREATE FUNCTION gpuir_status(
	OUT device text, OUT memory bigint, OUT compute_capability text, OUT worker_pid integer,
	OUT budget bigint, OUT bytes_cached bigint, OUT cache_hits bigint, OUT cache_misses bigint,
	OUT batches bigint, OUT mean_batch_size float8, OUT gpu_queries bigint,
	OUT cpu_queries bigint, OUT fallbacks bigint, OUT errors bigint, OUT last_error text)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION gpuir_status() IS
	'state of the GPU service: device, list cache, batches, queries per device, errors';

-- Checking ------------------------------------------------------------------

CREATE FUNCTION gpuir_verify(index regclass) RETURNS void
	AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuir_verify(regclass) IS
	'check the on-disk structure of a gpuir index (amcheck-style); raises XX002 index_corrupted at the first problem';
-- like contrib/amcheck: reading every page of an index is for superusers
-- unless granted
REVOKE ALL ON FUNCTION gpuir_verify(regclass) FROM PUBLIC;

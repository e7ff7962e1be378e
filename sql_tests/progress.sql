--
-- progress: CREATE INDEX reports its phases in pg_stat_progress_create_index.
-- An index expression reads the building backend's own progress row when it
-- meets the row 'probe' (the view's snapshot is taken at that first read).
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;

CREATE FUNCTION pr_probe(t text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF t = 'probe' THEN
    RAISE NOTICE 'progress: %', (SELECT command || ' / ' || phase || ' / tuples_total ' || tuples_total
                                        || ' / blocks_total ' || blocks_total
                                 FROM pg_stat_progress_create_index WHERE pid = pg_backend_pid());
  END IF;
  RETURN t;
END $$;
CREATE TABLE pr_docs (id int, body text);
INSERT INTO pr_docs SELECT i, 'word' || i FROM generate_series(1, 3000) i;
INSERT INTO pr_docs VALUES (3001, 'probe');
ANALYZE pr_docs;
SELECT pg_relation_size('pr_docs') / current_setting('block_size')::int AS heap_blocks;
CREATE INDEX pr_idx ON pr_docs USING gpuir (pr_probe(body));
SELECT count(*) FROM gpuir_search('pr_idx', 'probe', 10);
DROP TABLE pr_docs;
DROP FUNCTION pr_probe(text);

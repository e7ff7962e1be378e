--
-- verify: gpuir_verify (amcheck-style structure check) passes on every state
-- an index goes through: fresh build, empty index, inserts into the insert
-- buffer (and the merges they trigger), updates, deletes before and after
-- VACUUM, gpuir_merge, REINDEX; temporary and unlogged tables; and it raises
-- 42809 for a relation that is not a gpuir index.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;

SELECT setseed(0.25);
CREATE TABLE vf_docs (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off);
-- 3000 rows: lists of several blocks, a Zipf-like vocabulary, a few NULLs and empties
INSERT INTO vf_docs
SELECT i, CASE WHEN i % 97 = 0 THEN NULL WHEN i % 89 = 0 THEN 'the of and' ELSE
          (SELECT string_agg('w' || floor(exp(random() * ln(2000)))::int, ' ')
           FROM generate_series(1, 3 + i % 17)) || ' common' END
FROM generate_series(1, 3000) i;
CREATE INDEX vf_idx ON vf_docs USING gpuir (body) WITH (text_config = 'english');
SELECT gpuir_verify('vf_idx');

-- empty indexes: no row, only NULL / token-less rows
CREATE TABLE vf_empty (body text);
CREATE INDEX vf_empty_idx ON vf_empty USING gpuir (body);
SELECT gpuir_verify('vf_empty_idx');
INSERT INTO vf_empty VALUES (NULL), (''), ('the and of');
SELECT gpuir_verify('vf_empty_idx');
SELECT docs, segments, buffer_docs FROM gpuir_index_info('vf_empty_idx');
REINDEX INDEX vf_empty_idx;
SELECT gpuir_verify('vf_empty_idx');

-- inserts: into the insert buffer, then past a small limit (merges)
INSERT INTO vf_docs SELECT i, 'fresh w' || i % 50 || ' common uniq' || i
FROM generate_series(3001, 3100) i;
SELECT gpuir_verify('vf_idx');
SELECT buffer_docs > 0 AS buffered FROM gpuir_index_info('vf_idx');
SET gpuir.insert_buffer_limit = '64kB';
INSERT INTO vf_docs
SELECT i, (SELECT string_agg('w' || floor(exp(random() * ln(2000)))::int, ' ')
           FROM generate_series(1, 20 + i % 30)) || ' later'
FROM generate_series(3101, 4600) i;
RESET gpuir.insert_buffer_limit;
SELECT segments > 1 AS merged FROM gpuir_index_info('vf_idx');
SELECT gpuir_verify('vf_idx');

-- updates and deletes: dead index entries before VACUUM
UPDATE vf_docs SET body = body || ' updated' WHERE id % 13 = 0;
DELETE FROM vf_docs WHERE id % 17 = 0;
SELECT gpuir_verify('vf_idx');
-- in the same transaction as the writes
BEGIN;
INSERT INTO vf_docs VALUES (5001, 'inside transaction');
SELECT gpuir_verify('vf_idx');
COMMIT;

-- VACUUM marks them deleted (segments and buffer); N, df follow
VACUUM vf_docs;
SELECT deleted_docs > 0 AS has_deleted FROM gpuir_index_info('vf_idx');
SELECT gpuir_verify('vf_idx');
-- delete everything of the tail, VACUUM truncates the heap
DELETE FROM vf_docs WHERE id > 4000;
VACUUM vf_docs;
SELECT gpuir_verify('vf_idx');
-- segments with 15% or more deleted documents are rewritten by VACUUM
DELETE FROM vf_docs WHERE id % 3 = 0;
VACUUM vf_docs;
SELECT deleted_docs AS deleted_after_rewrite FROM gpuir_index_info('vf_idx');
SELECT gpuir_verify('vf_idx');

-- gpuir_merge: one segment, no deleted docs
SELECT gpuir_merge('vf_idx');
SELECT segments, deleted_docs, buffer_docs FROM gpuir_index_info('vf_idx');
SELECT gpuir_verify('vf_idx');

-- REINDEX
REINDEX INDEX vf_idx;
SELECT gpuir_verify('vf_idx');

-- VACUUM FULL and REINDEX CONCURRENTLY rebuild the index: same rows and scores
-- a function, not a view: the index name is looked up at each call (the
-- rebuilt index has another OID)
CREATE FUNCTION vf_top() RETURNS TABLE (score real, id int) LANGUAGE sql AS $$
  SELECT s.score, d.id FROM gpuir_search('vf_idx', 'w3 w7 common', 20, 'bmw') s
  JOIN vf_docs d ON d.ctid = s.ctid $$;
CREATE TABLE vf_before AS SELECT * FROM vf_top();
-- rows in one result and not the other
CREATE FUNCTION vf_differ() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM ((SELECT * FROM vf_before EXCEPT SELECT * FROM vf_top())
                        UNION ALL (SELECT * FROM vf_top() EXCEPT SELECT * FROM vf_before)) x $$;
VACUUM FULL vf_docs;
SELECT gpuir_verify('vf_idx');
SELECT vf_differ() AS differ_after_vacuum_full;
REINDEX INDEX CONCURRENTLY vf_idx;
SELECT gpuir_verify('vf_idx');
SELECT vf_differ() AS differ_after_reindex_concurrently;
SELECT count(*) AS rows_found FROM vf_before;
DROP FUNCTION vf_differ();
DROP FUNCTION vf_top();
DROP TABLE vf_before;
SELECT i.docs = (SELECT count(*) FROM vf_docs
                 WHERE length(to_tsvector('english', body)) > 0) AS docs_ok
FROM gpuir_index_info('vf_idx') i;

-- temporary and unlogged tables
CREATE TEMP TABLE vf_temp AS SELECT * FROM vf_docs WHERE id <= 500;
CREATE INDEX vf_temp_idx ON vf_temp USING gpuir (body);
INSERT INTO vf_temp VALUES (9001, 'temp row');
SELECT gpuir_verify('vf_temp_idx');
CREATE UNLOGGED TABLE vf_unlogged AS SELECT * FROM vf_docs WHERE id <= 500;
CREATE INDEX vf_unlogged_idx ON vf_unlogged USING gpuir (body);
DELETE FROM vf_unlogged WHERE id % 3 = 0;
VACUUM vf_unlogged;
SELECT gpuir_verify('vf_unlogged_idx');

-- not a gpuir index: 42809 (wrong_object_type), for a table and a btree index
DO $$
DECLARE
  r regclass;
BEGIN
  FOREACH r IN ARRAY ARRAY['vf_docs'::regclass, 'vf_docs_pkey'::regclass] LOOP
    BEGIN
      PERFORM gpuir_verify(r);
      RAISE NOTICE '%: no error', r;
    EXCEPTION WHEN wrong_object_type THEN
      RAISE NOTICE '%: SQLSTATE %', r, SQLSTATE;
    END;
  END LOOP;
END
$$;
SELECT gpuir_verify(NULL);

-- superusers only unless granted, like amcheck
SELECT has_function_privilege('public', 'gpuir_verify(regclass)', 'execute') AS public_can_execute;

DROP TABLE vf_docs, vf_empty, vf_temp, vf_unlogged;

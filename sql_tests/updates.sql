--
-- updates: INSERT, UPDATE, DELETE + VACUUM, gpuir_merge, auto-merge, REINDEX.
-- After each step the index must answer exactly like a gpuir index freshly
-- built on the same table (same ctids, same scores), and must never return
-- a dead row, even before VACUUM.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;

CREATE TABLE up_vocab (wi int PRIMARY KEY, w text NOT NULL);
INSERT INTO up_vocab
SELECT ord, w FROM unnest(string_to_array(
  'apple bread cheese dough eagle flame grape honey island jungle kettle '
  'lemon mango needle olive pepper quilt radish salmon tiger violet wagon '
  'yacht zebra anchor basket candle desert engine fabric', ' '))
  WITH ORDINALITY AS v(w, ord);

-- up_doc(n): a deterministic pseudo-random document of n words (skewed)
CREATE FUNCTION up_doc(n int) RETURNS text LANGUAGE sql VOLATILE AS $$
  SELECT string_agg(a.v[1 + floor(30 * power(random(), 2.0))::int], ' ')
  FROM generate_series(1, n) g, (SELECT array_agg(w ORDER BY wi) AS v FROM up_vocab) a
$$;

SELECT setseed(0.5);
-- fillfactor 50 leaves room for HOT updates
CREATE TABLE up_docs (id int PRIMARY KEY, tag int NOT NULL DEFAULT 0, body text)
  WITH (fillfactor = 50, autovacuum_enabled = off);
INSERT INTO up_docs (id, body)
SELECT i, CASE WHEN i % 50 = 7 THEN NULL ELSE up_doc(1 + (i * 7) % 23) END
FROM generate_series(1, 600) i;
CREATE INDEX up_idx ON up_docs USING gpuir (body) WITH (text_config = 'english');

CREATE TABLE up_queries (q text NOT NULL);
INSERT INTO up_queries VALUES ('apple'), ('cheese honey'), ('tiger zebra anchor'),
  ('fabric'), ('engine desert candle basket'), ('apple bread cheese dough eagle'),
  ('freshword'), ('updatedword apple'), ('oldword'), ('xylophone bread');

-- up_compare(): builds a fresh gpuir index on up_docs, and counts the
-- (query, mode, k) whose results differ between up_idx and the fresh index
-- (row order and ctids must be identical, scores equal within 1e-5)
CREATE FUNCTION up_compare()
RETURNS TABLE (searches bigint, result_rows bigint, mismatches bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  CREATE INDEX up_fresh ON up_docs USING gpuir (body) WITH (text_config = 'english');
  RETURN QUERY
  WITH g AS (SELECT q.q, m.mode, kk.k FROM up_queries q,
               unnest(ARRAY['and', 'or', 'wand', 'bmw', 'and_or']) m(mode),
               unnest(ARRAY[1, 5, 30, 1000]) kk(k)),
  a AS (SELECT g.q, g.mode, g.k, s.n, s.ctid, s.score FROM g,
          LATERAL gpuir_search('up_idx', g.q, g.k, g.mode) WITH ORDINALITY s(ctid, score, n)),
  b AS (SELECT g.q, g.mode, g.k, s.n, s.ctid, s.score FROM g,
          LATERAL gpuir_search('up_fresh', g.q, g.k, g.mode) WITH ORDINALITY s(ctid, score, n)),
  bad AS (SELECT DISTINCT coalesce(a.q, b.q), coalesce(a.mode, b.mode), coalesce(a.k, b.k)
          FROM a FULL JOIN b ON (a.q, a.mode, a.k, a.n) = (b.q, b.mode, b.k, b.n)
          WHERE a.ctid IS DISTINCT FROM b.ctid
             OR NOT abs(a.score - b.score) <= 1e-5 * abs(b.score))
  SELECT (SELECT count(*) FROM g), (SELECT count(*) FROM a), (SELECT count(*) FROM bad);
  DROP INDEX up_fresh;
END $$;

-- up_dead(): rows returned by any mode that are not visible rows of up_docs
-- (must be 0), and rows returned twice in one result (must be 0)
CREATE FUNCTION up_dead()
RETURNS TABLE (returned bigint, not_visible bigint, duplicates bigint)
LANGUAGE sql AS $$
  WITH r AS (SELECT q.q, m.mode, s.ctid FROM up_queries q,
               unnest(ARRAY['and', 'or', 'wand', 'bmw', 'and_or']) m(mode),
               LATERAL gpuir_search('up_idx', q.q, 100000, m.mode) s)
  SELECT count(*),
         count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM up_docs d WHERE d.ctid = r.ctid)),
         count(*) - (SELECT count(*) FROM (SELECT DISTINCT * FROM r) x)
  FROM r
$$;

-- ids found for a query (all modes must agree; shown once for 'or')
CREATE FUNCTION up_ids(query text, mode text DEFAULT 'or')
RETURNS int[] LANGUAGE sql AS $$
  SELECT array_agg(d.id ORDER BY d.id)
  FROM gpuir_search('up_idx', query, 100000, mode) s JOIN up_docs d ON d.ctid = s.ctid
$$;

-- 0. freshly built
SELECT * FROM up_compare();

-- 1. INSERT (rows go to the insert buffer) are found at once
INSERT INTO up_docs (id, body)
SELECT i, up_doc(1 + i % 17) FROM generate_series(601, 800) i;
INSERT INTO up_docs (id, body) VALUES
  (801, 'freshword apple'), (802, NULL), (803, ''), (804, 'the of and'),
  (805, 'oldword oldword cheese'), (806, 'oldword bread');
SELECT up_ids('freshword') AS freshword, up_ids('oldword') AS oldword,
       up_ids('freshword', 'bmw') AS freshword_bmw, up_ids('oldword', 'and') AS oldword_and;
SELECT (gpuir_index_info('up_idx')).buffer_docs > 0 AS buffer_used;
SELECT * FROM up_dead();
SELECT * FROM up_compare();

-- rows of an aborted transaction are never returned; own uncommitted rows are
BEGIN;
INSERT INTO up_docs (id, body) VALUES (901, 'txnword apple'), (902, 'txnword txnword');
SELECT up_ids('txnword') AS txnword_in_txn;
ROLLBACK;
SELECT up_ids('txnword') AS txnword_after_rollback, up_ids('txnword', 'bmw') AS bmw;
SELECT * FROM up_dead();

-- 2. UPDATE of the indexed column: old versions never returned, new ones found
UPDATE up_docs SET body = 'updatedword ' || body WHERE id % 40 = 1;
UPDATE up_docs SET body = 'replaced text' WHERE id IN (805, 806);
SELECT up_ids('oldword') AS oldword, up_ids('updatedword') AS updatedword,
       up_ids('replaced', 'wand') AS replaced;
SELECT * FROM up_dead();
VACUUM up_docs;
SELECT * FROM up_dead();
SELECT * FROM up_compare();

-- 3. HOT update (indexed column unchanged): the returned ctid is the live version
UPDATE up_docs SET tag = tag + 1 WHERE id % 3 = 0;
SELECT count(*) AS hot_updated FROM up_docs WHERE tag = 1;
SELECT * FROM up_dead();
SELECT up_ids('freshword') AS freshword, (SELECT count(*) FROM unnest(up_ids('apple'))) =
       (SELECT count(*) FROM up_docs WHERE to_tsvector('english', body) @@ 'appl') AS apple_all_found;
SELECT * FROM up_compare();

-- 4. DELETE: deleted rows disappear at once, statistics exact after VACUUM
DELETE FROM up_docs WHERE id % 5 = 2 OR id = 801;
SELECT up_ids('freshword') AS freshword;
SELECT * FROM up_dead();
VACUUM up_docs;
SELECT * FROM up_dead();
SELECT * FROM up_compare();
SELECT i.docs = (SELECT count(*) FROM up_docs WHERE to_tsvector('english', body) <> '') AS docs_ok
FROM gpuir_index_info('up_idx') i;

-- 5. gpuir_merge folds everything into one segment
SELECT gpuir_merge('up_idx');
SELECT segments, buffer_docs, deleted_docs,
       docs = (SELECT count(*) FROM up_docs WHERE to_tsvector('english', body) <> '') AS docs_ok
FROM gpuir_index_info('up_idx');
SELECT * FROM up_dead();
SELECT * FROM up_compare();

-- 6. many inserts crossing gpuir.insert_buffer_limit trigger auto-merges
SET gpuir.insert_buffer_limit = 64;
SELECT name, setting, unit FROM pg_settings WHERE name = 'gpuir.insert_buffer_limit';
INSERT INTO up_docs (id, body)
SELECT i, up_doc(5 + i % 20) FROM generate_series(10001, 14000) i;
SELECT buffer_docs < 4000 AS auto_merged,
       docs = (SELECT count(*) FROM up_docs WHERE to_tsvector('english', body) <> '') AS docs_ok
FROM gpuir_index_info('up_idx');
SELECT * FROM up_dead();
SELECT * FROM up_compare();

-- 7. deletes spread over segments and buffer, then VACUUM, merge, REINDEX
DELETE FROM up_docs WHERE id % 7 = 0;
SELECT * FROM up_dead();
VACUUM up_docs;
SELECT * FROM up_compare();
INSERT INTO up_docs (id, body) SELECT i, up_doc(3 + i % 9) FROM generate_series(20001, 20050) i;
SELECT * FROM up_compare();
REINDEX INDEX up_idx;
SELECT segments, buffer_docs, deleted_docs FROM gpuir_index_info('up_idx');
SELECT * FROM up_dead();
SELECT * FROM up_compare();
RESET gpuir.insert_buffer_limit;

-- 8. everything deleted
DELETE FROM up_docs;
SELECT * FROM up_dead();
VACUUM up_docs;
SELECT docs, buffer_docs FROM gpuir_index_info('up_idx');
SELECT count(*) AS rows FROM gpuir_search('up_idx', 'apple', 10, 'or');
INSERT INTO up_docs (id, body) VALUES (1, 'apple pie');
SELECT * FROM up_compare();

-- 9. TRUNCATE empties the index
INSERT INTO up_docs (id, body) SELECT i, up_doc(4) FROM generate_series(2, 50) i;
TRUNCATE up_docs;
SELECT docs, buffer_docs, segments FROM gpuir_index_info('up_idx');
SELECT count(*) AS rows FROM gpuir_search('up_idx', 'apple', 10, 'or');
INSERT INTO up_docs (id, body) VALUES (1, 'apple pie'), (2, 'apple'), (3, 'pie crust');
SELECT * FROM up_compare();

DROP TABLE up_docs, up_queries, up_vocab;
DROP FUNCTION up_doc(int);
DROP FUNCTION up_compare();
DROP FUNCTION up_dead();
DROP FUNCTION up_ids(text, text);

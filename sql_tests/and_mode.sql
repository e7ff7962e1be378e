--
-- and_mode: mode 'and' returns only rows holding every query lexeme, and all
-- of them when k is large enough (checked against tsvector @@ plainto_tsquery);
-- 'and_or' is 'and' when that gives k rows, else 'or'.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;

CREATE TABLE am_docs (id int NOT NULL, body text) WITH (autovacuum_enabled = off);
INSERT INTO am_docs
SELECT i, concat_ws(' ',
         CASE WHEN i % 2 = 0 THEN 'alpha' END,
         CASE WHEN i % 3 = 0 THEN 'bravo bravo' END,
         CASE WHEN i % 5 = 0 THEN 'charlie' END,
         CASE WHEN i % 7 = 0 THEN 'delta' END,
         CASE WHEN i % 11 = 0 THEN 'echoes' END,
         CASE WHEN i % 13 = 0 THEN 'the' END,
         repeat('foxtrot ', i % 4),
         CASE WHEN i % 17 = 0 THEN 'golf' END,
         CASE WHEN i % 19 = 0 THEN NULL ELSE 'hotel' || (i % 9) END)
FROM generate_series(1, 2000) i;
INSERT INTO am_docs VALUES (2001, NULL), (2002, ''), (2003, 'the and of');
CREATE INDEX am_idx ON am_docs USING gpuir (body) WITH (text_config = 'english');

CREATE TABLE am_queries (qid int PRIMARY KEY, q text NOT NULL);
INSERT INTO am_queries VALUES
  (1, 'alpha'), (2, 'alpha bravo'), (3, 'alpha bravo charlie'),
  (4, 'alpha bravo charlie delta'), (5, 'bravo delta echo'),
  (6, 'the alpha and bravo'), (7, 'Alpha ALPHA alpha'),
  (8, 'alpha xylophone'), (9, 'golf echoes delta'), (10, 'charlie foxtrot'),
  (11, 'alpha bravo charlie delta echo golf'), (12, 'hotel3 bravo'),
  (13, 'delta hotel0 golf');

-- per query: rows matching by tsvector @@ plainto_tsquery, rows returned by
-- 'and' with k = 10 and k = 100000, returned rows that do not match (must be
-- 0), whether the large-k result is exactly the matching set, whether scores
-- are non-increasing, and whether 'and_or' behaves as specified (k = 10, 50)
CREATE FUNCTION am_report()
RETURNS TABLE (qid int, matches bigint, and_k10 bigint, and_all bigint,
               not_matching bigint, same_set boolean, sorted boolean, and_or_ok boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT q.qid,
    (SELECT count(*) FROM am_docs d
      WHERE to_tsvector('english', d.body) @@ plainto_tsquery('english', q.q)),
    (SELECT count(*) FROM gpuir_search('am_idx', q.q, 10, 'and')),
    (SELECT count(*) FROM gpuir_search('am_idx', q.q, 100000, 'and')),
    (SELECT count(*) FROM gpuir_search('am_idx', q.q, 100000, 'and') s
      WHERE NOT EXISTS (SELECT 1 FROM am_docs d WHERE d.ctid = s.ctid
                          AND to_tsvector('english', d.body) @@ plainto_tsquery('english', q.q)))
    + (SELECT count(*) FROM gpuir_search('am_idx', q.q, 10, 'and') s
      WHERE NOT EXISTS (SELECT 1 FROM am_docs d WHERE d.ctid = s.ctid
                          AND to_tsvector('english', d.body) @@ plainto_tsquery('english', q.q))),
    ARRAY(SELECT s.ctid FROM gpuir_search('am_idx', q.q, 100000, 'and') s ORDER BY s.ctid)
      = ARRAY(SELECT d.ctid FROM am_docs d
              WHERE to_tsvector('english', d.body) @@ plainto_tsquery('english', q.q)
              ORDER BY d.ctid),
    (SELECT bool_and(x.score <= x.prev) IS NOT FALSE
       FROM (SELECT s.score, lag(s.score) OVER (ORDER BY s.n) AS prev
             FROM gpuir_search('am_idx', q.q, 100000, 'and') WITH ORDINALITY s(ctid, score, n)) x),
    (SELECT bool_and(
       ARRAY(SELECT row(s.ctid, s.score)::text FROM gpuir_search('am_idx', q.q, kk, 'and_or') WITH ORDINALITY s(ctid, score, n) ORDER BY s.n)
       = CASE WHEN (SELECT count(*) FROM gpuir_search('am_idx', q.q, kk, 'and')) >= kk
              THEN ARRAY(SELECT row(s.ctid, s.score)::text FROM gpuir_search('am_idx', q.q, kk, 'and') WITH ORDINALITY s(ctid, score, n) ORDER BY s.n)
              ELSE ARRAY(SELECT row(s.ctid, s.score)::text FROM gpuir_search('am_idx', q.q, kk, 'or') WITH ORDINALITY s(ctid, score, n) ORDER BY s.n) END)
     FROM unnest(ARRAY[10, 50]) kk)
  FROM am_queries q ORDER BY q.qid;
END $$;

-- the top 'and' rows for 'alpha bravo' are multiples of 6
SELECT bool_and(d.id % 6 = 0) AS all_multiples_of_6, count(*)
FROM gpuir_search('am_idx', 'alpha bravo', 50, 'and') s JOIN am_docs d ON d.ctid = s.ctid;

SELECT * FROM am_report();

-- rows in the insert buffer, and dead rows (before and after VACUUM)
INSERT INTO am_docs
SELECT i, concat_ws(' ', CASE WHEN i % 2 = 0 THEN 'alpha' END,
                    CASE WHEN i % 3 = 0 THEN 'bravo' END,
                    CASE WHEN i % 5 = 0 THEN 'charlie delta' END, 'golf')
FROM generate_series(3001, 3120) i;
DELETE FROM am_docs WHERE id % 10 = 4;
SELECT * FROM am_report();
VACUUM am_docs;
SELECT * FROM am_report();
SELECT gpuir_merge('am_idx');
SELECT * FROM am_report();

DROP TABLE am_docs, am_queries;
DROP FUNCTION am_report();

--
-- filter: gpuir_search(index, query, k, mode, filter tid[]) returns the k
-- best rows among those whose ctid the filter holds, exact at any
-- selectivity (100% down to one row): compared with the unfiltered ranking
-- of every matching row, filtered afterwards, for every mode, text and
-- tsquery queries, after deletes too.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;

SELECT setseed(0.3);
CREATE TABLE fl_docs (id int PRIMARY KEY, cat int, body text) WITH (autovacuum_enabled = off);
INSERT INTO fl_docs
SELECT i, i % 1000, (SELECT string_agg('w' || (1 + floor(50 * power(random(), 2)))::int, ' ')
                     FROM generate_series(1, 3 + i % 10) g WHERE g > i * 0)
FROM generate_series(1, 20000) i;
CREATE INDEX fl_idx ON fl_docs USING gpuir (body) WITH (text_config = 'english');

-- filters from 100% of the rows down to one row; queries text and tsquery
CREATE TABLE fl_filters (fid int, pred text);
INSERT INTO fl_filters VALUES (1, 'true'), (2, 'cat < 100'), (3, 'cat < 10'), (4, 'cat = 7'),
  (5, 'id = 4242'), (6, 'cat = 7 AND id > 15000'), (7, 'false');
CREATE TABLE fl_queries (qid int, qtext text, qts tsquery);
INSERT INTO fl_queries VALUES (1, 'w1 w2', NULL), (2, 'w3 w40 w49', NULL), (3, 'w50', NULL),
  (4, NULL, to_tsquery('english', 'w1 & !w2')), (5, NULL, to_tsquery('english', 'w3 <-> w4 | w5'));

CREATE FUNCTION fl_check(k int) RETURNS TABLE (fid int, rows_passing bigint, mismatched_queries bigint)
LANGUAGE plpgsql AS $$
DECLARE f record; q record; m text; got text; want text; bad bigint; npass bigint;
BEGIN
  FOR f IN SELECT * FROM fl_filters ORDER BY 1 LOOP
    bad := 0;
    EXECUTE format('SELECT count(*) FROM fl_docs WHERE %s', f.pred) INTO npass;
    FOR q IN SELECT * FROM fl_queries ORDER BY 1 LOOP
      -- the reference (the same for every mode): every matching row ranked,
      -- then filtered
      IF q.qtext IS NOT NULL THEN
        EXECUTE format($f$SELECT string_agg(x.ctid || ':' || x.score, ' ' ORDER BY x.score DESC, x.ctid)
                         FROM (SELECT s.ctid, s.score FROM gpuir_search('fl_idx', %L, 100000, 'or') s
                               JOIN fl_docs d ON d.ctid = s.ctid WHERE %s
                               ORDER BY s.score DESC, s.ctid LIMIT %s) x$f$,
                       q.qtext, f.pred, k) INTO want;
      ELSE
        EXECUTE format($f$SELECT string_agg(x.ctid || ':' || x.score, ' ' ORDER BY x.score DESC, x.ctid)
                         FROM (SELECT s.ctid, s.score FROM gpuir_search('fl_idx', %L::tsquery, 100000, 'or') s
                               JOIN fl_docs d ON d.ctid = s.ctid WHERE %s
                               ORDER BY s.score DESC, s.ctid LIMIT %s) x$f$,
                       q.qts, f.pred, k) INTO want;
      END IF;
      FOREACH m IN ARRAY '{or,wand,bmw}'::text[] LOOP
        IF q.qtext IS NOT NULL THEN
          EXECUTE format($f$SELECT string_agg(s.ctid || ':' || s.score, ' ')
                           FROM gpuir_search('fl_idx', %L, %s, %L, ARRAY(SELECT ctid FROM fl_docs WHERE %s)) s$f$,
                         q.qtext, k, m, f.pred) INTO got;
        ELSE
          EXECUTE format($f$SELECT string_agg(s.ctid || ':' || s.score, ' ')
                           FROM gpuir_search('fl_idx', %L::tsquery, %s, %L, ARRAY(SELECT ctid FROM fl_docs WHERE %s)) s$f$,
                         q.qts, k, m, f.pred) INTO got;
        END IF;
        IF got IS DISTINCT FROM want THEN bad := bad + 1; END IF;
      END LOOP;
    END LOOP;
    fid := f.fid; rows_passing := npass; mismatched_queries := bad;
    RETURN NEXT;
  END LOOP;
END $$;

SELECT * FROM fl_check(10);
SELECT * FROM fl_check(100) WHERE mismatched_queries > 0;
DELETE FROM fl_docs WHERE id % 3 = 0;
VACUUM fl_docs;
SELECT * FROM fl_check(10) WHERE mismatched_queries > 0;

-- the filter holds the visible row version's ctid: an updated row is found by its new one
UPDATE fl_docs SET body = body || ' w1' WHERE id = 4244;
SELECT count(*) FROM gpuir_search('fl_idx', 'w1', 10, 'bmw', ARRAY(SELECT ctid FROM fl_docs WHERE id = 4244));
-- NULL elements are ignored; an empty filter and a NULL one give no rows
SELECT count(*) FROM gpuir_search('fl_idx', 'w1', 10, 'bmw', ARRAY[NULL::tid, (SELECT ctid FROM fl_docs WHERE id = 4244)]);
SELECT count(*) FROM gpuir_search('fl_idx', 'w1', 10, 'bmw', '{}');
SELECT count(*) FROM gpuir_search('fl_idx', 'w1', 10, 'bmw', NULL);
SELECT count(*) FROM gpuir_search('fl_idx', 'w1', 10, 'bmw', '{{"(0,1)"}}');
DROP TABLE fl_docs, fl_filters, fl_queries;

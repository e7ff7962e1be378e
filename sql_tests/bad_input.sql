--
-- bad_input: NULL / empty / huge documents, extreme tf, empty and unknown
-- queries, invalid arguments (SQLSTATE shown), non-ASCII text.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;
SELECT getdatabaseencoding();

CREATE TABLE bi_docs (id int PRIMARY KEY, body text);
INSERT INTO bi_docs VALUES
  (1, NULL), (2, ''), (3, '   '), (4, 'the of and a'), (5, '!!! ??? ...'),
  (6, 'apple banana'), (7, 'banana cherry'), (8, 'apple apple cherry'),
  (9, NULL), (10, 'cherry');
CREATE INDEX bi_idx ON bi_docs USING gpuir (body) WITH (text_config = 'english');
-- NULL, empty and stopword-only rows are not indexed
SELECT docs, buffer_docs FROM gpuir_index_info('bi_idx');
INSERT INTO bi_docs VALUES (11, NULL), (12, ''), (13, 'an of'), (14, 'apple');
SELECT docs FROM gpuir_index_info('bi_idx');

-- empty, blank, punctuation-only and stopword-only queries: no rows, no error
SELECT m.mode, q.q, (SELECT count(*) FROM gpuir_search('bi_idx', q.q, 10, m.mode)) AS rows
FROM unnest(ARRAY['and', 'or', 'wand', 'bmw', 'and_or']) WITH ORDINALITY m(mode, mn),
     unnest(ARRAY['', '   ', 'the of and', '?!.,;']) WITH ORDINALITY q(q, qn)
ORDER BY m.mn, q.qn;
-- NULL arguments: no rows
SELECT count(*) FROM gpuir_search('bi_idx', NULL);
SELECT count(*) FROM gpuir_search('bi_idx', 'apple', NULL);

-- unknown words contribute nothing
SELECT m.mode,
       (SELECT count(*) FROM gpuir_search('bi_idx', 'qwertyuiop', 10, m.mode)) AS unknown_rows,
       ARRAY(SELECT row(ctid, score)::text FROM gpuir_search('bi_idx', 'qwertyuiop cherry', 10, m.mode))
         = ARRAY(SELECT row(ctid, score)::text FROM gpuir_search('bi_idx', 'cherry', 10, m.mode))
         AS same_as_known_only
FROM unnest(ARRAY['or', 'wand', 'bmw']) m(mode);
-- with 'and', a query lexeme found nowhere matches no row
SELECT count(*) AS and_rows FROM gpuir_search('bi_idx', 'qwertyuiop cherry', 10, 'and');

-- k limits
\set VERBOSITY sqlstate
SELECT count(*) FROM gpuir_search('bi_idx', 'apple', 0);
SELECT count(*) FROM gpuir_search('bi_idx', 'apple', -1);
SELECT count(*) FROM gpuir_search('bi_idx', 'apple', 100001);
SELECT count(*) FROM gpuir_search('bi_idx', 'apple', 100001, 'and');
SELECT count(*) FROM gpuir_search('bi_idx', 'apple', 100000);
SELECT count(*) FROM gpuir_search('bi_idx', 'apple', 1);
-- unknown mode
SELECT count(*) FROM gpuir_search('bi_idx', 'apple', 10, 'fast');
SELECT count(*) FROM gpuir_search('bi_idx', 'apple', 10, '');
-- not a gpuir index
CREATE INDEX bi_btree ON bi_docs (body);
SELECT count(*) FROM gpuir_search('bi_btree', 'apple');
SELECT count(*) FROM gpuir_search('bi_docs', 'apple');
SELECT count(*) FROM gpuir_search('bi_docs_pkey', 'apple');
SELECT gpuir_merge('bi_btree');
SELECT docs FROM gpuir_index_info('bi_btree');
SELECT docs FROM gpuir_index_info('bi_docs');
SELECT count(*) FROM gpuir_search('no_such_index', 'apple');
-- bad index options
CREATE INDEX bi_bad ON bi_docs USING gpuir (body) WITH (text_config = 'nope');
CREATE INDEX bi_bad ON bi_docs USING gpuir (body) WITH (k1 = -1);
CREATE INDEX bi_bad ON bi_docs USING gpuir (body) WITH (b = 1.5);
CREATE INDEX bi_bad ON bi_docs USING gpuir (body) WITH (b = -0.1);
CREATE INDEX bi_bad ON bi_docs USING gpuir (body) WITH (nosuchoption = 1);
CREATE INDEX bi_bad ON bi_docs USING gpuir (id);
SELECT count(*) FROM pg_class WHERE relname = 'bi_bad';
\set VERBOSITY default

-- the index's text_config is used, not the session default
SET default_text_search_config = 'simple';
SELECT count(*) AS stemmed_match FROM gpuir_search('bi_idx', 'apples', 10, 'or');
RESET default_text_search_config;

-- the index depends on its text search configuration: dropping it fails
-- (2BP01) unless CASCADE, which drops the index too; REINDEX keeps one record
CREATE TEXT SEARCH CONFIGURATION bi_cfg (COPY = english);
CREATE INDEX bi_cfg_idx ON bi_docs USING gpuir (body) WITH (text_config = 'public.bi_cfg');
REINDEX INDEX bi_cfg_idx;
SELECT count(*) AS cfg_dependencies FROM pg_depend
WHERE objid = 'bi_cfg_idx'::regclass AND refclassid = 'pg_ts_config'::regclass;
\set VERBOSITY terse
DROP TEXT SEARCH CONFIGURATION bi_cfg;
\set VERBOSITY default
SELECT count(*) AS still_there FROM gpuir_search('bi_cfg_idx', 'apples', 10, 'or');
DROP TEXT SEARCH CONFIGURATION bi_cfg CASCADE;
SELECT count(*) AS index_dropped FROM pg_class WHERE relname = 'bi_cfg_idx';

-- a document with one term repeated 5000 times: tf is not capped, and the
-- scores follow the formula (N = 4, dl = 5000, 2, 3, 1, avgdl = 5006 / 4)
CREATE TABLE bi_tf (id int, body text);
INSERT INTO bi_tf VALUES (1, repeat('zyzzyva ', 5000)), (2, 'zyzzyva apple'),
  (3, 'apple banana cherry'), (4, NULL), (5, 'banana');
CREATE INDEX bi_tf_idx ON bi_tf USING gpuir (body) WITH (text_config = 'english');
SELECT docs FROM gpuir_index_info('bi_tf_idx');
WITH e AS (
  SELECT 1 AS id, ln(1 + (4 - 2 + 0.5) / (2 + 0.5)) * 5000 * 2.2
                  / (5000 + 1.2 * (0.25 + 0.75 * 5000 / (5006 / 4.0))) AS expected
  UNION ALL
  SELECT 2, ln(1 + (4 - 2 + 0.5) / (2 + 0.5)) * 1 * 2.2
            / (1 + 1.2 * (0.25 + 0.75 * 2 / (5006 / 4.0))))
SELECT m.mode, t.id, abs(s.score - e.expected) < 1e-4 * e.expected AS score_ok
FROM unnest(ARRAY['or', 'and', 'bmw']) m(mode),
     LATERAL gpuir_search('bi_tf_idx', 'zyzzyva', 10, m.mode) s
     JOIN bi_tf t ON t.ctid = s.ctid JOIN e ON e.id = t.id
ORDER BY 1, s.score DESC;

-- a 2 MB document (400001 tokens): indexed whole, dl not capped
CREATE TABLE bi_big (id int, body text);
INSERT INTO bi_big VALUES
  (1, repeat('lorem ipsum dolor sit amet ', 80000) || 'needlework'),
  (2, 'lorem needlework'), (3, 'ipsum');
SELECT id, octet_length(body) > 2000000 AS over_2mb FROM bi_big ORDER BY id;
CREATE INDEX bi_big_idx ON bi_big USING gpuir (body) WITH (text_config = 'english');
-- N = 3, dl = 400001, 2, 1
WITH e AS (
  SELECT 1 AS id, ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) * 2.2
                  / (1 + 1.2 * (0.25 + 0.75 * 400001 / (400004 / 3.0))) AS expected
  UNION ALL
  SELECT 2, ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) * 2.2
            / (1 + 1.2 * (0.25 + 0.75 * 2 / (400004 / 3.0))))
SELECT t.id, abs(s.score - e.expected) < 1e-4 * e.expected AS score_ok
FROM gpuir_search('bi_big_idx', 'needlework', 10, 'or') s
     JOIN bi_big t ON t.ctid = s.ctid JOIN e ON e.id = t.id
ORDER BY s.score DESC;
-- tf = 80000 for 'amet' (df = 1)
SELECT t.id, abs(s.score - ln(1 + (3 - 1 + 0.5) / (1 + 0.5)) * 80000 * 2.2
                 / (80000 + 1.2 * (0.25 + 0.75 * 400001 / (400004 / 3.0))))
             < 1e-4 * s.score AS score_ok
FROM gpuir_search('bi_big_idx', 'amet', 10, 'bmw') s JOIN bi_big t ON t.ctid = s.ctid;
-- the same document arriving through the insert buffer
INSERT INTO bi_big VALUES (4, 'needlework ' || repeat('sit amet ', 100000));
SELECT t.id FROM gpuir_search('bi_big_idx', 'needlework', 10, 'or') s
  JOIN bi_big t ON t.ctid = s.ctid ORDER BY s.score DESC, s.ctid;
SELECT gpuir_merge('bi_big_idx');
SELECT t.id FROM gpuir_search('bi_big_idx', 'needlework', 10, 'and') s
  JOIN bi_big t ON t.ctid = s.ctid ORDER BY s.score DESC, s.ctid;

-- non-ASCII text
CREATE TABLE bi_intl (id int, body text);
INSERT INTO bi_intl VALUES
  (1, 'Die Häuser von Müller, Grüße aus Köln'),
  (2, 'Москва — столица России'),
  (3, 'party 🎉 time 😀 naïve café'),
  (4, 'Straße und Gärten'),
  (5, 'В Москве много парков'),
  (6, '🎉🎉🎉'),
  (7, '日本語のテキスト');
CREATE INDEX bi_intl_en ON bi_intl USING gpuir (body) WITH (text_config = 'english');
CREATE INDEX bi_intl_de ON bi_intl USING gpuir (body) WITH (text_config = 'german');
CREATE INDEX bi_intl_ru ON bi_intl USING gpuir (body) WITH (text_config = 'russian');
CREATE FUNCTION bi_ids(idx regclass, q text) RETURNS int[] LANGUAGE sql AS $$
  SELECT array_agg(t.id ORDER BY t.id)
  FROM gpuir_search(idx, q, 100, 'or') s JOIN bi_intl t ON t.ctid = s.ctid
$$;
SELECT bi_ids('bi_intl_en', 'Grüße') AS en_gruesse, bi_ids('bi_intl_en', 'müller') AS en_mueller,
       bi_ids('bi_intl_en', 'straße') AS en_strasse, bi_ids('bi_intl_en', 'café naïve') AS en_cafe;
SELECT bi_ids('bi_intl_de', 'Haus') AS de_haus, bi_ids('bi_intl_de', 'Garten') AS de_garten,
       bi_ids('bi_intl_de', 'Grüße') AS de_gruesse;
SELECT bi_ids('bi_intl_ru', 'Москвы') AS ru_moskva, bi_ids('bi_intl_ru', 'столицы') AS ru_stolica,
       bi_ids('bi_intl_ru', 'парк') AS ru_park;
SELECT bi_ids('bi_intl_en', 'party') AS en_party;
-- whatever the parser makes of emoji and CJK, the index agrees with to_tsvector
SET client_min_messages = warning;
SELECT q,
       coalesce(cardinality(bi_ids('bi_intl_en', q)), 0)
       = (SELECT count(*) FROM bi_intl
          WHERE to_tsvector('english', body) @@ plainto_tsquery('english', q)) AS agrees
FROM unnest(ARRAY['🎉', '😀 party', '日本語のテキスト', 'テキスト']) q;
RESET client_min_messages;

-- a varchar column
CREATE TABLE bi_vc (id int, body varchar(100));
INSERT INTO bi_vc VALUES (1, 'walrus tusk'), (2, 'walrus'), (3, NULL);
CREATE INDEX bi_vc_idx ON bi_vc USING gpuir (body) WITH (text_config = 'english');
SELECT t.id FROM gpuir_search('bi_vc_idx', 'walrus tusks', 10, 'or') s
  JOIN bi_vc t ON t.ctid = s.ctid ORDER BY s.score DESC;
SET enable_seqscan = off;
SELECT id FROM bi_vc ORDER BY body <@> 'walrus tusks' LIMIT 1;
RESET enable_seqscan;

DROP TABLE bi_docs, bi_tf, bi_big, bi_intl, bi_vc;
DROP FUNCTION bi_ids(regclass, text);

-- privileges and row-level security: the gpuir functions reveal rows, scores
-- and statistics of the indexed table, so they need SELECT on it (or on the
-- indexed column), 42501 otherwise; and they refuse a table whose row-level
-- security policies apply to the caller (42501), since only the planner's
-- path (ORDER BY col <@> q) filters rows by the policies
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuir;
RESET client_min_messages;
CREATE TABLE priv_docs (id int, owner_name text, body text, secret text);
INSERT INTO priv_docs VALUES
	(1, 'alice', 'the river runs under the old stone bridge', 's1'),
	(2, 'bob', 'a river of stone and a river of light', 's2'),
	(3, 'alice', 'stone walls and a quiet garden', 's3'),
	(4, 'bob', 'light over the river at dawn', 's4');
CREATE INDEX priv_idx ON priv_docs USING gpuir (body) WITH (text_config = 'english');
CREATE ROLE regress_gpuir_reader;
GRANT USAGE ON SCHEMA public TO regress_gpuir_reader;

\set VERBOSITY terse
-- no privilege on the table: every function that reads it is refused
SET ROLE regress_gpuir_reader;
SELECT * FROM gpuir_search('priv_idx', 'river', 10, 'or');
SELECT * FROM gpuir_search_batch('priv_idx', ARRAY['river'], 10, 'or');
SELECT * FROM gpuir_query_terms('priv_idx', 'river');
SELECT docs FROM gpuir_index_info('priv_idx');
SELECT id FROM priv_docs ORDER BY body <@> 'river' LIMIT 2;
SELECT gpuir_verify('priv_idx');
SELECT gpuir_merge('priv_idx');
RESET ROLE;

-- SELECT on another column only: still refused
GRANT SELECT (id) ON priv_docs TO regress_gpuir_reader;
SET ROLE regress_gpuir_reader;
SELECT * FROM gpuir_search('priv_idx', 'river', 10, 'or');
RESET ROLE;

-- SELECT on the indexed column is enough (as for pg_stats)
GRANT SELECT (body) ON priv_docs TO regress_gpuir_reader;
SET ROLE regress_gpuir_reader;
SELECT count(*) AS hits FROM gpuir_search('priv_idx', 'river', 10, 'or');
SELECT lexeme, df FROM gpuir_query_terms('priv_idx', 'river stone');
SELECT docs FROM gpuir_index_info('priv_idx');
RESET ROLE;
REVOKE SELECT (id, body) ON priv_docs FROM regress_gpuir_reader;

-- row-level security: the functions refuse; the ORDER BY form returns only
-- the rows the policy lets the role see
GRANT SELECT ON priv_docs TO regress_gpuir_reader;
ALTER TABLE priv_docs ENABLE ROW LEVEL SECURITY;
CREATE POLICY priv_alice ON priv_docs FOR SELECT TO regress_gpuir_reader
	USING (owner_name = 'alice');
SET ROLE regress_gpuir_reader;
SELECT * FROM gpuir_search('priv_idx', 'river', 10, 'or');
SELECT * FROM gpuir_search_batch('priv_idx', ARRAY['river'], 10, 'or');
SELECT * FROM gpuir_query_terms('priv_idx', 'river');
SELECT docs FROM gpuir_index_info('priv_idx');
-- (a 4-row table: the index scan must be forced)
SET enable_seqscan = off;
SELECT id, owner_name FROM priv_docs ORDER BY body <@> 'river stone' LIMIT 10;
RESET ROLE;
-- gpuir.rank_under_rls = off (superuser-set) refuses to rank under policies,
-- whose scores use statistics of the hidden rows too; not for the owner
SET gpuir.rank_under_rls = off;
SET ROLE regress_gpuir_reader;
SET gpuir.rank_under_rls = on;
SELECT id, owner_name FROM priv_docs ORDER BY body <@> 'river stone' LIMIT 10;
RESET ROLE;
SELECT count(*) AS owner_rows FROM (SELECT id FROM priv_docs ORDER BY body <@> 'river stone' LIMIT 10) x;
RESET gpuir.rank_under_rls;
RESET enable_seqscan;
-- the session's superuser bypasses row-level security
SELECT count(*) AS superuser_hits FROM gpuir_search('priv_idx', 'river stone', 10, 'or');
\set VERBOSITY default

DROP TABLE priv_docs;
REVOKE USAGE ON SCHEMA public FROM regress_gpuir_reader;
DROP ROLE regress_gpuir_reader;

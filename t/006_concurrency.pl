# t/006_concurrency.pl: merges that run alongside inserts and queries, a
# mixed concurrent workload, and reuse of the pages merges free.
#
# 1. A full gpuir_merge of 100,000 rows runs in one session while another
#    inserts 100 rows and queries: the inserts and queries complete while the
#    merge is still running (merges take the merge lock, not a relation lock
#    that conflicts with inserts), the rows appended meanwhile stay in the
#    insert buffer after the merge's swap, and every row is found by its
#    token; gpuir_verify passes.
# 2. pgbench, 6 clients: inserts, updates, deletes, ranked queries, full
#    merges and VACUUM at once, with a 64 kB insert buffer (frequent
#    automatic merges).  No client fails; afterwards gpuir_verify passes,
#    every row is found by its token and no other row is, and 30 queries
#    return the same rows
#    and scores as a second gpuir index built fresh on the same table.
# 3. Ten rounds of updating 30% of the rows and VACUUM: the pages of the
#    segments merges replace are reused, so the index stays within 4x of a
#    fresh build (each round rewrites most of it; without reuse it grows
#    with every round), and VACUUM reports its free pages.
# 4. The same rounds (8) while another session, idle in a transaction that
#    scanned the index, holds a lock on it: free pages become reusable only
#    through the xmin horizon, and VACUUM still truncates the reusable free
#    pages that end the index (it needs no AccessExclusiveLock: at least one
#    round shrinks the file).  The index must stop growing (the peak of the
#    last four rounds exceeds that of the first four by less than half of
#    what the first four added): rewrites start
#    in the reusable free pages that end the index, and free extents freed
#    at different times are not coalesced into one that waits for the later
#    one (before, it grew by two copies of the segment every second round).
#    On a server whose segment files are smaller than the index (scripts/
#    pg-build's PostgreSQL 18: 64 blocks) the truncation needs a briefly
#    taken AccessExclusiveLock instead: the index keeps its size while the
#    lock is held, and the VACUUMs after the holder's commit truncate it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use List::Util qw(max min);
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION gpuir;
	CREATE TABLE docs (id serial PRIMARY KEY, body text) WITH (autovacuum_enabled = off);
	-- row i: its token, then 30 words w((i * 7919 + j * 104729) % 2000),
	-- which depend on i % 2000 only: tails[i % 2000]
	CREATE TABLE tails AS
	SELECT r, (SELECT string_agg('w' || ((r * 7919 + j * 104729) % 2000), ' ')
	           FROM generate_series(1, 30) j) AS tail
	FROM generate_series(0, 1999) r;
	INSERT INTO docs (body)
	SELECT 'tok' || i || ' ' || t.tail FROM generate_series(1, 100000) i JOIN tails t ON t.r = i % 2000
	ORDER BY i;
	CREATE INDEX docs_idx ON docs USING gpuir (body) WITH (text_config = 'simple');
});

# rows not found by a query for their token (one gpuir_search_batch, which
# answers each query as gpuir_search does: query_no is the row's position)
sub missing_rows
{
	return $node->safe_psql('postgres', q{
		WITH d AS MATERIALIZED (SELECT row_number() OVER (ORDER BY id) AS n, id, ctid FROM docs),
		s AS MATERIALIZED (
			SELECT b.query_no, b.ctid
			FROM gpuir_search_batch('docs_idx', (SELECT array_agg('tok' || id ORDER BY n) FROM d),
			                        3, 'or') b)
		SELECT count(*) FROM d
		WHERE NOT EXISTS (SELECT 1 FROM s WHERE s.query_no = d.n AND s.ctid = d.ctid)});
}

# ---------- 1. a long merge alongside inserts and queries ----------

# 100,000 rows in the insert buffer, folded with the segment by a full merge
$node->safe_psql('postgres', q{
	SET gpuir.insert_buffer_limit = '1GB';
	INSERT INTO docs (body)
	SELECT 'tok' || i || ' ' || t.tail FROM generate_series(100001, 200000) i
	JOIN tails t ON t.r = i % 2000 ORDER BY i;
});
my ($mout, $merr) = ('', '');
my $merge = IPC::Run::start(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
	  '-c', "SELECT gpuir_merge('docs_idx') /* long merge */" ],
	'>', \$mout, '2>', \$merr);
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_stat_activity
	  WHERE query LIKE '%long merge%' AND state = 'active' AND pid <> pg_backend_pid()}),
	'the merge is running');
# 100 rows in one statement, then a query: the merge of the 100,000 buffered
# rows can end within a second, so what it must outlast is kept short (100
# statements took about as long on a loaded machine, and the check failed)
$node->safe_psql('postgres', q{
	INSERT INTO docs (id, body)
	SELECT g, 'tok' || g || ' during merge w1' FROM generate_series(300001, 300100) g;
	SELECT count(*) FROM gpuir_search('docs_idx', 'w1 w2', 10, 'bmw');});
is($node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%long merge%' AND state = 'active'
	  AND pid <> pg_backend_pid()}),
	'1', '100 rows inserted and a query completed while the merge was running');
$merge->finish;
is($? . $merr, '0', 'the merge completed without error');
is($node->safe_psql('postgres', q{SELECT segments || ' ' || buffer_docs FROM gpuir_index_info('docs_idx')}),
	'1 100', 'one segment; the 100 rows inserted during the merge stay in the buffer');
is(missing_rows(), '0', 'every row is found by its token after the merge');
my ($rc, $out, $err) = $node->psql('postgres', "SELECT gpuir_verify('docs_idx')");
is($rc . $err, '0', 'gpuir_verify passes after a merge with concurrent inserts');

# ---------- 2. a concurrent mixed workload ----------

$node->safe_psql('postgres', q{
	DELETE FROM docs WHERE id > 20000;
	VACUUM docs;
	SELECT gpuir_merge('docs_idx');
	ALTER SYSTEM SET gpuir.insert_buffer_limit = '64kB';
	SELECT pg_reload_conf();
});
$node->pgbench(
	'--no-vacuum --client=6 --jobs=2 --transactions=150', 0,
	[ qr{processed: 900/900} ], [ qr{^$} ],
	'mixed inserts, updates, deletes, queries, merges and VACUUM: no client fails',
	{
		'006_insert@6' => q{
			INSERT INTO docs (id, body)
			SELECT n, 'tok' || n || ' w' || n % 97 || ' w' || n % 13 || ' fresh'
			FROM (SELECT nextval('docs_id_seq') n) s;
		},
		'006_update@3' => q{
			\set id random(1, 20000)
			UPDATE docs SET body = body || ' upd' WHERE id = :id;
		},
		'006_delete@1' => q{
			\set id random(1, 20000)
			DELETE FROM docs WHERE id = :id;
		},
		'006_query@6' => q{
			\set a random(1, 96)
			SELECT count(*) FROM gpuir_search('docs_idx', 'w' || :a || ' w3 fresh', 10, 'bmw');
			SELECT count(*) FROM (SELECT id FROM docs ORDER BY body <@> ('w' || :a || ' upd') LIMIT 5) x;
		},
		'006_merge@1' => q{
			SELECT gpuir_merge('docs_idx');
		},
		'006_vacuum@1' => q{
			VACUUM docs;
		}
	});
$node->safe_psql('postgres', 'ALTER SYSTEM RESET gpuir.insert_buffer_limit; SELECT pg_reload_conf();');
($rc, $out, $err) = $node->psql('postgres', "SELECT gpuir_verify('docs_idx')");
is($rc . $err, '0', 'gpuir_verify passes after the mixed workload');
is(missing_rows(), '0', 'every row is found by its token after the mixed workload');

# no false matches: the tokens of deleted rows find nothing (their TIDs may
# have been reused by other rows)
is($node->safe_psql('postgres', q{
	SELECT count(*)
	FROM gpuir_search_batch('docs_idx',
	                        (SELECT array_agg('tok' || i ORDER BY i)
	                         FROM generate_series(1, (SELECT max(id) FROM docs)) i), 3, 'or') s
	JOIN docs d ON d.ctid = s.ctid WHERE d.id <> s.query_no}),
	'0', 'no query for a token returns another row');

# same rows and scores as an index built now; INDEX_CLEANUP ON: VACUUM may
# otherwise skip index vacuuming for few dead rows (bypass), leaving their
# entries, and N, to a later VACUUM
$node->safe_psql('postgres', q{
	VACUUM (INDEX_CLEANUP ON) docs;
	CREATE INDEX docs_fresh ON docs USING gpuir (body) WITH (text_config = 'simple');
});
my $queries = join(' UNION ALL ', map {
	my ($a, $b) = ($_ * 7 % 97, $_ * 3 % 13);
	"(SELECT '$_', ctid, score FROM gpuir_search('%s', 'w$a w$b fresh upd', 20, 'bmw'))" } (1 .. 30));
my $got = $node->safe_psql('postgres', sprintf($queries, ('docs_idx') x 30) . ' ORDER BY 1, 3 DESC, 2');
my $want = $node->safe_psql('postgres', sprintf($queries, ('docs_fresh') x 30) . ' ORDER BY 1, 3 DESC, 2');
ok(length($want) > 1000, 'the comparison queries return rows');
is($got, $want, '30 queries: same rows and scores as a freshly built index');
$node->safe_psql('postgres', 'DROP INDEX docs_fresh');

# ---------- 3. pages freed by merges are reused ----------

$node->safe_psql('postgres', q{
	REINDEX INDEX docs_idx;
	ALTER SYSTEM SET gpuir.insert_buffer_limit = '256kB';
	SELECT pg_reload_conf();
});
my $fresh = $node->safe_psql('postgres', q{SELECT pg_relation_size('docs_idx') / 8192});
my @sizes;
foreach my $r (1 .. 10)
{
	$node->safe_psql('postgres', "UPDATE docs SET body = body || ' r$r' WHERE (id + $r) % 10 < 3");
	$node->safe_psql('postgres', 'VACUUM docs');
	push @sizes, $node->safe_psql('postgres', q{SELECT pg_relation_size('docs_idx') / 8192});
}
note("fresh $fresh pages; after each round: @sizes");
# (PostgreSQL 17 hands PGPROCs out in FIFO order, so each new session gets
# another proc number: inserts take the first free lane, not the backend's
# own, so that these sessions one after another keep to one lane and the
# index can shrink; src/README, "Insert lanes")
cmp_ok($sizes[-1], '<=', 4 * $fresh,
	'after 10 rounds of 30% updates the index is within 4x of a fresh build');
cmp_ok($sizes[-1] - $sizes[4], '<', $sizes[4] - $fresh,
	'the last five rounds grew the index less than the first five');
my (undef, undef, $verbose) = $node->psql('postgres', 'VACUUM (VERBOSE) docs');
like($verbose, qr/index "docs_idx": pages: \d+ in total, \d+ newly deleted, [1-9]\d* currently deleted, \d+ reusable/,
	'VACUUM VERBOSE reports the free space map');
($rc, $out, $err) = $node->psql('postgres', "SELECT gpuir_verify('docs_idx')");
is($rc . $err, '0', 'gpuir_verify passes after the rounds (free extents apart from live pages)');
is(missing_rows(), '0', 'every row is found by its token after the rounds');

# ---------- 4. an index in use: rewrites start in the free pages that end it ----------

# a session idle in a transaction that scanned the index holds a lock on it
# (READ COMMITTED: no snapshot); the rewrites of its segment start in the
# free pages that end it (GpuirFreeListAllocate) instead of appending a whole
# copy after them, and VACUUM truncates those that are reusable
$node->safe_psql('postgres', 'REINDEX INDEX docs_idx');
$fresh = $node->safe_psql('postgres', q{SELECT pg_relation_size('docs_idx') / 8192});
my ($hin, $hout) = ('', '');
my $holder = IPC::Run::start([ 'psql', '-X', '-At', '-d', $node->connstr('postgres') ],
	'<', \$hin, '>', \$hout, '2>&1');
$hin .= "BEGIN;\nSET LOCAL enable_seqscan = off;\n"
  . "SELECT 'held ' || count(*) FROM (SELECT id FROM docs ORDER BY body <@> 'w1' LIMIT 1) s;\n";
my $until = time() + 60;
$holder->pump while $hout !~ /^held 1$/m && time() < $until;
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_locks WHERE relation = 'docs_idx'::regclass AND pid <> pg_backend_pid()}),
	'1', 'another session holds a lock on the index');
@sizes = ();
foreach my $r (1 .. 8)
{
	$node->safe_psql('postgres', "UPDATE docs SET body = body || ' h$r' WHERE (id + $r) % 10 < 3");
	$node->safe_psql('postgres', 'VACUUM docs');
	push @sizes, $node->safe_psql('postgres', q{SELECT pg_relation_size('docs_idx') / 8192});
}
note("index in use: fresh $fresh pages; after each round: @sizes");
# the sizes alternate as VACUUMs truncate (1024 1343 1024 688 1022 ...), so
# a single sample says little: the largest size of the last four rounds is
# compared with the largest of the first four (without reuse, every round
# appends a copy of the rewritten segment and each peak is higher)
my $peak1 = max(@sizes[0 .. 3]);
my $peak2 = max(@sizes[4 .. 7]);
cmp_ok($peak2 - $peak1, '<', ($peak1 - $fresh) / 2,
	'with the index in use, the last four rounds grew its peak less than half as much as the first four');
# whether a round's VACUUM truncates depends on how the rounds' transaction
# IDs fall: pages that a merge or a relocation frees are reusable once a
# later transaction ID has been assigned and ended (gpuirfree.c), and a
# merge may reuse those that end the index first.  With no more writes, a
# VACUUM moves the top segment down, a transaction ID makes the pages it
# freed reusable, and the next VACUUM truncates them
#
# An index of a whole segment file (RELSEG_SIZE blocks) or more is truncated
# only under an AccessExclusiveLock taken conditionally (gpuircompact.c): while
# the holder's lock stands it keeps its size, and once it is released the next
# VACUUMs truncate it.  With the default 1 GB segment files this index is far
# below one; a server built with a small segment size (configure
# --with-segsize-blocks, as scripts/pg-build builds PostgreSQL 18) takes that
# path.
my $segment_blocks = $node->safe_psql('postgres',
	q{SELECT setting FROM pg_settings WHERE name = 'segment_size'});
my $whole_file = min(@sizes) >= $segment_blocks;
my $vacuum_until_truncated = sub {
	my $truncated = 0;
	for (my $i = 0; !$truncated && $i < 4; $i++)
	{
		$node->safe_psql('postgres', 'VACUUM docs');
		$node->safe_psql('postgres', 'SELECT txid_current()');
		push @sizes, $node->safe_psql('postgres', q{SELECT pg_relation_size('docs_idx') / 8192});
		$truncated = $sizes[-1] < $sizes[-2];
	}
	return $truncated;
};
my $truncated = (grep { $sizes[$_] < $sizes[$_ - 1] } 1 .. $#sizes) > 0;
$truncated ||= $vacuum_until_truncated->();
note("index in use, segment files of $segment_blocks blocks, sizes after the rounds and "
	  . "the VACUUMs without writes: @sizes");
if (!$whole_file)
{
	ok($truncated, 'with the index in use, a VACUUM truncated the free pages that end it');
}
else
{
	ok(!$truncated,
		'with the index in use, an index of a whole segment file or more keeps its size');
}
$hin .= "COMMIT;\n\\q\n";
$holder->finish;
if ($whole_file)
{
	my $before = $sizes[-1];
	my $truncated_after = $vacuum_until_truncated->();
	note("after the holder's commit: @sizes");
	ok($truncated_after,
		"once no other session holds a lock, VACUUM truncates an index of a whole segment file or more ($before -> $sizes[-1] pages)");
}
($rc, $out, $err) = $node->psql('postgres', "SELECT gpuir_verify('docs_idx')");
is($rc . $err, '0', 'gpuir_verify passes after the rounds with the index in use');
is(missing_rows(), '0', 'every row is found by its token after the rounds with the index in use');

$node->stop;
done_testing();

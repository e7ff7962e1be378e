# t/001_wal.pl: WAL replay of gpuir (modelled on contrib/bloom's t/001_wal.pl).
#
# A primary and a streaming standby.  Through CREATE INDEX, inserts that cross
# the insert buffer limit (merges), updates, deletes, gpuir_merge and VACUUM,
# after each step: wait for the standby to replay, check that a list of
# queries (every mode, k 10 and 100) returns the same (ctid, score) rows on
# both, and that gpuir_verify passes on the standby.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use GpuirTestUtil qw(tail_segment_sql);

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->start;
$primary->safe_psql('postgres', q{
	CREATE EXTENSION gpuir;
	CREATE TABLE docs (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off);
	-- doc(i): a deterministic document over a skewed vocabulary of 200 words
	CREATE FUNCTION doc(i int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	  SELECT string_agg('w' || ((i * 7919 + g * g * 31) % (1 + (g * 13) % 200)), ' ')
	  FROM generate_series(1, 5 + i % 23) g
	$$;
	INSERT INTO docs SELECT i, doc(i) FROM generate_series(1, 3000) i;
});

$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

my @queries = ('w1', 'w3 w5', 'w0 w1 w2 w7', 'w11 w13 w17 w19 w23', 'w150 w2', 'nosuchword w4');
my @modes = qw(and or wand bmw and_or);

# every (query, mode, k) result as text, one line per row
sub results
{
	my ($node) = @_;
	my $sql = '';
	foreach my $q (@queries)
	{
		foreach my $m (@modes)
		{
			foreach my $k (10, 100)
			{
				$sql .= "SELECT '$q/$m/$k', ctid, score FROM gpuir_search('docs_idx', '$q', $k, '$m');\n";
			}
		}
	}
	return $node->safe_psql('postgres', $sql);
}

sub check_step
{
	my ($step) = @_;
	$primary->wait_for_catchup($standby);
	my $p = results($primary);
	my $s = results($standby);
	ok(length($p) > 1000, "$step: the queries return rows");
	is($s, $p, "$step: same (ctid, score) rows on primary and standby");
	my ($rc, $out, $err) = $standby->psql('postgres', "SELECT gpuir_verify('docs_idx')");
	is($rc . $err, '0', "$step: gpuir_verify passes on the standby");
	($rc, $out, $err) = $primary->psql('postgres', "SELECT gpuir_verify('docs_idx')");
	is($rc . $err, '0', "$step: gpuir_verify passes on the primary");
}

$primary->safe_psql('postgres',
	"CREATE INDEX docs_idx ON docs USING gpuir (body) WITH (text_config = 'simple')");
check_step('create index');

$primary->safe_psql('postgres', q{
	SET gpuir.insert_buffer_limit = '64kB';
	INSERT INTO docs SELECT i, doc(i) || ' extra w' || (i % 7) FROM generate_series(3001, 6000) i;
});
my $segs = $primary->safe_psql('postgres', "SELECT segments FROM gpuir_index_info('docs_idx')");
cmp_ok($segs, '>', 1, 'inserts crossed the insert buffer limit: merges');
check_step('inserts');

$primary->safe_psql('postgres', q{
	SET gpuir.insert_buffer_limit = '64kB';
	UPDATE docs SET body = body || ' w3 updated' WHERE id % 5 = 0;
});
check_step('updates');

$primary->safe_psql('postgres', "DELETE FROM docs WHERE id % 3 = 0");
check_step('deletes');

$primary->safe_psql('postgres', "VACUUM docs");
check_step('vacuum');

$primary->safe_psql('postgres', q{
	INSERT INTO docs SELECT i, doc(i) FROM generate_series(6001, 6300) i;
	SELECT gpuir_merge('docs_idx');
});
check_step('gpuir_merge');

$primary->safe_psql('postgres', "DELETE FROM docs WHERE id % 4 = 1; VACUUM docs");
check_step('delete + vacuum after merge');

# compaction: VACUUM rewrites the segment without the deleted half, moves the
# new copy down and truncates the end of the index; the standby replays the
# truncation
$primary->safe_psql('postgres', q{
	INSERT INTO docs SELECT i, doc(i) FROM generate_series(10001, 40000) i;
	SELECT gpuir_merge('docs_idx');
});
my $size_before = $primary->safe_psql('postgres', "SELECT pg_relation_size('docs_idx')");
$primary->safe_psql('postgres', "DELETE FROM docs WHERE id % 2 = 0; VACUUM docs");
my $size_after = $primary->safe_psql('postgres', "SELECT pg_relation_size('docs_idx')");
cmp_ok($size_after, '<', $size_before, 'VACUUM truncated the index');
check_step('delete + vacuum with truncation');
is($standby->safe_psql('postgres', "SELECT pg_relation_size('docs_idx')"),
	$size_after, 'the standby truncated the index too');

# compaction that moves only the pages of a segment that end the index (its
# other pages in holes lower down): copied under the same generation, with a
# new map page that retires the pages left; the standby replays it and reads
# the same rows through the new maps
$primary->safe_psql('postgres', tail_segment_sql());
my ($vrc, $vout, $verr) = $primary->psql('postgres', "SET client_min_messages = debug1; VACUUM sm");
like($verr, qr/moved the last \d+ pages of a segment of \d+ pages/,
	'VACUUM moved only the part of a segment that ended the index');
$primary->wait_for_catchup($standby);
my $sm_sql = '';
foreach my $q ('w7 x5', 'w3 w7 y20000', 'x1000 w100', 'w5')
{
	foreach my $m (qw(or bmw and))
	{
		$sm_sql .= "SELECT '$q/$m', ctid, score FROM gpuir_search('sm_idx', '$q', 100, '$m');\n";
	}
}
my $sm_primary = $primary->safe_psql('postgres', $sm_sql);
ok(length($sm_primary) > 1000, 'partial moves: the queries return rows');
is($standby->safe_psql('postgres', $sm_sql), $sm_primary,
	'partial moves: same (ctid, score) rows on primary and standby');
($vrc, $vout, $verr) = $standby->psql('postgres', "SELECT gpuir_verify('sm_idx')");
is($vrc . $verr, '0', 'partial moves: gpuir_verify passes on the standby');

done_testing();

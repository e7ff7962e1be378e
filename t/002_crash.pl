# t/002_crash.pl: crash recovery of gpuir.
#
# The server is killed (immediate stop, or kill -9 of a backend, which makes
# the postmaster reinitialize after a crash) during bulk inserts in a
# background psql session, during a gpuir_merge of a big insert buffer and
# during VACUUM.  After each restart gpuir_verify passes and every row whose
# commit was acknowledged before the crash is found by the token only it
# holds ('uniq<id>'), searched for 1000 rows at a time.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Time::HiRes qw(usleep);
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', "restart_after_crash = on\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION gpuir;
	CREATE TABLE docs (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off);
	INSERT INTO docs SELECT i, 'uniq' || i || ' w' || i % 13 || ' w' || i % 31 || ' common'
	FROM generate_series(1, 1000) i;
	CREATE INDEX docs_idx ON docs USING gpuir (body) WITH (text_config = 'simple');
});
my %committed = map { $_ => 1 } (1 .. 1000);

# check_after_crash: gpuir_verify, and every committed id found by its token
sub check_after_crash
{
	my ($step, $counts_may_lag) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', "SELECT gpuir_verify('docs_idx')");

	# a VACUUM killed between marking rows deleted and rewriting the counts
	# leaves the counts behind: gpuir_verify reports that as a NOTICE (no
	# error), and the next VACUUM rewrites them (checked by the next step)
	$err =~ s/^psql:<stdin>:\d+: NOTICE:  gpuir index "docs_idx": accounting checks skipped, a VACUUM has not finished rewriting its statistics\n(?:(?:DETAIL|HINT):  .*\n?)*//m
	  if $counts_may_lag;
	is($rc . $err, '0', "$step: gpuir_verify passes after the crash");
	# one OR query of the tokens of 1000 ids at a time (each query reads the
	# whole insert buffer, which holds up to 80,000 rows after a merge was
	# killed: a query per id read it 160,000 times, for many minutes; 1000
	# stays under the 1024 distinct lexemes a query may hold): its top-2000
	# must hold every one of the 1000 ids' rows
	my $ids = join(',', sort { $a <=> $b } keys %committed);
	my $missing = $node->safe_psql('postgres', qq{
		SELECT coalesce(sum(c.n - (SELECT count(DISTINCT d.id)
		    FROM gpuir_search('docs_idx', c.q, 2 * c.n, 'or') s
		    JOIN docs d ON d.ctid = s.ctid WHERE d.id = ANY (c.ids))), 0)
		FROM (SELECT array_agg(id) AS ids, count(*)::int AS n,
		             string_agg('uniq' || id, ' ') AS q
		      FROM unnest('{$ids}'::int[]) id GROUP BY (id - 1) / 1000) c});
	is($missing, '0', "$step: all " . scalar(keys %committed) . ' committed rows are found by their token');
}

# wait until the crashed server accepts connections again
sub wait_restarted
{
	# while the server still refuses connections psql may exit before it
	# reads its query, and IPC::Run then dies writing it ("Broken pipe", seen
	# on PostgreSQL 18): try again until the server answers, 3 minutes at most
	for (my $i = 0; $i < 1800; $i++)
	{
		my $ok = eval { $node->poll_query_until('postgres', 'SELECT true') };

		return if $ok;
		usleep(100_000);
	}
	die 'server did not restart after the crash';
}

# crash_during($like, $h): kill -9 the backend running a query matching $like
# while it is active (the postmaster then reinitializes, as after a crash);
# if it finished before it could be seen, stop the server in immediate mode
sub crash_during
{
	my ($like, $h) = @_;
	my $pid = '';
	my $deadline = time() + 30;
	while ($pid eq '' && time() < $deadline && $h->pumpable)
	{
		$pid = $node->safe_psql('postgres',
			"SELECT pid FROM pg_stat_activity WHERE state = 'active' AND query LIKE '$like' LIMIT 1");
		$h->pump_nb;
	}
	if ($pid ne '')
	{
		kill 'KILL', $pid;
		eval { $h->finish; };
		wait_restarted();
		return 1;
	}
	$node->stop('immediate');
	eval { $h->finish; };
	$node->start;
	return 0;
}

# ---- 1. immediate stop during bulk inserts (one transaction per row) ----
{
	# ON_ERROR_STOP: the INSERT that the stop interrupts fails, and psql must
	# not go on to echo "committed" for it
	my $script = "\\set ON_ERROR_STOP on\nSET gpuir.insert_buffer_limit = '64kB';\n";
	foreach my $id (1001 .. 9000)
	{
		$script .= "INSERT INTO docs VALUES ($id, 'uniq$id w" . ($id % 13) .
		  " bulk w" . ($id % 31) . " common " . ('filler ' x ($id % 9)) . "');\n\\echo committed $id\n";
	}
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-q', '-d', $node->connstr('postgres') ],
		'<', \$script, '>', \$out, '2>', \$err);
	my $deadline = time() + 60;
	while ($out !~ /committed 4000\n/ && time() < $deadline)
	{
		$h->pump_nb;
		select(undef, undef, undef, 0.05);
	}
	$node->stop('immediate');
	# psql lost its server: its stdin pipe breaks, and it exits non-zero
	{
		local $SIG{PIPE} = 'IGNORE';
		eval { $h->finish; };
	}
	$committed{$_} = 1 foreach ($out =~ /committed (\d+)\n/g);
	my $n = () = $out =~ /committed (\d+)\n/g;
	cmp_ok($n, '>=', 3000, "bulk inserts: $n rows committed before the crash");
	$node->start;
	check_after_crash('crash during bulk inserts');
	my $segs = $node->safe_psql('postgres', "SELECT segments FROM gpuir_index_info('docs_idx')");
	cmp_ok($segs, '>', 1, 'bulk inserts crossed the insert buffer limit');
}

# ---- 2. kill -9 of the backend running gpuir_merge of a big buffer ----
# (a merge that ends before crash_during's polls see it is tried again with
# a buffer twice as full, at most four times: 10,000 rows, then 20,000,
# 40,000 and 80,000; faster merges shrank the first one's window below the
# polls' on a 2-core machine)
{
	my $killed = 0;
	for (my $try = 0; $try < 4 && !$killed; $try++)
	{
		my ($lo, $hi) = (10001 + 10000 * ((1 << $try) - 1), 10000 + 10000 * ((2 << $try) - 1));
		$node->safe_psql('postgres', qq{
			SET gpuir.insert_buffer_limit = '1GB';
			INSERT INTO docs SELECT i, 'uniq' || i || ' merge w' || i % 13 || ' ' ||
			  repeat('w' || i % 97 || ' ', 1 + i % 20) FROM generate_series($lo, $hi) i;
		});
		$committed{$_} = 1 foreach ($lo .. $hi);
		my $buffered = $node->safe_psql('postgres', "SELECT buffer_docs FROM gpuir_index_info('docs_idx')");
		cmp_ok($buffered, '>=', 10000, 'a big insert buffer') if $try == 0;
		my ($out, $err) = ('', '');
		my $h = IPC::Run::start(
			[ 'psql', '-X', '-d', $node->connstr('postgres'), '-c', "SELECT gpuir_merge('docs_idx')" ],
			'>', \$out, '2>', \$err);
		$killed = crash_during('SELECT gpuir_merge%', $h);
		note("try $try: the merge ended before the kill: $out $err") unless $killed;
	}
	ok($killed, 'gpuir_merge was killed while running');
	check_after_crash('crash during gpuir_merge');
	$node->safe_psql('postgres', "SELECT gpuir_merge('docs_idx')");
	is($node->safe_psql('postgres', "SELECT segments || ' ' || buffer_docs FROM gpuir_index_info('docs_idx')"),
		'1 0', 'gpuir_merge after recovery');
	check_after_crash('after the merge that followed the crash');
}

# ---- 3. kill -9 of the backend running VACUUM ----
{
	$node->safe_psql('postgres', 'DELETE FROM docs WHERE id % 3 = 0');
	delete $committed{$_} foreach grep { $_ % 3 == 0 } keys %committed;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-d', $node->connstr('postgres'), '-c', 'VACUUM docs' ],
		'>', \$out, '2>', \$err);
	note(crash_during('VACUUM docs%', $h) ? 'VACUUM killed while running' : 'VACUUM ended before the crash');
	check_after_crash('crash during VACUUM', 1);
	$node->safe_psql('postgres', 'VACUUM docs');
	check_after_crash('VACUUM after the crash');
	is($node->safe_psql('postgres', "SELECT count(*) FROM gpuir_search('docs_idx', 'uniq3 uniq6 uniq9', 10, 'or')"),
		'0', 'deleted rows are not returned');
}

done_testing();

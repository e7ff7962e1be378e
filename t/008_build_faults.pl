# t/008_build_faults.pl: a parallel CREATE INDEX whose worker dies leaves no
# index and an intact table, and the next build works.
#
# A table of 120,000 generated documents (30 words each over 3000 words) is
# indexed with 1 parallel worker (max_parallel_maintenance_workers = 1, so
# that the file leaves a core to the timing tests running beside it,
# min_parallel_table_scan_size = 0), each time from a background psql while
# another session waits for one of the build's parallel workers
# (pg_stat_activity.backend_type = 'parallel worker', leader_pid = the
# build's backend) to be running and then:
# 1. terminates it (pg_terminate_backend, SIGTERM): the worker's FATAL
#    reaches the leader, CREATE INDEX fails with it, the index does not
#    exist, the server keeps running;
# 2. kills it with SIGKILL: the postmaster resets every backend and runs
#    crash recovery; afterwards the index does not exist either.
# After each, the table holds all its rows, and a parallel build of the same
# index gives the contents of a serial build (gpuir_index_info, gpuir_verify,
# the same top-10 for a set of queries).  Last, a parallel build with
# maintenance_work_mem so small that every participant spills sorted runs
# gives the serial build's contents too.  If a build ends before a worker is
# seen (a fast machine), the kill is tried again on a build of a larger
# table (up to three tries) rather than passing vacuously.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Time::HiRes qw(usleep);
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', q{
autovacuum = off
max_worker_processes = 8
max_parallel_workers = 8
max_parallel_maintenance_workers = 1
maintenance_work_mem = 256MB
jit = off
restart_after_crash = on
});
$node->start;

$node->safe_psql('postgres', q{
	CREATE EXTENSION gpuir;
	CREATE TABLE docs (id int, body text) WITH (autovacuum_enabled = off);
	CREATE FUNCTION doc(i int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	  SELECT string_agg('w' || (3000 * power(
	           (((i::bigint * 7919 + g * 104729) * 2654435761) % 4294967296)::float8
	           / 4294967296, 3))::int, ' ')
	  FROM generate_series(1, 30) g
	$$;
	INSERT INTO docs SELECT i, doc(i) FROM generate_series(1, 120000) i;
	SET max_parallel_maintenance_workers = 0;
	CREATE INDEX docs_serial ON docs USING gpuir (body) WITH (text_config = 'simple');
});
my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM docs');
my $serial_info = $node->safe_psql('postgres',
	"SELECT docs, terms, postings FROM gpuir_index_info('docs_serial')");

my $build = "SET min_parallel_table_scan_size = 0; "
  . "CREATE INDEX docs_par ON docs USING gpuir (body) WITH (text_config = 'simple')";

# start_build(): CREATE INDEX docs_par from a background psql; returns the
# harness and the references to its output
sub start_build
{
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-c', $build ],
		'>', \$out, '2>', \$err);
	return ($h, \$out, \$err);
}

# worker_pid(): the pid of a running parallel worker of the build, or undef
# once the build is over without one being seen (polled every 5 ms; the
# build counts as started once its statement is active, or after 5 s)
sub worker_pid
{
	my $started = 0;
	for (my $i = 0; $i < 12000; $i++)
	{
		my $res = $node->safe_psql('postgres', q{
			SELECT coalesce(
			  (SELECT w.pid::text FROM pg_stat_activity l JOIN pg_stat_activity w ON w.leader_pid = l.pid
			   WHERE l.backend_type = 'client backend' AND l.query LIKE '%CREATE INDEX docs_par%'
			     AND l.pid <> pg_backend_pid() AND w.pid <> l.pid
			     AND w.backend_type = 'parallel worker' LIMIT 1),
			  (SELECT 'busy' FROM pg_stat_activity
			   WHERE backend_type = 'client backend' AND state = 'active'
			     AND query LIKE '%CREATE INDEX docs_par%' AND pid <> pg_backend_pid() LIMIT 1),
			  'done')});
		return $res if $res =~ /^\d+$/;
		$started = 1 if $res eq 'busy' || $i >= 1000;
		return undef if $res eq 'done' && $started;
		usleep(5000);
	}
	return undef;
}

# index_exists(): whether docs_par is in the catalog
sub index_exists
{
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_class WHERE relname = 'docs_par'") ne '0';
}

# grow(): double the table (a longer build, for another try)
sub grow
{
	$node->safe_psql('postgres',
		'INSERT INTO docs SELECT id + (SELECT max(id) FROM docs), body FROM docs');
	$rows = $node->safe_psql('postgres', 'SELECT count(*) FROM docs');
	$node->safe_psql('postgres', 'REINDEX INDEX docs_serial');
	$serial_info = $node->safe_psql('postgres',
		"SELECT docs, terms, postings FROM gpuir_index_info('docs_serial')");
}

# build_with_worker(): a build started in the background and the pid of one
# of its running parallel workers (a larger table and another build when one
# ends before a worker is seen, three tries)
sub build_with_worker
{
	my ($pid, $h, $out, $err);
	for (my $try = 0; $try < 3; $try++)
	{
		($h, $out, $err) = start_build();
		$pid = worker_pid();
		last if defined $pid;
		$h->finish;
		$node->safe_psql('postgres', 'DROP INDEX IF EXISTS docs_par');
		note("try $try: the build ended before a worker was seen; a larger table");
		grow();
	}
	ok(defined $pid, 'a parallel worker of the build was seen');
	return ($h, $out, $err, $pid);
}

# same_as_serial($what, $k): docs_par has the serial build's counts, passes
# gpuir_verify and gives the same top-k for a set of queries
sub same_as_serial
{
	my ($what, $k) = @_;
	is($node->safe_psql('postgres',
			"SELECT docs, terms, postings FROM gpuir_index_info('docs_par')"),
		$serial_info, "$what: a new parallel build has the serial build's counts");
	$node->safe_psql('postgres', "SELECT gpuir_verify('docs_par')");
	pass("$what: gpuir_verify of the new build passes");
	is($node->safe_psql('postgres', qq{
		SELECT count(*) FROM generate_series(1, 30) q,
		  LATERAL (SELECT array_agg(ctid::text || float4send(score)::text ORDER BY score DESC, ctid) a
		           FROM gpuir_search('docs_serial', 'w' || q || ' w' || (q * 37), $k, 'or')) s,
		  LATERAL (SELECT array_agg(ctid::text || float4send(score)::text ORDER BY score DESC, ctid) b
		           FROM gpuir_search('docs_par', 'w' || q || ' w' || (q * 37), $k, 'or')) p
		WHERE a IS DISTINCT FROM b}), '0', "$what: the same top-${k}s as the serial build");
}

# check_rebuild($what): the table intact, then a parallel build matches the serial one
sub check_rebuild
{
	my ($what) = @_;
	is($node->safe_psql('postgres', 'SELECT count(*) FROM docs'), $rows,
		"$what: the table holds all its rows");
	$node->safe_psql('postgres', $build);
	same_as_serial($what, 10);
	$node->safe_psql('postgres', 'DROP INDEX docs_par');
}

# ---- 1. SIGTERM of a parallel worker ----
{
	my ($h, $out, $err, $pid) = build_with_worker();
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)") if defined $pid;
	$h->finish;
	isnt($h->result(0), 0, 'CREATE INDEX failed when its worker was terminated');
	like($$err, qr/terminating connection due to administrator command|parallel worker/,
		'the error says the worker was terminated');
	ok(!index_exists(), 'no index is left after the failed build');
	check_rebuild('after SIGTERM of a worker');
}

# ---- 2. SIGKILL of a parallel worker: crash recovery ----
{
	my ($h, $out, $err, $pid) = build_with_worker();
	kill 'KILL', $pid if defined $pid;
	$h->finish;
	isnt($h->result(0), 0, 'CREATE INDEX failed when its worker was killed');
	# the postmaster reinitializes after a child's crash: wait until it
	# answers (while it refuses connections psql may exit before it reads its
	# query, and IPC::Run dies writing it: try again)
	my $up = 0;
	for (my $i = 0; $i < 1800 && !$up; $i++)
	{
		$up = eval { $node->poll_query_until('postgres', 'SELECT 1', '1') };
		usleep(100_000) unless $up;
	}
	ok($up, 'the server accepts connections after crash recovery');
	ok(!index_exists(), 'no index is left after crash recovery');
	check_rebuild('after SIGKILL of a worker');
}

# ---- 3. every participant past maintenance_work_mem ----
# 64MB is the least that gives the build its worker (32MB per participant):
# each builder holds about 31 MB (1.65 M postings) and the table's 3.5 M
# postings are shared by two, so at least one of them (which one depends
# on how the scan's blocks were shared) spills sorted runs and exports its
# lists from them; the leader's DEBUG1 line counts every participant's runs.
{
	my ($ret, $out, $err) = $node->psql('postgres',
		"SET maintenance_work_mem = '64MB'; SET client_min_messages = debug1; $build");
	is($ret, 0, 'a parallel build past maintenance_work_mem succeeds');
	like($err, qr/with parallel workers/, 'it ran with a parallel worker');
	like($err, qr/built from \d+ sorted runs of postings/, 'the builders spilled sorted runs');
	same_as_serial('past maintenance_work_mem', 1000);
	$node->safe_psql('postgres', 'DROP INDEX docs_par');
}

$node->stop;
done_testing();

# t/007_devices.pl: gpuir.devices, the GPUs the GPU service uses.
#
# 1. A value that is not 'all' or a list of distinct device numbers is
#    refused with the reason in the log (the GUC's check hook), and the
#    default is kept, as PostgreSQL does for every extension's parameter.
# 2. A list naming a device that is not there, or a machine without a GPU:
#    the server starts, gpuir_status() has one row saying why no device is
#    used, and queries are answered (by the CPU engine), also with
#    gpuir.device = gpu; no list is counted found decoded or decoded;
#    gpuir.decoded_lists_memory is an amount of memory set on reload; and
#    gpuir.wake_fanout is 2 of 0-4, set on reload.
# 3. Where the machine has GPUs (not in CI), 'all' gives one row per device
#    with a worker each, and every worker runs "gpuir gpu service N".
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('devices');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'gpuir'\n");

# 1. bad values: as for any extension's parameter, PostgreSQL logs the
# reason and keeps the default ('all')
foreach my $case (['0,0', qr/device 0 is listed twice/],
				  ['0;1', qr/expected a comma/],
				  ['gpu0', qr/expected a device number/],
				  ['0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16', qr/more than 16 devices/])
{
	my ($value, $why) = @$case;
	$node->append_conf('postgresql.conf', "gpuir.devices = '$value'\n");
	my $offset = -s $node->logfile;
	$node->start;
	like(substr(slurp_file($node->logfile), $offset),
		qr/invalid value for parameter "gpuir.devices".*\n.*$why/,
		"gpuir.devices = '$value': the log says why");
	is($node->safe_psql('postgres', q{SHOW gpuir.devices}), 'all', 'and the default is kept');
	$node->stop;
}

# 2. a device that is not there (or no GPU at all): one row, a reason, queries answered
$node->append_conf('postgresql.conf', "gpuir.devices = '15'\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION gpuir;
	CREATE TABLE d (id int, body text);
	INSERT INTO d SELECT i, 'word' || (i % 7) || ' common' FROM generate_series(1, 200) i;
	CREATE INDEX d_idx ON d USING gpuir (body);
});
# device 0's worker looks at the devices once it runs
$node->poll_query_until('postgres',
	q{SELECT bool_and(device NOT LIKE '%service is starting%') FROM gpuir_status()})
  or die "the gpu service did not start";
is($node->safe_psql('postgres', 'SELECT count(*) FROM gpuir_status()'), '1', 'one row');
like($node->safe_psql('postgres', 'SELECT device FROM gpuir_status()'),
	qr/^none \(/, 'it says no device is used, and why');
is($node->safe_psql('postgres', q{SET gpuir.device = gpu;
	SELECT count(*) FROM gpuir_search('d_idx', 'word3 common', 10)}),
	'10', 'gpuir.device = gpu: answered by the CPU engine');
is($node->safe_psql('postgres', q{SELECT decoded_found || ' ' || decoded_lists FROM gpuir_status()}),
	'0 0', 'no device: no list found decoded or decoded');
# gpuir.decoded_lists_memory: an amount of memory, set on reload
is($node->safe_psql('postgres', q{SHOW gpuir.decoded_lists_memory}), '2GB', 'decoded lists: 2GB by default');
$node->append_conf('postgresql.conf', "gpuir.decoded_lists_memory = '512MB'\n");
$node->reload;
$node->poll_query_until('postgres', q{SELECT current_setting('gpuir.decoded_lists_memory') = '512MB'})
  or die "gpuir.decoded_lists_memory was not reloaded";
is($node->safe_psql('postgres', q{SELECT setting || ' ' || unit FROM pg_settings
	WHERE name = 'gpuir.decoded_lists_memory'}), '512 MB', 'set on reload, in MB');
# gpuir.wake_fanout: 2 by default, 0-4, set on reload
is($node->safe_psql('postgres', q{SELECT setting || ' ' || min_val || '-' || max_val || ' ' || context
	FROM pg_settings WHERE name = 'gpuir.wake_fanout'}), '2 0-4 sighup', 'wake fan-out: 2 of 0-4, on reload');
my ($rc, $out, $err) = $node->psql('postgres', q{ALTER SYSTEM SET gpuir.wake_fanout = 5});
like($err, qr/5 is outside the valid range for parameter "gpuir.wake_fanout" \(0 \.\. 4\)/,
	'a fan-out past 4 is refused');
$node->safe_psql('postgres', q{ALTER SYSTEM SET gpuir.wake_fanout = 0});
$node->reload;
$node->poll_query_until('postgres', q{SELECT current_setting('gpuir.wake_fanout') = '0'})
  or die "gpuir.wake_fanout was not reloaded";
$node->safe_psql('postgres', q{ALTER SYSTEM RESET gpuir.wake_fanout});
$node->stop;

# 3. 'all' (the default): one row per visible device, each with its worker
$node->adjust_conf('postgresql.conf', 'gpuir.devices', "'all'");
$node->start;
$node->poll_query_until('postgres',
	q{SELECT bool_and(device NOT LIKE '%service is starting%') FROM gpuir_status()})
  or die "the gpu service did not start";
my $ngpu = $node->safe_psql('postgres', 'SELECT count(*) FROM gpuir_status() WHERE memory IS NOT NULL');
if ($ngpu > 0)
{
	$node->poll_query_until('postgres',
		q{SELECT bool_and(worker_pid IS NOT NULL) FROM gpuir_status()})
	  or die "a device's worker did not start";
	is($node->safe_psql('postgres', q{SELECT count(DISTINCT worker_pid) FROM gpuir_status()}),
		$ngpu, "$ngpu devices, one worker each");
	is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity
		WHERE backend_type = 'gpuir gpu service'}), $ngpu, 'and they show in pg_stat_activity');
}
else
{
	like($node->safe_psql('postgres', 'SELECT device FROM gpuir_status()'),
		qr/^none \(/, 'no GPU here: one row that says why');
}
$node->stop;

done_testing();

# t/003_upgrade_dump.pl: the extension's upgrade path and dump/restore.
#
# CREATE EXTENSION gpuir VERSION '0.1.0' (no gpuir_verify), ALTER EXTENSION
# gpuir UPDATE: version 0.2.0 and gpuir_verify exists and works on an index
# built under 0.1.0.  Then pg_dump -Fc of a database with a table and a gpuir
# index, pg_restore into a new database: identical search results.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->start;

$node->safe_psql('postgres', q{
	CREATE EXTENSION gpuir VERSION '0.1.0';
	CREATE TABLE docs (id int PRIMARY KEY, body text);
	INSERT INTO docs SELECT i, 'w' || i % 17 || ' w' || i % 29 || ' w' || i % 101 || ' uniq' || i
	FROM generate_series(1, 2000) i;
	CREATE INDEX docs_idx ON docs USING gpuir (body) WITH (text_config = 'english', k1 = 1.5);
	INSERT INTO docs VALUES (2001, 'w1 w2 buffered');
});
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'gpuir'"),
	'0.1.0', 'created at 0.1.0');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_proc WHERE proname = 'gpuir_verify'"),
	'0', '0.1.0 has no gpuir_verify');

$node->safe_psql('postgres', 'ALTER EXTENSION gpuir UPDATE');
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'gpuir'"),
	'0.2.0', 'updated to 0.2.0');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
	 WHERE p.proname = 'gpuir_verify' AND d.deptype = 'e'"),
	'1', 'gpuir_verify exists and belongs to the extension');
my ($rc, $out, $err) = $node->psql('postgres', "SELECT gpuir_verify('docs_idx')");
is($rc . $err, '0', 'gpuir_verify passes on an index built under 0.1.0');
is($node->safe_psql('postgres',
	"SELECT has_function_privilege('public', 'gpuir_verify(regclass)', 'execute')"),
	'f', 'gpuir_verify: not executable by PUBLIC, as in a fresh 0.2.0 install');

# the update script gives the same objects as a fresh 0.2.0 install
my $objs = q{SELECT pg_describe_object(classid, objid, objsubid) FROM pg_depend
	WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e' ORDER BY 1};
my $updated = $node->safe_psql('postgres', $objs);
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION gpuir');
is($node->safe_psql('fresh', $objs), $updated, 'updated objects = fresh 0.2.0 objects');

# dump and restore
my $queries = '';
foreach my $q ('w1', 'w3 w5', 'w1 w2 w3 w4', 'uniq77', 'buffered w2')
{
	foreach my $m ('and', 'or', 'bmw')
	{
		$queries .= "SELECT '$q/$m', ctid, score FROM gpuir_search('docs_idx', '$q', 20, '$m');\n";
	}
}
$queries .= "SELECT id FROM docs ORDER BY body <@> 'w7 w11' LIMIT 15;\n";
my $before = $node->safe_psql('postgres', $queries);

my $dump = $node->basedir . '/gpuir.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('postgres'), '-f', $dump ], 'pg_dump -Fc');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('restored'), $dump ], 'pg_restore');
is($node->safe_psql('restored', "SELECT extversion FROM pg_extension WHERE extname = 'gpuir'"),
	'0.2.0', 'restored extension is 0.2.0');
is($node->safe_psql('restored',
	"SELECT reloptions::text FROM pg_class WHERE relname = 'docs_idx'"),
	'{text_config=english,k1=1.5}', 'restored index keeps its options');
($rc, $out, $err) = $node->psql('restored', "SELECT gpuir_verify('docs_idx')");
is($rc . $err, '0', 'gpuir_verify passes on the restored index');
my $after = $node->safe_psql('restored', $queries);
ok(length($before) > 500, 'the queries return rows');
is($after, $before, 'identical search results after pg_restore');

done_testing();

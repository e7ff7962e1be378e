# t/004_corrupt_pages.pl: corrupt pages of a gpuir index, through SQL.
#
# The standard: a corrupt page gives ERRCODE_INDEX_CORRUPTED (XX002), never
# a crash or an out-of-bounds read.  A table of a few thousand documents
# over an English vocabulary gets a gpuir index with several segments and a
# non-empty insert buffer, and some rows are deleted (not vacuumed); the
# index relation file and the table's files are saved after a clean
# shutdown.  Then, for each iteration, the saved files are restored (so every
# iteration starts from the same state), the index file is corrupted
# in one way (bit flips in any page, the metapage, page headers, special
# spaces or the middle of segment stream pages; a run of bytes overwritten
# with 0x00, 0xFF or random bytes; the file truncated to fewer pages; one
# page copied over another; a field of the metapage, the segment directory,
# a dictionary entry, a block header, a TID or an insert buffer record set
# to an interesting value), the server is started, and gpuir_verify, every
# query in every mode, ORDER BY <@>, the other SQL functions, an INSERT,
# VACUUM (which marks the deleted rows) and gpuir_merge run.  Every
# statement must either succeed or fail with XX002 (or XX001, or 55000 for
# a metapage version set to an older one, below), and the
# server must survive (SELECT 1 works, no crash in the server log).  When
# nothing fails, results may differ (a changed lexeme byte, k1): counted and
# noted, not asserted.  Finally the pristine files give the first results.
# Last, one targeted corruption that random bytes rarely make: a retired
# extent of a segment map page set over the map page itself, which
# gpuir_verify must report naming the page and the extent.
#
# Data checksums are off (initdb's default up to PostgreSQL 17; 18 turns
# them on, so the cluster is initialized with --no-data-checksums there;
# checked below), so PostgreSQL's buffer manager checks page headers only
# and gpuir's own checks must catch the rest.
#
# Environment:
#   GPUIR_FUZZ_ITERATIONS  number of corrupted iterations (default 40)
#   GPUIR_FUZZ_SEED        base seed (default 20261121); iteration i uses
#                          srand(seed * 1000 + i), so it can be rerun alone
#   GPUIR_FUZZ_ONLY        comma-separated iteration numbers to run (the
#                          others are skipped): reproduces a failure
#   GPUIR_FUZZ_VERBOSE     1: note() every iteration's corruption and
#                          outcome (failures are always reported)
use strict;
use warnings;
use File::Copy;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use GpuirTestUtil qw(tail_segment_sql);

my $iterations = $ENV{GPUIR_FUZZ_ITERATIONS} // 40;
my $seed = $ENV{GPUIR_FUZZ_SEED} // 20261121;
my %only = map { $_ => 1 } grep { /^\d+$/ } split /,/, ($ENV{GPUIR_FUZZ_ONLY} // '');
my $verbose = $ENV{GPUIR_FUZZ_VERBOSE} // 0;

# SQLSTATEs a statement may fail with on a corrupt index:
#   XX002 index_corrupted: gpuir's own checks (the standard)
#   XX001 data_corrupted: PostgreSQL's buffer manager ("invalid page in
#         block", "could not read block ... read only 0 of 8192 bytes" for a
#         block past the end of the truncated file); the page never reaches
#         gpuir
#   55000 object_not_in_prerequisite_state, only as "has on-disk format
#         version N": the metapage's version set to an older one (REINDEX)
my %allowed = (XX002 => 1, XX001 => 1);
my $old_version_re = qr/has on-disk format version \d+, this gpuir reads versions? /;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init(extra => ($node->pg_version >= 18 ? ['--no-data-checksums'] : []));
$node->start;

# ---- 1. the table, the index, the statements and their pristine results ----

my @vocab = qw(river stone light garden window winter summer music paper market
  doctor engine forest island letter mountain ocean picture silver story
  teacher village water yellow bridge castle candle cloud copper desert
  dragon empire farmer feather glass harbor hunter iron jungle kitchen
  ladder lantern meadow mirror needle orchard palace pepper pilot planet
  puzzle rabbit saddle shadow spider sugar thunder tiger timber tower
  valley velvet wagon wizard);
die 'vocabulary must have 64 words' unless @vocab == 64;
my $vocab_sql = 'ARRAY[' . join(',', map { "'$_'" } @vocab) . ']';

$node->safe_psql('postgres', qq{
	CREATE EXTENSION gpuir;
	-- no primary key: the table's files are restored with the index's (below)
	CREATE TABLE docs (id int, body text) WITH (autovacuum_enabled = off);
	-- doc(i): 4..26 words picked by md5 from 64 words, skewed to the first
	-- ones (a product of two uniform bytes), so their lists span many
	-- 128-posting blocks; some docs repeat 'river' and 'stone' (tf > 1)
	CREATE FUNCTION doc(i int) RETURNS text LANGUAGE sql IMMUTABLE AS \$\$
	  SELECT string_agg(($vocab_sql)[1 + (get_byte(h, 0) * get_byte(h, 1)) / 1025], ' ' ORDER BY g)
	         || repeat(' river', i % 4) || repeat(' stone', (i / 7) % 3)
	  FROM generate_series(1, 4 + (i * 7) % 23) g,
	       LATERAL (SELECT decode(md5(i || ':' || g), 'hex') AS h) x
	\$\$;
	INSERT INTO docs SELECT i, doc(i) FROM generate_series(1, 2500) i;
	CREATE INDEX docs_idx ON docs USING gpuir (body) WITH (text_config = 'english');
});
# inserts past a small insert buffer limit: merges of the buffer into new
# segments; then a few more, left in the buffer
$node->safe_psql('postgres', q{
	SET gpuir.insert_buffer_limit = '64kB';
	INSERT INTO docs SELECT i, doc(i) FROM generate_series(2501, 3300) i;
});
$node->safe_psql('postgres', q{
	INSERT INTO docs SELECT i, doc(i) || ' zeppelin' FROM generate_series(3301, 3360) i;
});
# rows deleted but not vacuumed, in every segment and in the insert buffer:
# each iteration's VACUUM marks them (deleted bitmaps, dictionary df, buffer
# record flags, metapage statistics)
$node->safe_psql('postgres', 'DELETE FROM docs WHERE id % 41 = 0');
my ($segments, $buffer_docs, $pages) = split /\|/,
  $node->safe_psql('postgres', "SELECT segments, buffer_docs, pages FROM gpuir_index_info('docs_idx')");
cmp_ok($segments, '>=', 2, "the index has $segments segments");
cmp_ok($buffer_docs, '>', 0, "the insert buffer holds $buffer_docs documents");
is($node->safe_psql('postgres', 'SHOW data_checksums'), 'off', 'data checksums are off');
my $block_size = $node->safe_psql('postgres', 'SHOW block_size');
my $relpath = $node->data_dir . '/' . $node->safe_psql('postgres', "SELECT pg_relation_filepath('docs_idx')");
my $heappath = $node->data_dir . '/' . $node->safe_psql('postgres', "SELECT pg_relation_filepath('docs')");
like($node->safe_psql('postgres', q{
	SET enable_seqscan = off;
	EXPLAIN (COSTS OFF) SELECT ctid FROM docs ORDER BY body <@> 'river stone' LIMIT 25}),
	qr/Index Scan using docs_idx/, 'ORDER BY <@> is an index scan');

# The statements of an iteration, in order: reads, then writes (an INSERT,
# rolled back; VACUUM with index cleanup forced: the deleted rows and the
# aborted one are dead tuples; gpuir_merge), then reads of the merged index.
# The table's files are restored with the index's before each iteration, so
# every iteration starts from the same pristine state.
my @queries = ('river', 'river stone', 'garden window winter', 'thunder tiger wizard',
	'river light music shadow wizard', 'nosuchword river', 'zeppelin river', 'silver story');
my @modes = qw(and or wand bmw and_or);
my @stmts = ("SELECT gpuir_verify('docs_idx')");
# every query in every mode, k cycling through 1, 7 and 100
my @ks = (1, 7, 100);
my $nq = 0;
foreach my $q (@queries)
{
	foreach my $m (@modes)
	{
		my $k = $ks[ $nq++ % @ks ];
		push @stmts, "SELECT string_agg(ctid || ' ' || score, ',') FROM gpuir_search('docs_idx', '$q', $k, '$m')";
	}
}
push @stmts,
  "SELECT string_agg(ctid || ' ' || o, ',') FROM (SELECT ctid, body <@> 'river stone' AS o FROM docs ORDER BY body <@> 'river stone' LIMIT 25) s",
  "SELECT string_agg(ctid || ' ' || o, ',') FROM (SELECT ctid, body <@> 'zeppelin tiger' AS o FROM docs ORDER BY body <@> 'zeppelin tiger' LIMIT 3) s",
  "SELECT count(*) FROM gpuir_search('docs_idx', 'river', 100000, 'or')",
  "SELECT count(*), sum(score) FROM gpuir_search('docs_idx', 'river stone light garden zeppelin', 100000, 'or')",
  "SELECT string_agg(query_no || ' ' || ctid || ' ' || score, ',') FROM gpuir_search_batch('docs_idx', ARRAY['river', 'stone tiger', 'zeppelin'], 10, 'bmw')",
  "SELECT string_agg(lexeme || ' ' || df || ' ' || idf, ',') FROM gpuir_query_terms('docs_idx', 'river stone zeppelin wizard')",
  "SELECT docs, deleted_docs, terms, postings, segments, buffer_docs, pages FROM gpuir_index_info('docs_idx')",
  'BEGIN',
  "INSERT INTO docs VALUES (100000, 'zeppelin river stone fuzzing a wizard')",
  'ROLLBACK',
  'VACUUM (INDEX_CLEANUP ON) docs',
  "SELECT 'after vacuum', docs, deleted_docs, segments, buffer_docs FROM gpuir_index_info('docs_idx')",
  "SELECT gpuir_merge('docs_idx')",
  "SELECT string_agg(ctid || ' ' || score, ',') FROM gpuir_search('docs_idx', 'river stone zeppelin', 100, 'bmw')",
  "SELECT string_agg(ctid || ' ' || score, ',') FROM gpuir_search('docs_idx', 'river stone zeppelin', 100, 'or')",
  "SELECT gpuir_verify('docs_idx')";
my $script = "SET statement_timeout = '60s';\nSET enable_seqscan = off;\n\\set VERBOSITY verbose\n";
for my $i (0 .. $#stmts)
{
	$script .= "$stmts[$i];\n\\echo '\@\@' $i :SQLSTATE\n\\warn '\@\@' $i\n";
}

# run_statements: the script in one psql session; returns a hash: out (the
# output of each statement), state (its SQLSTATE, undef when it never ran),
# err (its error text), rc (psql's exit status), timed_out
sub run_statements
{
	my ($stdout, $stderr, $timed_out) = ('', '', 0);
	my $rc = $node->psql('postgres', $script, on_error_stop => 0, stdout => \$stdout,
		stderr => \$stderr, timeout => 300, timed_out => \$timed_out);
	my (@out, @state, @err);
	my $chunk = '';
	foreach my $line (split /\n/, $stdout, -1)
	{
		if ($line =~ /^\@\@ (\d+) (\S+)$/)
		{
			$out[$1] = $chunk;
			$state[$1] = $2;
			$chunk = '';
		}
		else
		{
			$chunk .= $line . "\n";
		}
	}
	$chunk = '';
	foreach my $line (split /\n/, $stderr, -1)
	{
		if ($line =~ /^\@\@ (\d+)$/)
		{
			$err[$1] = $chunk;
			$chunk = '';
		}
		else
		{
			$chunk .= $line . "\n";
		}
	}
	return { out => \@out, state => \@state, err => \@err, rc => $rc,
		timed_out => $timed_out, stderr => $stderr, tail => $chunk };
}

# ---- 2. the pristine file and its structure ----

$node->safe_psql('postgres', 'CHECKPOINT');
# the catalog is not restored with the table's files: each iteration puts the
# table's relfrozenxid and relminmxid back, or a VACUUM that froze pages in an
# earlier iteration (PostgreSQL 16 and later freeze opportunistically) would
# meet the restored tuples' older xmin ("found xmin ... from before
# relfrozenxid")
my $frozen = $node->safe_psql('postgres',
	"SELECT relfrozenxid || ' ' || relminmxid FROM pg_class WHERE oid = 'docs'::regclass");
my ($relfrozenxid, $relminmxid) = split / /, $frozen;
$node->stop('fast');

# binary file contents, undef for a file that does not exist
sub read_file
{
	my ($path) = @_;
	return undef unless -e $path;
	open(my $fh, '<', $path) or die "open $path: $!";
	binmode $fh;
	local $/;
	my $bytes = <$fh>;
	close($fh);
	return $bytes;
}

sub write_file
{
	my ($path, $bytes) = @_;
	if (!defined $bytes)
	{
		unlink($path) or die "unlink $path: $!" if -e $path;
		return;
	}
	open(my $fh, '>', $path) or die "open $path: $!";
	binmode $fh;
	print $fh $bytes;
	close($fh) or die "close $path: $!";
}

# the table's forks (VACUUM writes the free space and visibility maps)
my %heap_files = map { ("$heappath$_" => read_file("$heappath$_")) } ('', '_fsm', '_vm');
ok(defined $heap_files{$heappath}, 'the table file is saved');
my $pristine = read_file($relpath);
my $npages = length($pristine) / $block_size;
is(length($pristine) % $block_size, 0, "the index file holds $npages whole pages");
my $saved = $node->basedir . '/docs_idx.pristine';
copy($relpath, $saved) or die "copy $relpath: $!";

# page layout (host byte order: native pack formats)
my $header = 24;							# MAXALIGN(SizeOfPageHeaderData)
my $special = $block_size - 8;				# 8-byte special space
my $data_per_page = $special - $header;		# GPUIR_PAGE_DATA

sub u32 { return unpack('L', substr($_[0], $_[1], 4)); }
sub u64 { return unpack('Q', substr($_[0], $_[1], 8)); }

my (@ptype, @plower);
for my $p (0 .. $npages - 1)
{
	my $pg = substr($pristine, $p * $block_size, $block_size);
	$plower[$p] = unpack('S', substr($pg, 12, 2));
	my (undef, $flags, $page_id) = unpack('L S S', substr($pg, $special, 8));
	$ptype[$p] = $page_id == 0xFF86 ? $flags : 0;
}
my @stream_pages = grep { $ptype[$_] == 2 } 0 .. $npages - 1;
my @buffer_pages = grep { $ptype[$_] == 3 || $ptype[$_] == 4 } 0 .. $npages - 1;	# chains and lane headers

# the metapage (GpuirMetaPageData at offset 24 of block 0)
my $meta = $header;
is(u32($pristine, $meta), 0x47505552, 'the metapage has the gpuir magic');
my @meta_fields = (		# [name, offset in the struct, size]
	[ 'magic', 0, 4 ], [ 'version', 4, 4 ], [ 'cfg_id', 8, 4 ], [ 'k1', 12, 4 ], [ 'b', 16, 4 ],
	[ 'nsegments', 20, 4 ], [ 'ndocs', 24, 8 ], [ 'total_dl', 32, 8 ], [ 'generation', 40, 8 ],
	[ 'buf_head', 48, 4 ], [ 'buf_tail', 52, 4 ], [ 'buf_tail_used', 56, 4 ],
	[ 'buf_ndocs', 60, 4 ], [ 'buf_nbytes', 64, 8 ], [ 'buf_head_off', 72, 4 ],
	(map { ([ "lane_page[$_]", 80 + 4 * $_, 4 ], [ "lane_consumed[$_]", 112 + 8 * $_, 8 ],
			[ "lane_consumed_rec[$_]", 176 + 8 * $_, 8 ]) } 0 .. 7),
	[ 'has_prior', 304, 4 ], [ 'prior_weight', 308, 4 ],
	[ 'freemap.nfree', $block_size, 4 ]);	# GpuirFreeMapData, block 1
my $nseg = u32($pristine, $meta + 20);
is($nseg, $segments, 'the metapage segment count');
my @stream_names = qw(dict lexemes blockdir payload tids doclens deleted priors);
my @seg_fields = (
	[ 'ndocs', 0, 4 ], [ 'ndeleted', 4, 4 ], [ 'nterms', 8, 4 ], [ 'nblocks', 12, 4 ],
	[ 'npostings', 16, 8 ], [ 'generation', 24, 8 ], [ 'prior_max', 32, 4 ],
	map { ([ "$stream_names[$_].start", 40 + 8 * $_, 4 ], [ "$stream_names[$_].nbytes", 44 + 8 * $_, 4 ]) } 0 .. 7);
my @segs;
for my $s (0 .. $nseg - 1)
{
	my $base = $meta + 312 + 104 * $s;
	my %seg = (base => $base, ndocs => u32($pristine, $base), nterms => u32($pristine, $base + 8),
		nblocks => u32($pristine, $base + 12));
	for my $k (0 .. 6)		# not priors: empty, the index has no prior column
	{
		$seg{streams}[$k] = [ u32($pristine, $base + 40 + 8 * $k), u32($pristine, $base + 44 + 8 * $k) ];
	}
	push @segs, \%seg;
}
my $meta_end = $meta + 312 + 104 * $nseg;

# file offset of byte $off of a stream [start, nbytes]
sub stream_pos
{
	my ($st, $off) = @_;
	return ($st->[0] + int($off / $data_per_page)) * $block_size + $header + $off % $data_per_page;
}

# the insert buffer: the metapage's own chain and the lanes' chains (lane
# header pages hold GpuirLaneData at the page's contents); per chain its
# pages, head offset, committed bytes and the bytes a merge already consumed
my @chains;
my @lane_pages;
{
	my @descs = ([ u32($pristine, $meta + 48), u32($pristine, $meta + 72), u64($pristine, $meta + 64), 0 ]);
	for my $i (0 .. 7)
	{
		my $lp = u32($pristine, $meta + 80 + 4 * $i);
		next if $lp == 0;
		push @lane_pages, [ $i, $lp ];
		my $l = $lp * $block_size + $header;
		my ($start_pos, $consumed) = (u64($pristine, $l + 32), u64($pristine, $meta + 112 + 8 * $i));
		push @descs, [ u32($pristine, $l), u32($pristine, $l + 4), u64($pristine, $l + 16),
			$consumed > $start_pos ? $consumed - $start_pos : 0 ];
	}
	for my $d (@descs)
	{
		my ($blk, $head_off, $nbytes, $skip) = @$d;
		my @pages;
		while (@pages * $data_per_page < $head_off + $nbytes && $nbytes > 0)
		{
			push @pages, $blk;
			$blk = u32($pristine, $blk * $block_size + $special);
		}
		my $bytes = join('', map { substr($pristine, $pages[$_] * $block_size + $header, $data_per_page) } 0 .. $#pages);
		push @chains, { pages => \@pages, head_off => $head_off, nbytes => $nbytes, skip => $skip,
			bytes => substr($bytes, $head_off, $nbytes) };
	}
}
# file position of byte $off of chain $c
sub buf_pos
{
	my ($c, $off) = @_;
	my $ch = $chains[$c];
	my $o = $ch->{head_off} + $off;
	return $ch->{pages}[ int($o / $data_per_page) ] * $block_size + $header + $o % $data_per_page;
}
my @records;		# [chain, offset, [term offsets]] of the live (not consumed) records
for my $c (0 .. $#chains)
{
	my $ch = $chains[$c];
	my $off = $ch->{skip};
	while ($off < $ch->{nbytes})
	{
		my ($reclen, $nterms) = (u32($ch->{bytes}, $off), u32($ch->{bytes}, $off + 16));
		my @terms;
		my $p = $off + 20;
		for (1 .. $nterms)
		{
			push @terms, $p;
			$p += 6 + unpack('S', substr($ch->{bytes}, $p + 4, 2));
		}
		push @records, [ $c, $off, \@terms ];
		$off += $reclen;
	}
}
is(scalar(@records), $buffer_docs, 'the insert buffer records parse');
note("index file: $npages pages: " . scalar(@stream_pages) . ' stream, ' . scalar(@buffer_pages)
	  . " buffer; $nseg segments; " . scalar(@records) . ' buffer records');

# ---- 3. corruptions ----

sub pick { return $_[ int(rand(scalar @_)) ]; }

# interesting values for a field of $size bytes holding $v
sub interesting
{
	my ($v, $size) = @_;
	my $max = $size == 2 ? 0xFFFF : $size == 4 ? 0xFFFFFFFF : 18446744073709551615;
	my $bits = 8 * $size;
	my @c = (0, 1, 2, $max, $max - 1, $v + 1, $v - 1, $v * 2, int($v / 2),
		$v ^ (1 << int(rand($bits < 32 ? $bits : 32))), int(rand(2**32)));
	push @c, 1 << 31, 0x7FFFFFFF, $npages, $npages + 1, 131072, 0x10000 if $size >= 4;
	push @c, 1 << 63, 2**40, $v + 2**32 if $size == 8;
	push @c, 0x8000, 2048, 2049, 8160 if $size == 2;
	my $n = pick(@c);
	return $max if $n < 0;
	return $size < 8 ? $n % ($max + 1) : $max if $n > $max;
	return $n;
}

sub pack_size
{
	my ($n, $size) = @_;
	return pack($size == 2 ? 'S' : $size == 4 ? 'L' : 'Q', $n);
}

# each corruption: a list of edits of $file (a copy of the pristine bytes)
# and a description; returns the description
my @kinds = qw(flip_any flip_meta flip_header flip_special flip_stream overwrite
  truncate copy_page meta_field seg_field dict_field blockdir_field tid_field buffer_field
  flip_buffer zero_page);

sub edit
{
	my ($file, $pos, $new, $desc) = @_;
	my $old = substr($$file, $pos, length($new));
	substr($$file, $pos, length($new)) = $new;
	my $show = length($new) <= 16
	  ? unpack('H*', $old) . ' -> ' . unpack('H*', $new)
	  : length($new) . ' bytes';
	push @$desc, sprintf('block %d offset %d: %s', int($pos / $block_size), $pos % $block_size, $show);
}

sub flip_bits
{
	my ($file, $lo, $hi, $desc) = @_;		# flip 1..3 bits in bytes [lo, hi)
	for (1 .. 1 + int(rand(3)))
	{
		my $pos = $lo + int(rand($hi - $lo));
		edit($file, $pos, chr(ord(substr($$file, $pos, 1)) ^ (1 << int(rand(8)))), $desc);
	}
}

sub set_field
{
	my ($file, $pos, $size, $name, $desc) = @_;
	my $v = $size == 2 ? unpack('S', substr($$file, $pos, 2))
	  : $size == 4 ? u32($$file, $pos) : u64($$file, $pos);
	my $n = interesting($v, $size);
	$n = $v ^ 1 if $n == $v;
	push @$desc, "$name = $n (was $v)";
	edit($file, $pos, pack_size($n, $size), $desc);
}

sub corrupt
{
	my ($kind, $file) = @_;
	my @desc = ($kind);
	my $page = int(rand($npages));
	if ($kind eq 'flip_any')
	{
		flip_bits($file, $page * $block_size, ($page + 1) * $block_size, \@desc);
	}
	elsif ($kind eq 'flip_meta')
	{
		flip_bits($file, $meta, $meta_end, \@desc);
	}
	elsif ($kind eq 'flip_header')
	{
		flip_bits($file, $page * $block_size, $page * $block_size + $header, \@desc);
	}
	elsif ($kind eq 'flip_special')
	{
		flip_bits($file, $page * $block_size + $special, ($page + 1) * $block_size, \@desc);
	}
	elsif ($kind eq 'flip_stream' || $kind eq 'flip_buffer')
	{
		my @from = $kind eq 'flip_stream' ? @stream_pages : @buffer_pages;
		$page = pick(@from);
		my $base = $page * $block_size;
		flip_bits($file, $base + $header, $base + ($plower[$page] > $header ? $plower[$page] : $special), \@desc);
	}
	elsif ($kind eq 'overwrite')
	{
		my $len = rand() < 0.2 ? 1 + int(rand(2048)) : 1 + int(rand(64));
		my $at = $page * $block_size + int(rand($block_size - $len + 1));
		my $fill = pick('00', 'ff', 'random');
		my $bytes = $fill eq 'random' ? join('', map { chr(int(rand(256))) } 1 .. $len) : chr(hex($fill)) x $len;
		push @desc, "$len bytes of $fill";
		edit($file, $at, $bytes, \@desc);
	}
	elsif ($kind eq 'zero_page')
	{
		my $fill = pick("\0", "\xff");
		push @desc, sprintf('block %d all 0x%02x', $page, ord($fill));
		substr($$file, $page * $block_size, $block_size) = $fill x $block_size;
	}
	elsif ($kind eq 'truncate')
	{
		my $keep = int(rand($npages));
		push @desc, "to $keep of $npages pages";
		substr($$file, $keep * $block_size) = '';
	}
	elsif ($kind eq 'copy_page')
	{
		my $dst = int(rand($npages));
		my $src = ($dst + 1 + int(rand($npages - 1))) % $npages;
		push @desc, "block $src over block $dst";
		substr($$file, $dst * $block_size, $block_size) = substr($pristine, $src * $block_size, $block_size);
	}
	elsif ($kind eq 'meta_field')
	{
		my $f = pick(@meta_fields);
		set_field($file, $meta + $f->[1], $f->[2], "meta.$f->[0]", \@desc);
	}
	elsif ($kind eq 'seg_field')
	{
		my $s = int(rand($nseg));
		my $f = pick(@seg_fields);
		set_field($file, $segs[$s]{base} + $f->[1], $f->[2], "segment[$s].$f->[0]", \@desc);
	}
	elsif ($kind eq 'dict_field')
	{
		my $s = int(rand($nseg));
		my $e = int(rand($segs[$s]{nterms}));
		my $f = pick([ 'lexeme_off', 0, 4 ], [ 'lexeme_len', 4, 2 ], [ 'df', 8, 4 ], [ 'npostings', 12, 4 ],
			[ 'first_block', 16, 4 ], [ 'nblocks', 20, 4 ], [ 'max_tf', 24, 4 ], [ 'min_dl', 28, 4 ]);
		set_field($file, stream_pos($segs[$s]{streams}[0], 32 * $e + $f->[1]), $f->[2],
			"segment[$s].dict[$e].$f->[0]", \@desc);
	}
	elsif ($kind eq 'blockdir_field')
	{
		my $s = int(rand($nseg));
		my $b = int(rand($segs[$s]{nblocks}));
		my $f = pick([ 'last_docid', 0, 4 ], [ 'payload_off', 4, 4 ], [ 'impact_tf[0]', 8, 4 ],
			[ 'impact_tf[1]', 12, 4 ], [ 'impact_dl[0]', 16, 4 ], [ 'impact_dl[1]', 20, 4 ]);
		set_field($file, stream_pos($segs[$s]{streams}[2], 24 * $b + $f->[1]), $f->[2],
			"segment[$s].blockdir[$b].$f->[0]", \@desc);
	}
	elsif ($kind eq 'tid_field')
	{
		my $s = int(rand($nseg));
		my $d = int(rand($segs[$s]{ndocs}));
		my $f = pick([ 'bi_hi', 0, 2 ], [ 'bi_lo', 2, 2 ], [ 'posid', 4, 2 ]);
		my $kindof = pick(4, 5, 6);		# tids, doclens or deleted
		if ($kindof == 4)
		{
			set_field($file, stream_pos($segs[$s]{streams}[4], 6 * $d + $f->[1]), $f->[2],
				"segment[$s].tids[$d].$f->[0]", \@desc);
		}
		elsif ($kindof == 5)
		{
			set_field($file, stream_pos($segs[$s]{streams}[5], 4 * $d), 4, "segment[$s].doclens[$d]", \@desc);
		}
		else
		{
			my $pos = stream_pos($segs[$s]{streams}[6], int($d / 8));
			edit($file, $pos, chr(ord(substr($$file, $pos, 1)) ^ (1 << ($d % 8))), \@desc);
			push @desc, "segment[$s].deleted bit of doc $d";
		}
	}
	elsif ($kind eq 'buffer_field')
	{
		my $r = pick(@records);
		my ($c, $roff) = ($r->[0], $r->[1]);
		my @f = ([ 'reclen', 0, 4 ], [ 'bi_hi', 6, 2 ], [ 'bi_lo', 8, 2 ], [ 'posid', 10, 2 ],
			[ 'dl', 12, 4 ], [ 'nterms', 16, 4 ]);
		my $t = pick(@{ $r->[2] });
		push @f, [ 'term.tf', $t - $roff, 4 ], [ 'term.len', $t - $roff + 4, 2 ];
		my $f = pick(@f);
		# a field may straddle two chain pages: edit it byte by byte
		my $off = $roff + $f->[1];
		my $v = unpack($f->[2] == 2 ? 'S' : 'L', substr($chains[$c]{bytes}, $off, $f->[2]));
		my $n = interesting($v, $f->[2]);
		$n = $v ^ 1 if $n == $v;
		push @desc, "buffer record at chain $c byte $roff: $f->[0] = $n (was $v)";
		my $bytes = pack_size($n, $f->[2]);
		edit($file, buf_pos($c, $off + $_), substr($bytes, $_, 1), \@desc) for 0 .. $f->[2] - 1;
	}
	else
	{
		die "unknown corruption $kind";
	}
	return join('; ', @desc);
}

# ---- 4. iterations ----

# crash markers in the server log
my $crash_re = qr/terminated by signal|server process .* (?:was terminated|exited with exit code)|PANIC:|TRAP:|terminating any other active server processes/;

# run_iteration: write $bytes as the index file, start, run the statements,
# check the server is alive, stop; returns the statements' results, the
# server log of the run and whether the server survived
sub run_iteration
{
	my ($bytes) = @_;
	write_file($relpath, $bytes);
	write_file($_, $heap_files{$_}) foreach keys %heap_files;
	my $logstart = -s $node->logfile;
	$node->start;
	$node->safe_psql('postgres', "UPDATE pg_class SET relfrozenxid = '$relfrozenxid', "
		  . "relminmxid = '$relminmxid' WHERE oid = 'docs'::regclass");
	my $r = run_statements();
	my ($rc, $out, $err) = $node->psql('postgres', 'SELECT 1');
	$r->{alive} = ($rc == 0 && $out eq '1');
	if (!$node->stop('fast', fail_ok => 1))
	{
		# the server is gone: bring it through crash recovery to a clean
		# shutdown before the next iteration replaces the file
		$r->{alive} = 0;
		$node->start;
		$node->stop('fast');
	}
	$r->{log} = PostgreSQL::Test::Utils::slurp_file($node->logfile, $logstart);
	return $r;
}

# iteration 0: the pristine file, the expected results
my $base = run_iteration($pristine);
my @expected = @{ $base->{out} };
my $clean = 1;
for my $i (0 .. $#stmts)
{
	next if defined($base->{state}[$i]) && $base->{state}[$i] eq '00000';
	$clean = 0;
	diag("pristine index: statement $i ($stmts[$i]) failed: " . ($base->{err}[$i] // 'did not run'));
}
ok($clean && $base->{alive}, 'pristine index: every statement succeeds');
like($expected[1], qr/^\(\d+,\d+\) [\d.e+-]+\n$/, 'pristine index: queries return rows');
my ($after_vacuum) = grep { /^after vacuum/ } @expected;
like($after_vacuum, qr/^after vacuum\|\d+\|[1-9]\d*\|/, "pristine index: VACUUM marks the deleted rows ($after_vacuum)");
unlike($base->{log}, $crash_re, 'pristine index: no crash in the server log');

my %count = (detected => 0, undetected_same => 0, undetected_wrong => 0, verify_missed => 0,
	failed => 0, run => 0);
my (%by_kind, %errors_seen, @wrong);
for my $it (1 .. $iterations)
{
	next if %only && !$only{$it};
	srand($seed * 1000 + $it);
	my $kind = $kinds[ ($it - 1) % @kinds ];
	my $file = $pristine;
	my $desc = corrupt($kind, \$file);
	my $r = run_iteration($file);
	$count{run}++;

	my (@bad, $detected, $differs);
	for my $i (0 .. $#stmts)
	{
		my $st = $r->{state}[$i];
		if (!defined $st)
		{
			push @bad, "statement $i did not run ($stmts[$i])";
			next;
		}
		if ($st eq '00000')
		{
			$differs = 1 if ($r->{out}[$i] // '') ne ($expected[$i] // '');
			next;
		}
		my ($msg) = ($r->{err}[$i] // '') =~ /^(?:psql:[^\n]*?)?ERROR:\s+(.*)$/m;
		$msg //= $r->{err}[$i] // '';
		$detected //= "statement $i: $msg";
		(my $key = $msg) =~ s/\d+/N/g;
		$errors_seen{"$st $key"}++;
		push @bad, "statement $i ($stmts[$i]): SQLSTATE $st: $r->{err}[$i]"
		  unless $allowed{$st} || ($st eq '55000' && $msg =~ $old_version_re);
	}
	push @bad, 'psql timed out' if $r->{timed_out};
	push @bad, "psql exited with status $r->{rc}: $r->{tail}" if $r->{rc} != 0;
	push @bad, 'the server did not survive (SELECT 1 failed)' unless $r->{alive};
	my @crash = grep { /$crash_re/ } split /\n/, $r->{log};
	push @bad, "server log: @crash" if @crash;

	my $verify_failed = ($r->{state}[0] // '') ne '00000';
	if ($detected)
	{
		$count{detected}++;
		$count{verify_missed}++ unless $verify_failed;
	}
	elsif ($differs)
	{
		$count{undetected_wrong}++;
		push @wrong, "$it ($desc)";
	}
	else
	{
		$count{undetected_same}++;
	}
	$by_kind{$kind}{ $detected ? 'detected' : 'undetected' }++;
	my $outcome = $detected
	  ? 'detected' . ($verify_failed ? '' : " (not by gpuir_verify; first: $detected)")
	  : $differs ? 'undetected, results differ' : 'undetected, same results';
	note("iteration $it: $desc: $outcome") if $verbose;

	ok(!@bad, "iteration $it ($kind): no crash, only XX001/XX002 errors")
	  or do
	{
		$count{failed}++;
		diag("iteration $it (GPUIR_FUZZ_SEED=$seed GPUIR_FUZZ_ONLY=$it): corruption: $desc");
		diag($_) foreach @bad[ 0 .. ($#bad < 4 ? $#bad : 4) ];
		diag('... and ' . (@bad - 5) . ' more') if @bad > 5;
		my @loglines = grep { /ERROR|PANIC|FATAL|TRAP|terminated|LOCATION|STATEMENT|signal/ } split /\n/, $r->{log};
		diag("server log excerpt:\n" . join("\n", @loglines[0 .. ($#loglines < 40 ? $#loglines : 40)]));
	};
}

note(sprintf('%d iterations: %d detected (%d of them not by gpuir_verify), %d undetected with the '
	  . 'pristine results, %d undetected with different results, %d failed',
	  $count{run}, $count{detected}, $count{verify_missed}, $count{undetected_same},
	  $count{undetected_wrong}, $count{failed}));
note("undetected with different results: $_") foreach @wrong;
note(join(', ', map { "$_: " . ($by_kind{$_}{detected} // 0) . '/' . (($by_kind{$_}{detected} // 0) + ($by_kind{$_}{undetected} // 0)) . ' detected' } sort keys %by_kind));
note("error seen $errors_seen{$_} times: $_") foreach sort keys %errors_seen;

# ---- 5. the pristine file again: the test's own sanity ----
my $again = run_iteration($pristine);
ok($again->{alive} && !grep({ !defined($_) || $_ ne '00000' } @{ $again->{state} }),
	'pristine index restored: every statement succeeds, gpuir_verify passes');
is_deeply($again->{out}, \@expected, 'pristine index restored: the same results as before the corruptions');

$node->start;

# ---- 6. a retired extent over its own map page ----
# A VACUUM that moves only the part of a segment that ends the index (as in
# t/001_wal.pl) leaves a map page with retired extents (GpuirSegmentMapRetired
# after the 1,056 bytes of GpuirSegmentMapData: n, then {start, npages}
# pairs).  Extent 0 set over the map page itself must be reported by
# gpuir_verify as XX002, naming the map page and the extent.
$node->safe_psql('postgres', tail_segment_sql() . 'VACUUM sm; CHECKPOINT;');
my $sm_path = $node->data_dir . '/' . $node->safe_psql('postgres', "SELECT pg_relation_filepath('sm_idx')");
$node->stop('fast');

# block blkno of the relation whose first file is $sm_path (a server built
# with a small segment size splits it into files .1, .2, ...): its file and offset
my $seg_blocks = -e "$sm_path.1" ? (-s $sm_path) / $block_size : 0;
sub sm_page_place
{
	my ($blkno) = @_;
	return ($sm_path, $blkno * $block_size) if $seg_blocks == 0;
	my $n = int($blkno / $seg_blocks);
	return ($n == 0 ? $sm_path : "$sm_path.$n", ($blkno % $seg_blocks) * $block_size);
}
sub sm_page_read
{
	my ($file, $off) = sm_page_place($_[0]);
	return substr(read_file($file), $off, $block_size);
}
sub sm_page_write
{
	my ($blkno, $page) = @_;
	my ($file, $off) = sm_page_place($blkno);
	my $bytes = read_file($file);
	substr($bytes, $off, $block_size) = $page;
	write_file($file, $bytes);
}

my $sm_meta = sm_page_read(0);
my ($map_blk, $map_page);
for my $s (0 .. u32($sm_meta, $header + 20) - 1)
{
	my $m = u32($sm_meta, $header + 312 + 104 * $s + 36);	# GpuirSegmentData.map
	next if $m == 0;
	my $page = sm_page_read($m);
	next if u32($page, $header + 1056) == 0;				# GpuirSegmentMapRetired.n
	($map_blk, $map_page) = ($m, $page);
	last;
}
ok(defined $map_blk, 'retired extents: the VACUUM left a segment map page with some');
SKIP:
{
	skip 'no map page with retired extents', 2 unless defined $map_blk;
	substr($map_page, $header + 1056 + 4, 4) = pack('L', $map_blk);	# extent 0 starts at the map page
	sm_page_write($map_blk, $map_page);
	$node->start;
	my ($rc, $out, $err) = $node->psql('postgres', "SELECT gpuir_verify('sm_idx')",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($err, qr/ERROR:\s+XX002: .*segment map page $map_blk: retired extent 0 \(\d+ pages at block $map_blk\) holds the map page itself/,
		'retired extents: one over its own map page is reported (XX002), naming the page and the extent');
	($rc, $out, $err) = $node->psql('postgres', "SELECT count(*) > 0 FROM sm WHERE ctid IN (SELECT ctid FROM gpuir_search('sm_idx', 'w7 x5', 10, 'or'))");
	is($rc, 0, 'retired extents: queries, which do not read them, still run');
}
done_testing();

# t/GpuirTestUtil.pm: setups that several TAP tests of gpuir share.
#
#   use FindBin;
#   use lib $FindBin::RealBin;
#   use GpuirTestUtil qw(tail_segment_sql);
package GpuirTestUtil;

use strict;
use warnings;
use Exporter 'import';

our @EXPORT_OK = qw(tail_segment_sql);

# tail_segment_sql: SQL that creates table sm (24,000 rows, autovacuum off)
# and its gpuir index sm_idx (text_config 'simple', segments of 2,000
# documents), then deletes a quarter of the rows of every other segment, so
# that the caller's VACUUM of sm compacts by moving only the pages of a
# segment that end the index (its other pages stay in holes lower down):
# the segment is copied under the same generation with a new map page that
# retires the pages left (GpuirSegmentMapRetired).  t/001_wal.pl replays it
# on a standby; t/004_corrupt_pages.pl corrupts the retired extents.
sub tail_segment_sql
{
	return q{
	CREATE TABLE sm (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off);
	INSERT INTO sm SELECT i, 'w' || (i % 101) || ' w' || (i % 37) || ' x' || (i % 1009) || ' y' || i
	FROM generate_series(1, 24000) i;
	CREATE INDEX sm_idx ON sm USING gpuir (body) WITH (text_config = 'simple', max_segment_docs = 2000);
	DELETE FROM sm WHERE id % 4 = 0 AND (id / 2000) % 2 = 0;
	};
}

1;

/*-------------------------------------------------------------------------
 *
 * gpuirdicthints.h
 *	  Dictionary-position hints shared by every backend: where a lexeme's
 *	  entry is (or where it would be, when the segment lacks it) in a
 *	  segment's dictionary.
 *
 * A backend remembers the positions it looked up itself (gpuirengine.c,
 * "The dictionary positions of the lexemes looked up"), but a fresh backend
 * starts with none, and each lexeme it meets first costs a binary search
 * of the dictionary: about ten stream reads, each a buffer lookup, lock and
 * page check.  With gpuir in shared_preload_libraries, every search a
 * backend makes also leaves its answer here, and another backend that
 * misses its own cache checks the hint on the pages (term_pos_check: two
 * stream reads when the lexeme is present) before it searches.  A hint is
 * only a guess: one that does not hold is searched as if absent, so a
 * collision, a stale hint or a torn read cannot change an answer, and no
 * lock is taken.
 *
 * The table is direct-mapped: GPUIR_DICT_HINTS atomic 64-bit words in the
 * GPU service's shared memory (gpuirshmem.c), slot hash mod
 * GPUIR_DICT_HINTS, a later hint replacing an earlier one.  A word is
 * tag (24 bits, the hash's top bits, never 0) << 40 | present << 39 |
 * position (< 2^39; a dictionary holds at most 2^32 entries); 0 is empty.
 * The hash covers the segment (its dictionary key: index file, segment
 * generation, stream starts, entry count) and the lexeme.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIRDICTHINTS_H
#define GPUIRDICTHINTS_H

#include "port/atomics.h"

/* words in the table (8 bytes each: 2 MB) */
#define GPUIR_DICT_HINTS		(1 << 18)

/* the table, or NULL without shared_preload_libraries (gpuirshmem.c) */
extern pg_atomic_uint64 *GpuirDictHints;

#define GPUIR_DICT_HINT_POS_BITS	39

static inline uint64
gpuir_dict_hint_tag(uint64 hash)
{
	return ((hash >> 40) | 1) << 40;
}

/*
 * GpuirDictHintGet: the hint of hash (the segment's and lexeme's): true
 * with *pos and *present when the table holds one under hash's tag
 */
static inline bool
GpuirDictHintGet(uint64 hash, int64 *pos, bool *present)
{
	uint64		w;

	if (GpuirDictHints == NULL)
		return false;
	w = pg_atomic_read_u64(&GpuirDictHints[hash % GPUIR_DICT_HINTS]);
	if (w == 0 || (w & ~((UINT64CONST(1) << 40) - 1)) != gpuir_dict_hint_tag(hash))
		return false;
	*present = (w >> GPUIR_DICT_HINT_POS_BITS) & 1;
	*pos = (int64) (w & ((UINT64CONST(1) << GPUIR_DICT_HINT_POS_BITS) - 1));
	return true;
}

/* GpuirDictHintPut: leave hash's hint: pos (0 .. 2^39), present */
static inline void
GpuirDictHintPut(uint64 hash, int64 pos, bool present)
{
	if (GpuirDictHints == NULL || pos < 0 ||
		pos >= (int64) (UINT64CONST(1) << GPUIR_DICT_HINT_POS_BITS))
		return;
	pg_atomic_write_u64(&GpuirDictHints[hash % GPUIR_DICT_HINTS],
						gpuir_dict_hint_tag(hash) |
						((uint64) present << GPUIR_DICT_HINT_POS_BITS) | (uint64) pos);
}

#endif							/* GPUIRDICTHINTS_H */
